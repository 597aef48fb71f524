//! What the experiment crate's tests share.

use experiment::file::{self, CongestionControls, Source};
use std::path::Path;

/// The plan of experiment `text` (named `file`), or the error a user
/// would read.
pub fn plan_of(file: &str, text: &str) -> Result<file::Plan, String> {
    let source = Source { file, text };
    let experiment = file::parse(&source).map_err(|e| e.0)?;
    file::plan(
        &experiment,
        &source,
        file.trim_end_matches(".toml"),
        Path::new("."),
        &CongestionControls::default(),
        &experiment::run::wrappers::run_first,
    )
    .map_err(|e| e.0)
}
