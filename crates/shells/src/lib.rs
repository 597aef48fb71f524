//! Everything between a packet's program and the link model: network
//! namespaces, TUN devices, addresses and NAT, the command's process, the
//! threads that move packets through the models, and what they count.
//! Nothing below this crate knows about any of it.
//!
//! The layers, each standing only on those before it:
//!
//! - `sys`: the operating system's plumbing (devices, namespaces,
//!   addresses, NAT, privileges, the guardian that cleans up after a
//!   `kill -9`, signals, the command's process, kernel settings, how the
//!   packet threads are scheduled).
//! - `accounting`: what is counted and observed (lateness, overload,
//!   the kernel's and the receivers' drops, the status line, TCP_INFO).
//! - `datapath`: the threads that move packets (readers, pumps, the
//!   spin before a departure, forwarding between nested shells).
//! - `control`: the path steered from outside while it runs (the control
//!   socket, its protocol, `control.jsonl`), on `datapath`.
//! - The two topologies built on them: a chain of shells around one
//!   command (`chain`, run by [`run`]) and an experiment's hosts with the
//!   thread that carries their packets ([`dumbbell`]); with what a run is
//!   made of (`spec`), one link as every front end builds it ([`links`])
//!   and the accounting at exit (`summary`), and the host's address put
//!   into the command's arguments (`placeholders`).
//!
//! Other crates use the topologies, the specifications and the few
//! modules re-exported here.

mod accounting;
mod chain;
pub mod control;
mod datapath;
pub mod dumbbell;
pub mod error;
pub mod links;
mod placeholders;
mod spec;
mod summary;
mod sys;

pub use accounting::{receiver_drops, tcp_info};
pub use chain::run;
pub use datapath::pump::{Timing, DEFAULT_SLACK};
pub use error::ShellError;
pub use spec::{DeviceHelpers, DirectionSpec, DnsRoute, Finished, Pcap, RunOptions, ShellSpec};
pub use sys::terminal::terminal_size;
pub use sys::{dns, guardian, netns, privilege};
