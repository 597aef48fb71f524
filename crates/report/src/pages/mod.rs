//! A shell run's report (its charts, `summary.json`, `series.json` and one
//! HTML page) and a comparison of congestion-control schemes.

pub mod figures;
pub mod output;
pub mod schemes;
