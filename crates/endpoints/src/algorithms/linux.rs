//! Unit tests of the arithmetic of Linux 4.19's congestion controls as emu
//! ships them (`bpf/arith/scalable.h` ... `yeah.h`, exported by
//! `bpf/host_linux.c`), one file a control, each against the formulas of
//! the module and of the paper or RFC it implements, written again here.

mod bic;
mod highspeed;
mod htcp;
mod hybla;
mod illinois;
mod nv;
mod scalable;
mod veno;
mod westwood;
mod yeah;
