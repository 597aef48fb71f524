//! The experiment file: what it may say, the checks that need more than
//! one key, the plan a run follows, and the grid a sweep makes.

mod plan;
pub mod sweep;
pub mod units;

pub use plan::*;
