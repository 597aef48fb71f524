//! What a run measured, per flow and per run, and the figures across
//! repetitions: the types and rules are the report's, which reads them
//! back (`report::experiments::results_schema`).

pub use report::experiments::results_schema::*;
