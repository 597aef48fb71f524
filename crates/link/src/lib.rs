//! The path model of one direction of a shell: loss → queue → serialization
//! at a rate or along a trace → propagation delay. It is pure: every call
//! carries the time, so the same model runs in a live shell, in virtual time
//! in tests and benchmarks, and reproducibly under a seed.

mod loss;
mod model;

pub use loss::{Loss, Pattern};
pub use model::{Counters, Link, LinkConfig, Server};
