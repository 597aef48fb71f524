//! What a run measured and what its results directory holds: the figures
//! per flow and per run, counted from the links' logs, merged across
//! directories and compared across schemes.

pub mod flow_paths;
pub mod marks;
pub mod measured;
pub mod merge;
pub mod schemes;
