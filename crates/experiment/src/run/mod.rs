//! Running a plan: the session over a grid's cells, one repetition on
//! real namespaces, the flows' programs, and the one place that spawns,
//! signals and kills them.

pub mod congestion;
pub mod flows;
pub mod runner;
pub mod session;
pub mod system;
pub mod timing;
pub mod wrappers;
