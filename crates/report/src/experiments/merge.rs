//! Results of one experiment gathered from several directories: the cells
//! of a sweep run on different machines (`emu run FILE --cell K` each)
//! land in separate result directories; `emu report DIR...` takes every
//! run found under them (each `result.json` read once, by
//! [`results_dir::find`]) and makes one table per cell, with mean and
//! standard deviation across all the repetitions found, and which cells
//! (or runs) are missing.

use crate::experiments::results_dir::{
    self, cell_dir, cells_in_grid, runs_planned, ExperimentDir, RunDir, LINKS_DIR, RESULT,
};
use crate::experiments::results_schema::{summarize_cell, table, CellSummary, RunResult};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What the directories held, merged.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Merged {
    /// The experiments' names (their directories' names); one, normally.
    pub experiments: Vec<String>,
    /// Cells in the sweep's grid, when a `meta*.json` says so.
    pub cells_in_grid: Option<usize>,
    pub cells: Vec<CellSummary>,
    /// Cells of the grid with no finished run anywhere.
    pub missing: Vec<usize>,
    /// Cells with fewer finished runs than their plan asked for:
    /// (cell, runs found, runs planned).
    pub incomplete: Vec<(usize, usize, u32)>,
    /// Oddities worth a line (a run found twice, other experiments mixed in).
    pub warnings: Vec<String>,
}

/// Reads and merges the results under `dirs`, every experiment found in
/// one table.
pub fn merge(dirs: &[PathBuf]) -> Result<Merged, String> {
    let found = results_dir::find(dirs)?;
    Ok(merge_found(&found.iter().collect::<Vec<_>>()))
}

/// Merges the runs of `experiments`, as found.
pub fn merge_found(experiments: &[&ExperimentDir]) -> Merged {
    let mut runs: BTreeMap<usize, Vec<RunResult>> = BTreeMap::new();
    let mut labels: BTreeMap<usize, String> = BTreeMap::new();
    let mut planned_runs: BTreeMap<usize, u32> = BTreeMap::new();
    let mut names = BTreeSet::new();
    let mut grid: Option<usize> = None;
    let mut warnings = Vec::new();
    let mut seen_runs: BTreeMap<(usize, u32), PathBuf> = BTreeMap::new();
    for (file, run) in in_order(experiments) {
        let result = &run.result;
        // NAME/cell-K/run-R
        if let Some(root) = run.dir.parent().and_then(Path::parent) {
            if let Some(name) = root.file_name() {
                names.insert(name.to_string_lossy().into_owned());
            }
            grid = grid.max(cells_in_grid(root));
            if let Some(n) = runs_planned(&cell_dir(root, result.cell)) {
                planned_runs.insert(result.cell, n);
            }
        }
        if let Some(earlier) = seen_runs.insert((result.cell, result.run), file.clone()) {
            warnings.push(format!(
                "cell {} run {} was found twice ({} and {}); both are counted",
                result.cell,
                result.run,
                earlier.display(),
                file.display()
            ));
        }
        for warning in &result.timing_warnings {
            warnings.push(format!(
                "cell {} run {} did not keep time: {warning}",
                result.cell, result.run
            ));
        }
        labels
            .entry(result.cell)
            .or_insert_with(|| result.cell_label.clone());
        runs.entry(result.cell).or_default().push(result.clone());
    }
    if names.len() > 1 {
        warnings.push(format!(
            "results of different experiments are merged: {}",
            names.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let (cells, missing, incomplete) = tabulate(&runs, &labels, grid, &planned_runs);
    Merged {
        experiments: names.into_iter().collect(),
        cells_in_grid: grid,
        cells,
        missing,
        incomplete,
        warnings,
    }
}

/// The runs of `experiments` that have their links' logs beside them,
/// each once, with its `result.json`'s path: directory by directory as
/// they were given, and in the order of their paths within one.
fn in_order<'a>(experiments: &[&'a ExperimentDir]) -> Vec<(PathBuf, &'a RunDir)> {
    let mut seen = BTreeSet::new();
    let mut ordered = Vec::new();
    for e in experiments {
        for given in &e.dirs {
            let mut under: Vec<(PathBuf, &RunDir)> = e
                .cells
                .iter()
                .flat_map(|c| &c.runs)
                .filter(|r| r.dir.starts_with(given) && r.dir.join(LINKS_DIR).is_dir())
                .map(|r| (r.dir.join(RESULT), r))
                .collect();
            under.sort_by(|a, b| a.0.cmp(&b.0));
            for (file, run) in under {
                let canonical = file.canonicalize().unwrap_or_else(|_| file.clone());
                if seen.insert(canonical) {
                    ordered.push((file, run));
                }
            }
        }
    }
    ordered
}

/// The cells' summaries, the cells missing, and the cells short of runs
/// (cell, runs found, runs planned).
type Tabulated = (Vec<CellSummary>, Vec<usize>, Vec<(usize, usize, u32)>);

/// Per cell, its summary across the runs found; the grid's cells with no
/// run; and the cells with fewer runs than planned.
fn tabulate(
    runs: &BTreeMap<usize, Vec<RunResult>>,
    labels: &BTreeMap<usize, String>,
    grid: Option<usize>,
    planned_runs: &BTreeMap<usize, u32>,
) -> Tabulated {
    let cells: Vec<CellSummary> = runs
        .iter()
        .map(|(cell, runs)| summarize_cell(*cell, &labels[cell], runs))
        .collect();
    let missing = match grid {
        Some(n) => (0..n).filter(|k| !runs.contains_key(k)).collect(),
        None => Vec::new(),
    };
    let incomplete = runs
        .iter()
        .filter_map(|(cell, found)| {
            let planned = *planned_runs.get(cell)?;
            (found.len() < planned as usize).then_some((*cell, found.len(), planned))
        })
        .collect();
    (cells, missing, incomplete)
}

impl Merged {
    /// What the grid lacks, in a line (`cells 2, 5 missing; cell 1 has 1
    /// of 3 runs`), or None if every cell has every run planned.
    pub fn shortfall(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            let noun = if self.missing.len() == 1 {
                "cell"
            } else {
                "cells"
            };
            parts.push(format!("{noun} {} missing", listed(&self.missing)));
        }
        for (cell, found, planned) in &self.incomplete {
            parts.push(format!("cell {cell} has {found} of {planned} runs"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// The tables, then what is missing.
    pub fn text(&self) -> String {
        let mut out = table(&self.cells);
        if let Some(n) = self.cells_in_grid {
            if self.missing.is_empty() {
                out += &format!("all {n} cells of the grid are here\n");
            } else {
                out += &format!(
                    "missing cells ({} of {n}): {}\n",
                    self.missing.len(),
                    listed(&self.missing)
                );
            }
        }
        for (cell, found, planned) in &self.incomplete {
            out += &format!("cell {cell}: {found} of {planned} runs finished\n");
        }
        out
    }
}

/// Cell numbers in order as a list, a run of consecutive ones as a range:
/// `1, 3, 5-119`. A study's partial grid misses hundreds of cells in a
/// few runs; the list stays a line.
fn listed(cells: &[usize]) -> String {
    let mut sorted = cells.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < sorted.len() {
        let first = sorted[k];
        let mut last = first;
        while k + 1 < sorted.len() && sorted[k + 1] == last + 1 {
            k += 1;
            last = sorted[k];
        }
        parts.push(if last == first {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
        k += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_cells_are_listed_with_their_runs_as_ranges() {
        assert_eq!(listed(&[]), "");
        assert_eq!(listed(&[4]), "4");
        assert_eq!(listed(&[1, 3]), "1, 3");
        assert_eq!(listed(&[7, 0, 1, 2, 5, 6, 9]), "0-2, 5-7, 9");
        let study: Vec<usize> = (0..120).chain(125..140).collect();
        assert_eq!(listed(&study), "0-119, 125-139");
    }
    use crate::experiments::results_dir::is_result_dir;
    use crate::experiments::results_schema::FlowResult;

    fn write_run(root: &Path, cell: usize, run: u32, goodput: f64) {
        let dir = root.join(format!("cell-{cell}/run-{run}"));
        std::fs::create_dir_all(dir.join("links")).unwrap();
        let result = RunResult {
            cell,
            cell_label: format!("bottleneck.rate={cell}0mbit"),
            run,
            seed: 1 + run as u64,
            flows: vec![FlowResult {
                name: "bulk".into(),
                goodput_bps: Some(goodput),
                ..FlowResult::default()
            }],
            accounting_ok: true,
            ..RunResult::default()
        };
        std::fs::write(
            dir.join("result.json"),
            serde_json::to_string(&result).unwrap(),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("cell-{cell}/plan.json")),
            r#"{"runs": 3}"#,
        )
        .unwrap();
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("emu-merge-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// Two machines ran cells 0 and 2 of a grid of 4 (cell 0's three runs
    /// split between them): one table per cell over every run found, and
    /// cells 1 and 3 named as missing.
    #[test]
    fn cells_from_two_machines_merge_and_the_missing_are_named() {
        let base = temp("two");
        let (a, b) = (base.join("a/sweep"), base.join("b/sweep"));
        for (root, cell) in [(&a, 0), (&b, 2)] {
            std::fs::create_dir_all(root).unwrap();
            std::fs::write(
                root.join(format!("meta-cell-{cell}.json")),
                r#"{"cells_in_grid": 4}"#,
            )
            .unwrap();
        }
        write_run(&a, 0, 0, 10e6);
        write_run(&a, 0, 1, 20e6);
        write_run(&b, 0, 2, 30e6);
        for run in 0..3 {
            write_run(&b, 2, run, 5e6);
        }
        // A parent directory is searched too, and a directory given twice
        // counts once.
        let merged = merge(&[base.join("a"), b.clone(), b.clone()]).unwrap();
        assert_eq!(merged.experiments, vec!["sweep".to_string()]);
        assert_eq!(merged.cells_in_grid, Some(4));
        assert_eq!(merged.missing, vec![1, 3]);
        assert!(merged.incomplete.is_empty(), "{:?}", merged.incomplete);
        assert_eq!(merged.cells.len(), 2);
        let goodput = merged.cells[0].flows[0].goodput_bps.unwrap();
        assert_eq!((goodput.mean, goodput.n), (20e6, 3));
        assert!((goodput.stddev - 10e6).abs() < 1e-3);
        let text = merged.text();
        assert!(text.contains("20.00 ± 10.00"), "{text}");
        assert!(text.contains("missing cells (2 of 4): 1, 3"), "{text}");
        assert_eq!(merged.shortfall().unwrap(), "cells 1, 3 missing");
        assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_short_cell_and_a_directory_without_results_are_reported() {
        let base = temp("short");
        let root = base.join("x");
        write_run(&root, 0, 0, 1e6);
        let merged = merge(std::slice::from_ref(&root)).unwrap();
        assert_eq!(merged.incomplete, vec![(0, 1, 3)]);
        assert!(merged.text().contains("cell 0: 1 of 3 runs finished"));
        assert_eq!(merged.shortfall().unwrap(), "cell 0 has 1 of 3 runs");
        let empty = base.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let error = merge(&[empty]).unwrap_err();
        assert!(error.contains("no results of emu run"), "{error}");
        assert!(!is_result_dir(&base.join("empty")));
        assert!(is_result_dir(&base));
        let _ = std::fs::remove_dir_all(&base);
    }
}
