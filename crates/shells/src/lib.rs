//! Everything that touches the operating system: network namespaces, TUN
//! devices, addresses and NAT, the command's process, and the threads that
//! pump packets through the link model. Nothing below this crate knows
//! about any of it.

pub mod addressing;
mod chain;
pub mod command;
mod devices;
mod environment;
pub mod error;
mod guardian;
pub mod lateness;
pub mod nat;
pub mod netns;
pub mod privilege;
pub mod pump;
mod signals;
mod spec;
mod summary;
pub mod tun;

pub use chain::run;
pub use error::ShellError;
pub use pump::Timing;
pub use spec::{DirectionSpec, Finished, RunOptions, ShellSpec};
