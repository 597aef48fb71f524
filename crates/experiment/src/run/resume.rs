//! `emu run --resume`: an interrupted run of a file or a study goes on
//! where it stopped. A repetition counts as done when its `result.json`
//! is there and reads back (the file is written only once the repetition
//! has ended), and its cell's resolved experiment (`experiment.toml`,
//! without its header of comments) is the one the cell has now; else it
//! runs again, so results of an edited experiment are never mixed with
//! new ones. A repetition's directory without a result (stopped mid-run)
//! is removed and run again.

use crate::results::measured::RunResult;
use report::experiments::results_dir;
use std::path::Path;

/// The resolved experiment of a cell as `experiment.toml` holds it,
/// comment lines left out.
fn body(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `cell_dir` holds the results of a cell whose resolved
/// experiment is `resolved` (as the cell's `experiment.toml` writes it).
pub(crate) fn same_cell(cell_dir: &Path, resolved: &str) -> bool {
    std::fs::read_to_string(cell_dir.join(results_dir::EXPERIMENT))
        .is_ok_and(|kept| body(&kept) == body(resolved))
}

/// The result of a repetition that ended, if `run_dir` holds one.
pub(crate) fn kept_result(run_dir: &Path) -> Option<RunResult> {
    let text = std::fs::read_to_string(run_dir.join(results_dir::RESULT)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Says how many runs of cell `cell` an earlier attempt left that count.
pub(super) fn say_kept(cell: usize, kept: u32, runs: u32) {
    if kept > 0 {
        eprintln!(
            "emu run: cell {cell}: {kept} of {runs} runs kept from an earlier attempt (--resume)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_ended_repetition_of_the_same_cell_counts_as_done() {
        let dir = std::env::temp_dir().join(format!("emu-resume-{}", std::process::id()));
        let run = dir.join("run-0");
        std::fs::create_dir_all(&run).unwrap();
        let resolved = "[run]\nduration = 30000000000\n";
        std::fs::write(
            dir.join("experiment.toml"),
            format!("# cell 0\n# emu x\n{resolved}"),
        )
        .unwrap();
        assert!(same_cell(&dir, resolved), "its header of comments aside");
        assert!(!same_cell(&dir, "[run]\nduration = 60000000000\n"));
        assert!(!same_cell(&dir.join("nowhere"), resolved));
        assert!(kept_result(&run).is_none(), "stopped mid-run: no result");
        std::fs::write(run.join("result.json"), "{\"cell\": 0").unwrap();
        assert!(kept_result(&run).is_none(), "a result cut short is not one");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
