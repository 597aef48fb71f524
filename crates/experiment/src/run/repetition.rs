//! What names one repetition of one cell, and how a run fails.

use std::path::Path;

/// Which run this is, for the progress line and the results.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub cell: usize,
    pub cell_label: String,
    /// The cell's swept keys and values.
    pub sweep: Vec<(String, String)>,
    pub run: u32,
    pub runs: u32,
    pub seed: u64,
    /// The session's cells done so far and all of them (a study's, for
    /// `emu run DIR`).
    pub cells_done: usize,
    pub cells_all: usize,
    /// Seconds the runs still to come after this one will take
    /// (estimated: see [`super::progress`]).
    pub later_seconds: f64,
}

/// Why a run did not finish.
#[derive(Debug)]
pub enum RunError {
    /// Ctrl-C or SIGTERM: the run stopped early; its results are partial.
    Interrupted,
    Failed(String),
}

impl From<shells::ShellError> for RunError {
    fn from(e: shells::ShellError) -> RunError {
        RunError::Failed(e.to_string())
    }
}

pub(super) fn io_error(doing: &str, path: &Path) -> impl FnOnce(std::io::Error) -> RunError {
    let what = format!("{doing} {}", path.display());
    move |e| RunError::Failed(format!("{what}: {e}"))
}
