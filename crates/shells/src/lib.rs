//! Everything that touches the operating system: network namespaces, TUN
//! devices, addresses and NAT, the command's process, and the threads that
//! pump packets through the link model. Nothing below this crate knows
//! about any of it.

pub mod addressing;
mod chain;
pub mod command;
mod devices;
mod direction;
pub mod dumbbell;
mod environment;
pub mod error;
mod forwarding;
pub mod guardian;
mod input;
pub mod kernel_drops;
pub mod lateness;
pub mod links;
pub mod live;
pub mod nat;
pub mod netns;
pub mod outside;
pub mod overload;
pub mod privilege;
pub mod pump;
mod reader;
pub mod receiver_drops;
pub mod rootless;
mod signals;
mod spec;
mod spin;
mod status;
mod summary;
pub mod tcp_info;
pub mod tcp_sampler;
pub mod tun;
mod wire;

pub use chain::run;
pub use error::ShellError;
pub use pump::{Timing, DEFAULT_SLACK};
pub use spec::{DirectionSpec, Finished, Pcap, RunOptions, ShellSpec};
