//! What a run measured and what its results directory holds: the figures
//! per flow and per run, counted from the links' logs, and compared
//! across schemes. Their types, and their merging across directories,
//! are the report's (`report::experiments::{results_schema, merge}`).

pub mod flow_paths;
pub mod marks;
pub mod measured;
pub mod plan_file;
pub mod schemes;
