//! The path model of one direction of a shell: loss → queue → serialization
//! at a rate (or htb's shaping of it), along a trace or along a rate
//! schedule → propagation delay,
//! with the dynamics of real paths (jitter, delay schedules, bursty loss,
//! duplication, corruption, outages, aggregation, netem's slots). It is pure: every call
//! carries the time, so the same model runs in a live shell, in virtual time
//! in tests and benchmarks, and reproducibly under a seed.

mod capacity;
mod changes;
pub mod direction;
pub mod distribution;
pub mod jitter;
mod loss;
mod mangle;
mod model;
pub mod options;
pub mod outage;
pub mod propagation;
pub mod queue_steps;
pub mod schedule;
mod server;
pub mod shaper;
pub mod slot;
pub mod steering;

pub use distribution::{Distribution, DistributionError};
pub use jitter::JitterSpec;
pub use loss::{Loss, Pattern};
pub use model::{Counters, Dynamics, Link, LinkConfig, Server};
pub use outage::Outages;
pub use propagation::DelayDynamics;
pub use queue_steps::QueueStep;
pub use schedule::Schedule;
pub use shaper::ShaperSpec;
pub use slot::{SlotOpening, SlotSpec};
pub use steering::{Setting, Settings, SojournWindow};
