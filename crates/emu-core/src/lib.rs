//! Shared vocabulary of emu: nanosecond time, link rates and byte sizes as
//! researchers write them, packets with views of their IP headers, the
//! single-producer single-consumer rings that join threads on the data path,
//! the per-packet log record with its writer and reader, pcapng captures,
//! and delivery traces (the other file format) with the one walker of their
//! opportunities.
//!
//! Nothing here touches a device, a namespace or a process; everything above
//! (`aqm`, `link`, `shells`, `report`) builds on these types.

pub mod capture;
pub mod error;
pub mod flow;
pub mod log;
pub mod offload;
pub mod output;
pub mod packet;
pub mod progress;
pub mod rate;
pub mod ring;
pub mod size;
pub mod time;
pub mod trace;

pub use error::ParseError;
pub use packet::{Ecn, Packet};
pub use rate::Rate;
pub use time::Nanos;
