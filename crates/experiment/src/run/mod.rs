//! Running a plan: the session over a grid's cells, one repetition on
//! real namespaces, the flows' programs, and the one place that spawns,
//! signals and kills them.

mod accounting;
pub mod congestion;
pub mod control;
pub mod flows;
pub mod links;
mod measure;
pub mod runner;
pub mod session;
pub mod system;
pub mod timing;
pub mod wrappers;
