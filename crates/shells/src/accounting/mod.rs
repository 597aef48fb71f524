//! What is counted and observed while packets move: how late each was
//! written, overload, the drops around emu (the kernel's on the way in,
//! the receiving sockets' past the path), the live status line, and the
//! kernel's TCP_INFO of the programs' connections.

pub mod kernel_drops;
pub mod lateness;
pub mod live;
pub mod overload;
pub mod receiver_drops;
pub mod status;
pub mod tcp_info;
pub mod tcp_sampler;
