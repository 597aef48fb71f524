//! Finds what `emu run` wrote: experiments (`NAME/meta.json` and
//! `NAME/cell-K/run-R/result.json`), their cells and runs, and for a
//! study (`emu run DIR`) the several experiments under one directory.
//!
//! Only the small JSON files are read here; the packet logs are read by
//! [`crate::bottleneck_series`] when a page is drawn.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How deep under a given directory experiments are looked for: a study's
/// output holds `STUDY/EXPERIMENT/cell-K/`, a parent of studies one more.
const MAX_DEPTH: usize = 3;

/// One experiment's result directory (or, for cells run on several
/// machines, its directories).
#[derive(Debug, Clone)]
pub struct ExperimentDir {
    /// The directory's name: the experiment's.
    pub name: String,
    pub dirs: Vec<PathBuf>,
    /// From `meta.json`: the scenario this experiment is a variant of, and
    /// which variant (a study pairs the variants of each scenario).
    pub scenario: Option<String>,
    pub variant: Option<String>,
    pub cells: Vec<CellDir>,
}

/// One cell of the grid, with its runs.
#[derive(Debug, Clone)]
pub struct CellDir {
    pub cell: usize,
    /// The sweep's assignments, `bottleneck.queue=pie hosts.a.delay=10ms`
    /// (`(no sweep)` without one).
    pub label: String,
    pub dir: PathBuf,
    /// The bottlenecks' queue disciplines, from `plan.json` (`dualpi2`).
    pub queues: Vec<String>,
    /// The bottlenecks' rates in bit/s, uplink (forward) and downlink
    /// (reverse); None for a trace or a schedule.
    pub rates: Vec<[Option<f64>; 2]>,
    pub runs: Vec<RunDir>,
}

/// One repetition: its directory and its `result.json`.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub run: u64,
    pub dir: PathBuf,
    pub result: serde_json::Value,
}

impl CellDir {
    /// The sweep's assignments as (key, value) pairs; none without a sweep.
    pub fn axes(&self) -> Vec<(String, String)> {
        self.label
            .split_whitespace()
            .filter_map(|a| a.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether `dir` is an experiment's directory: it has a `cell-K/` with a
/// run in it.
fn is_experiment(dir: &Path) -> bool {
    cell_dirs(dir).iter().any(|(_, d)| !run_dirs(d).is_empty())
}

fn numbered(dir: &Path, prefix: &str) -> Vec<(u64, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let k = name.strip_prefix(prefix)?.parse().ok()?;
            Some((k, e.path()))
        })
        .collect();
    found.sort();
    found
}

fn cell_dirs(dir: &Path) -> Vec<(u64, PathBuf)> {
    numbered(dir, "cell-")
}

/// The runs of a cell that finished: those with a `result.json`.
fn run_dirs(cell: &Path) -> Vec<(u64, PathBuf)> {
    numbered(cell, "run-")
        .into_iter()
        .filter(|(_, d)| d.join("result.json").is_file())
        .collect()
}

/// Every experiment directory under (or at) `path`, sorted.
fn experiment_dirs(path: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![(path.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        if is_experiment(&dir) {
            found.push(dir);
            continue;
        }
        if depth == MAX_DEPTH {
            continue;
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let p = entry.path();
                let name = entry.file_name();
                if p.is_dir() && name != "links" && name != "report" {
                    stack.push((p, depth + 1));
                }
            }
        }
    }
    found.sort();
    found
}

/// The bottlenecks of a cell's `plan.json`: each one's queue discipline
/// (`bottlenecks[].forward.queue`, a name or an object named by its
/// `discipline`, `kind` or `type` field or its one key) and its rates
/// (`server`: `50000000 bit/s`).
fn bottlenecks(cell: &Path) -> (Vec<String>, Vec<[Option<f64>; 2]>) {
    let plan = read_json(&cell.join("plan.json")).unwrap_or_default();
    let all = plan["bottlenecks"].as_array().cloned().unwrap_or_default();
    let rate = |d: &serde_json::Value| {
        d["server"]
            .as_str()?
            .strip_suffix(" bit/s")?
            .trim()
            .parse::<f64>()
            .ok()
    };
    let queues = all
        .iter()
        .map(|b| queue_name(&b["forward"]["queue"]))
        .collect();
    let rates = all
        .iter()
        .map(|b| [rate(&b["forward"]), rate(&b["reverse"])])
        .collect();
    (queues, rates)
}

/// A queue's discipline as serialized: `"dualpi2"`, `{"dualpi2": {...}}`,
/// or `{"kind": "dualpi2", ...}`.
pub fn queue_name(queue: &serde_json::Value) -> String {
    match queue {
        serde_json::Value::String(s) => s.split_whitespace().next().unwrap_or("").to_string(),
        serde_json::Value::Object(map) => {
            for key in ["discipline", "kind", "type", "name"] {
                if let Some(s) = map.get(key).and_then(|v| v.as_str()) {
                    return s.to_string();
                }
            }
            map.keys().next().cloned().unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// The experiments under `paths`: those with one name (cells run on
/// several machines) come together, their cells from every directory.
pub fn find(paths: &[PathBuf]) -> Result<Vec<ExperimentDir>, String> {
    let mut by_name: BTreeMap<String, ExperimentDir> = BTreeMap::new();
    for path in paths {
        let dirs = experiment_dirs(path);
        if dirs.is_empty() {
            return Err(format!(
                "{}: no results of emu run here (cell-K/run-R/result.json); give the \
                 directory emu run wrote (OUT/NAME/, or OUT/STUDY/ for a study)",
                path.display()
            ));
        }
        for dir in dirs {
            let name = dir
                .file_name()
                .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
            let meta = read_json(&dir.join("meta.json")).unwrap_or_default();
            let text = |key: &str| meta[key].as_str().map(str::to_string);
            let entry = by_name
                .entry(name.clone())
                .or_insert_with(|| ExperimentDir {
                    name,
                    dirs: Vec::new(),
                    scenario: None,
                    variant: None,
                    cells: Vec::new(),
                });
            if entry.dirs.contains(&dir) {
                continue;
            }
            entry.scenario = entry.scenario.take().or_else(|| text("scenario"));
            entry.variant = entry.variant.take().or_else(|| text("variant"));
            add_cells(entry, &dir);
            entry.dirs.push(dir);
        }
    }
    let mut experiments: Vec<ExperimentDir> = by_name.into_values().collect();
    for e in &mut experiments {
        e.cells.sort_by_key(|c| c.cell);
    }
    Ok(experiments)
}

fn add_cells(experiment: &mut ExperimentDir, dir: &Path) {
    for (k, cell_dir) in cell_dirs(dir) {
        let runs: Vec<RunDir> = run_dirs(&cell_dir)
            .into_iter()
            .filter_map(|(run, dir)| {
                let result = read_json(&dir.join("result.json"))?;
                Some(RunDir { run, dir, result })
            })
            .collect();
        if runs.is_empty() {
            continue;
        }
        let label = runs[0].result["cell_label"]
            .as_str()
            .unwrap_or("(no sweep)")
            .to_string();
        match experiment.cells.iter_mut().find(|c| c.cell == k as usize) {
            Some(cell) => {
                cell.runs.extend(runs);
                cell.runs.sort_by_key(|r| r.run);
            }
            None => {
                let (queues, rates) = bottlenecks(&cell_dir);
                experiment.cells.push(CellDir {
                    cell: k as usize,
                    label,
                    queues,
                    rates,
                    dir: cell_dir,
                    runs,
                })
            }
        }
    }
}
