//! Logs read and written: emu's binary logs and Mahimahi's text logs into
//! the analysis's events, Mahimahi's format written from emu's records,
//! TCP_INFO samples matched to flows, and one run's files tied together.

pub mod emu_reader;
pub mod mahimahi_reader;
pub mod mahimahi_writer;
pub mod run;
pub mod tcp;
