//! Everything that touches the operating system: network namespaces, TUN
//! devices, addresses and NAT, the command's process, and the threads that
//! pump packets through the link model. Nothing below this crate knows
//! about any of it.

pub mod addressing;
mod chain;
pub mod command;
pub mod error;
mod guardian;
pub mod lateness;
pub mod nat;
pub mod netns;
pub mod outside;
pub mod privilege;
pub mod pump;
pub mod rootless;
pub mod tun;

pub use chain::{run, DirectionSpec, Pcap, RunOptions, ShellSpec};
pub use error::ShellError;
pub use pump::Timing;
