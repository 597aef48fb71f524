//! Finds what `emu run` wrote: experiments (`NAME/meta.json` and
//! `NAME/cell-K/run-R/result.json`), their cells and runs, and for a
//! study (`emu run DIR`) the several experiments under one directory.
//!
//! Only the small JSON files are read here; the packet logs are read by
//! [`crate::experiments::bottleneck_series`] when a page is drawn.

use crate::experiments::results_schema::{Assignments, Meta, PlanFile, RunResult};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The files of a results directory, by name. `emu run` writes them by
/// these names and every reader finds them by them:
/// `NAME/meta.json` (or `meta-cell-K.json`, see [`meta_file`]) and
/// `NAME/summary.json`; per cell `cell-K/experiment.toml`, `plan.json`
/// and `summary.json`; per run `run-R/result.json`, `links.json`,
/// `clock.json`, with the links' logs in `links/`, the flows' files in
/// `flows/` and their TCP_INFO samples in `tcp/`.
pub const RESULT: &str = "result.json";
pub const LINKS: &str = "links.json";
pub const CLOCK: &str = "clock.json";
pub const PLAN: &str = "plan.json";
pub const EXPERIMENT: &str = "experiment.toml";
pub const SUMMARY: &str = "summary.json";
pub const LINKS_DIR: &str = "links";
pub const FLOWS_DIR: &str = "flows";
pub const TCP_DIR: &str = "tcp";
/// A Pantheon comparison's `NAME/schemes.json`, with its page and figure.
pub const SCHEMES: &str = "schemes.json";
pub const SCHEMES_PAGE: &str = "schemes.html";
pub const SCHEMES_FIGURE: &str = "schemes.svg";
/// What `emu report` writes into a results directory: `NAME/report/`.
pub const REPORT_DIR: &str = "report";
/// A bottleneck's logs in a run: `links/bottleneck-B/`.
pub const BOTTLENECK_PREFIX: &str = "bottleneck-";
/// The extension of emu's packet logs.
pub const LOG_EXTENSION: &str = "emulog";
const CELL_PREFIX: &str = "cell-";
const RUN_PREFIX: &str = "run-";
const META_PREFIX: &str = "meta";
const JSON_SUFFIX: &str = ".json";

/// Where the links of a run keep their logs: `links/side-HOST/` for a
/// host's side link, `links/bottleneck-B/` for a bottleneck, each in one
/// file (`0-link.emulog`).
pub fn link_log(run_dir: &Path, link: &str) -> PathBuf {
    run_dir
        .join(LINKS_DIR)
        .join(link)
        .join(format!("0-link.{LOG_EXTENSION}"))
}

/// The name of host `host`'s side link: `side-HOST`.
pub fn side_link(host: &str) -> String {
    format!("side-{host}")
}

/// The name of bottleneck `b`'s link: `bottleneck-B`.
pub fn bottleneck_link(b: usize) -> String {
    format!("{BOTTLENECK_PREFIX}{b}")
}

/// A file of a flow's programs in a run: `flows/FLOW.SUFFIX` (`bulk.json`,
/// `bulk.err`, `bulk.server.out`, `copa.sender.out`).
pub fn flow_file(run_dir: &Path, flow: &str, suffix: &str) -> PathBuf {
    run_dir.join(FLOWS_DIR).join(format!("{flow}.{suffix}"))
}

/// A flow's TCP_INFO samples in a run: `tcp/FLOW.csv`.
pub fn tcp_samples(run_dir: &Path, flow: &str) -> PathBuf {
    run_dir.join(TCP_DIR).join(format!("{flow}.csv"))
}

/// The experiment's `meta.json`, or `meta-cell-K.json` for a run of one
/// cell (`--cell K`: cells run on several machines, merged afterwards).
pub fn meta_file(cell: Option<usize>) -> String {
    match cell {
        Some(k) => format!("{META_PREFIX}-{CELL_PREFIX}{k}{JSON_SUFFIX}"),
        None => format!("{META_PREFIX}{JSON_SUFFIX}"),
    }
}

/// How deep under a given directory experiments are looked for: a study's
/// output holds `STUDY/EXPERIMENT/cell-K/`, a parent of studies one more.
const MAX_DEPTH: usize = 3;

/// One experiment's result directory (or, for cells run on several
/// machines, its directories).
#[derive(Debug, Clone)]
pub struct ExperimentDir {
    /// The directory's name: the experiment's.
    pub name: String,
    /// Where its results were found: its directories, or the cells' or
    /// runs' that were given.
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
    /// The sweep's assignments as its first run's result records them
    /// (empty in results written before they were recorded).
    pub sweep: Assignments,
    pub dir: PathBuf,
    /// The bottlenecks' queue disciplines, from `plan.json` (`dualpi2`).
    pub queues: Vec<String>,
    /// The bottlenecks' rates in bit/s, uplink (forward) and downlink
    /// (reverse): the lower of the link's rate and its queue's shaper
    /// (cake's `bandwidth`); None for a trace or a schedule without a
    /// shaper.
    pub rates: Vec<[Option<f64>; 2]>,
    pub runs: Vec<RunDir>,
}

/// One repetition: its directory and its `result.json`, read once.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub run: u64,
    pub dir: PathBuf,
    pub result: RunResult,
}

impl CellDir {
    /// The sweep's assignments as (key, value) pairs; none without a sweep.
    /// Results written before the assignments were recorded have them
    /// from the label, where a value may hold spaces
    /// (`bottleneck.queue=pfifo limit 50`): a word starts a new assignment
    /// only as `KEY=` with a dotted key, as every swept key is.
    pub fn axes(&self) -> Vec<(String, String)> {
        if !self.sweep.is_empty() {
            return self.sweep.0.clone();
        }
        let mut axes: Vec<(String, String)> = Vec::new();
        for word in self.label.split_whitespace() {
            let starts = word.split_once('=').filter(|(key, _)| {
                key.contains('.')
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            });
            match (starts, axes.last_mut()) {
                (Some((key, value)), _) => axes.push((key.to_string(), value.to_string())),
                (None, Some((_, value))) => {
                    value.push(' ');
                    value.push_str(word);
                }
                (None, None) => {}
            }
        }
        axes
    }
}

/// How deep under a given directory results are looked for: the
/// experiment's directory holds `cell-K/run-R/result.json`, its parent
/// (`runs/`) one level more.
const RESULTS_DEPTH: usize = 4;

/// Where a run of a cell goes: `OUT/cell-K/run-R`.
pub fn run_dir(out: &Path, cell: usize, run: u32) -> PathBuf {
    cell_dir(out, cell).join(format!("{RUN_PREFIX}{run}"))
}

/// Where a cell's runs and plan go: `OUT/cell-K`.
pub fn cell_dir(out: &Path, cell: usize) -> PathBuf {
    out.join(format!("{CELL_PREFIX}{cell}"))
}

/// The `result.json` of every finished run of the cell in `cell_dir`, in
/// run order.
pub fn cell_results(cell_dir: &Path) -> Vec<PathBuf> {
    run_dirs(cell_dir)
        .into_iter()
        .map(|(_, dir)| dir.join(RESULT))
        .collect()
}

/// True if `path` is (or holds, a few levels down) a result directory of
/// `emu run`: a `result.json` next to `links/`.
pub fn is_result_dir(path: &Path) -> bool {
    path.is_dir() && !find_results(path).is_empty()
}

/// Every run's `result.json` under `dir`, sorted.
pub fn find_results(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if depth < RESULTS_DEPTH && path.file_name().is_none_or(|n| n != LINKS_DIR) {
                    stack.push((path, depth + 1));
                }
            } else if path.file_name().is_some_and(|n| n == RESULT) && dir.join(LINKS_DIR).is_dir()
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The experiment directory a run's result is in: `NAME/cell-K/run-R/result.json`.
pub fn experiment_dir(result: &Path) -> Option<&Path> {
    result.parent()?.parent()?.parent()
}

/// The grid's size as a `meta.json` or `meta-cell-K.json` records it.
pub fn cells_in_grid(root: &Path) -> Option<usize> {
    metas(root).iter().filter_map(|m| m.cells_in_grid).max()
}

/// The runs a cell's plan asked for (`cell-K/plan.json`).
pub fn runs_planned(cell_dir: &Path) -> Option<u32> {
    read_json::<PlanFile>(&cell_dir.join(PLAN))?.runs
}

/// A cell's `plan.json` as the report reads it (empty if there is none).
pub fn plan(cell_dir: &Path) -> PlanFile {
    read_json(&cell_dir.join(PLAN)).unwrap_or_default()
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// One run's `result.json`, or why it cannot be read.
pub fn read_result(file: &Path) -> Result<RunResult, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not a run's result: {e}", file.display()))
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
    numbered(dir, CELL_PREFIX)
}

/// The runs of a cell that finished: those with a `result.json`.
fn run_dirs(cell: &Path) -> Vec<(u64, PathBuf)> {
    numbered(cell, RUN_PREFIX)
        .into_iter()
        .filter(|(_, d)| d.join(RESULT).is_file())
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
                if p.is_dir() && name != LINKS_DIR && name != REPORT_DIR {
                    stack.push((p, depth + 1));
                }
            }
        }
    }
    found.sort();
    found
}

/// The bottlenecks of a cell's `plan.json`: each one's queue discipline
/// (`bottlenecks[].forward.queue`) and its rates (`server`: `50000000
/// bit/s`, or the queue's `bandwidth` in bytes per second where lower or
/// the link has none).
fn bottlenecks(cell: &Path) -> (Vec<String>, Vec<[Option<f64>; 2]>) {
    let plan = plan(cell);
    let queues = plan
        .bottlenecks
        .iter()
        .map(|b| queue_name(&b.forward.queue))
        .collect();
    let rates = plan
        .bottlenecks
        .iter()
        .map(|b| [b.forward.rate(), b.reverse.rate()])
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

/// An experiment's `meta.json`, or the `meta-cell-K.json` each machine
/// that ran some of its cells (`--cell K`) wrote, in order of name.
fn metas(root: &Path) -> Vec<Meta> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(META_PREFIX) && n.ends_with(JSON_SUFFIX))
        })
        .collect();
    files.sort();
    files.iter().filter_map(|f| read_json(f)).collect()
}

/// Part of an experiment: its root, and the one cell (and run) a path
/// named, if it named one.
struct Part {
    root: PathBuf,
    /// What was given: the root, or a cell's or a run's directory.
    given: PathBuf,
    cell: Option<u64>,
    run: Option<u64>,
}

/// `PREFIX-N` of a directory's name.
fn number(dir: &Path, prefix: &str) -> Option<u64> {
    dir.file_name()?
        .to_str()?
        .strip_prefix(prefix)?
        .parse()
        .ok()
}

/// What `path` holds: experiments (a study, an experiment, a parent of
/// either), or one cell (`NAME/cell-K`) or one run (`NAME/cell-K/run-R`).
fn parts(path: &Path) -> Vec<Part> {
    let whole = |root: PathBuf| Part {
        given: root.clone(),
        root,
        cell: None,
        run: None,
    };
    let found: Vec<Part> = experiment_dirs(path).into_iter().map(whole).collect();
    if !found.is_empty() {
        return found;
    }
    let cell_of = |dir: &Path| -> Option<(PathBuf, u64)> {
        Some((dir.parent()?.to_path_buf(), number(dir, CELL_PREFIX)?))
    };
    if let Some((root, cell)) = cell_of(path).filter(|_| !run_dirs(path).is_empty()) {
        return vec![Part {
            root,
            given: path.to_path_buf(),
            cell: Some(cell),
            run: None,
        }];
    }
    let run = number(path, RUN_PREFIX).filter(|_| path.join(RESULT).is_file());
    match (run, path.parent().and_then(cell_of)) {
        (Some(run), Some((root, cell))) => vec![Part {
            root,
            given: path.to_path_buf(),
            cell: Some(cell),
            run: Some(run),
        }],
        _ => Vec::new(),
    }
}

/// The experiments under `paths`: those with one name (cells run on
/// several machines) come together, their cells from every directory. A
/// cell's or a run's directory gives that cell or run alone.
pub fn find(paths: &[PathBuf]) -> Result<Vec<ExperimentDir>, String> {
    let mut by_name: BTreeMap<String, ExperimentDir> = BTreeMap::new();
    for path in paths {
        let parts = parts(path);
        if parts.is_empty() {
            return Err(format!(
                "{}: no results of emu run here (cell-K/run-R/result.json); give the \
                 directory emu run wrote (OUT/NAME/, or OUT/STUDY/ for a study)",
                path.display()
            ));
        }
        for part in parts {
            let dir = &part.root;
            let name = dir
                .file_name()
                .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
            let metas = metas(dir);
            let entry = by_name
                .entry(name.clone())
                .or_insert_with(|| ExperimentDir {
                    name,
                    dirs: Vec::new(),
                    scenario: None,
                    variant: None,
                    cells: Vec::new(),
                });
            if entry.dirs.contains(&part.given) {
                continue;
            }
            entry.scenario = entry
                .scenario
                .take()
                .or_else(|| metas.iter().find_map(|m| m.scenario.clone()));
            entry.variant = entry
                .variant
                .take()
                .or_else(|| metas.iter().find_map(|m| m.variant.clone()));
            add_cells(entry, &part)?;
            entry.dirs.push(part.given);
        }
    }
    let mut experiments: Vec<ExperimentDir> = by_name.into_values().collect();
    for e in &mut experiments {
        e.cells.sort_by_key(|c| c.cell);
    }
    Ok(experiments)
}

/// The cells of `part` (and their runs, each `result.json` read) added
/// to `experiment`; a result that does not read is an error.
fn add_cells(experiment: &mut ExperimentDir, part: &Part) -> Result<(), String> {
    let cells = cell_dirs(&part.root)
        .into_iter()
        .filter(|(k, _)| part.cell.is_none_or(|c| c == *k));
    for (k, cell_dir) in cells {
        let mut runs: Vec<RunDir> = Vec::new();
        for (run, dir) in run_dirs(&cell_dir) {
            if part.run.is_none_or(|r| r == run) {
                let result = read_result(&dir.join(RESULT))?;
                runs.push(RunDir { run, dir, result });
            }
        }
        if runs.is_empty() {
            continue;
        }
        let (label, sweep) = (
            runs[0].result.cell_label.clone(),
            runs[0].result.sweep.clone(),
        );
        match experiment.cells.iter_mut().find(|c| c.cell == k as usize) {
            Some(cell) => {
                for run in runs {
                    if !cell.runs.iter().any(|r| r.dir == run.dir) {
                        cell.runs.push(run);
                    }
                }
                cell.runs.sort_by_key(|r| r.run);
            }
            None => {
                let (queues, rates) = bottlenecks(&cell_dir);
                experiment.cells.push(CellDir {
                    cell: k as usize,
                    label,
                    sweep,
                    queues,
                    rates,
                    dir: cell_dir,
                    runs,
                })
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(root: &Path, cell: u64, run: u64, label: &str) {
        let dir = root.join(format!("cell-{cell}/run-{run}"));
        std::fs::create_dir_all(&dir).unwrap();
        let result =
            serde_json::json!({"cell": cell, "cell_label": label, "run": run, "flows": []});
        std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    }

    /// A study's experiments each with their scenario and variant; a
    /// cell's or a run's directory alone; a directory without results
    /// named with the fix.
    #[test]
    fn experiments_cells_and_runs_are_found_by_what_was_given() {
        let base = std::env::temp_dir().join(format!("emu-results-dir-{}", std::process::id()));
        let study = base.join("study");
        for (name, variant) in [("a-sce", "sce"), ("a-l4s", "l4s")] {
            let root = study.join(name);
            for cell in 0..2 {
                run(&root, cell, 0, &format!("bottleneck.rate={cell}0mbit"));
                run(&root, cell, 1, &format!("bottleneck.rate={cell}0mbit"));
            }
            // Cells run apart (`--cell K`) each write a meta-cell-K.json.
            let meta = serde_json::json!({"scenario": "a", "variant": variant});
            std::fs::write(root.join("meta-cell-1.json"), meta.to_string()).unwrap();
            std::fs::create_dir_all(root.join("report/x")).unwrap();
        }
        let found = find(std::slice::from_ref(&base)).unwrap();
        let names: Vec<&str> = found.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a-l4s", "a-sce"]);
        assert_eq!(found[1].variant.as_deref(), Some("sce"));
        assert_eq!(found[1].scenario.as_deref(), Some("a"));
        assert_eq!(found[0].cells.len(), 2);
        assert_eq!(found[0].cells[1].runs.len(), 2);
        assert_eq!(
            found[0].cells[1].axes(),
            [("bottleneck.rate".to_string(), "10mbit".to_string())]
        );
        // One cell, then one run of it; given twice, counted once.
        let cell = study.join("a-sce/cell-1");
        let found = find(&[cell.clone(), cell.clone()]).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].dirs, [cell]);
        assert_eq!(found[0].cells.len(), 1);
        assert_eq!(
            (found[0].cells[0].cell, found[0].cells[0].runs.len()),
            (1, 2)
        );
        let found = find(&[study.join("a-sce/cell-0/run-1")]).unwrap();
        assert_eq!(found[0].name, "a-sce");
        let runs: Vec<u64> = found[0].cells[0].runs.iter().map(|r| r.run).collect();
        assert_eq!(runs, [1]);
        let error = find(&[study.join("a-sce/report")]).unwrap_err();
        assert!(error.contains("no results of emu run here"), "{error}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// The results `emu run` wrote at release 0.1 (committed under
    /// tests/fixtures) read into today's types: every run's figures, the
    /// cells' plans (their queues and rates, the rates from the server's
    /// text) and the grid's size.
    #[test]
    fn results_of_the_last_release_read() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/results-0.1/sweep");
        let found = find(std::slice::from_ref(&root)).unwrap();
        assert_eq!(found.len(), 1);
        let cells = &found[0].cells;
        assert_eq!(cells.len(), 2);
        assert_eq!(cells_in_grid(&root), Some(2));
        for (cell, rate) in cells.iter().zip([10e6, 20e6]) {
            assert_eq!(cell.queues, ["fq_codel"]);
            assert_eq!(cell.rates, [[Some(rate), Some(rate)]]);
            assert_eq!(runs_planned(&cell.dir), Some(1));
            let result = &cell.runs[0].result;
            assert_eq!(result.cell_label, cell.label);
            assert_eq!(
                cell.axes(),
                [("bottleneck.rate".to_string(), format!("{}mbit", rate / 1e6))]
            );
            let names: Vec<&str> = result.flows.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(names, ["bulk", "probe"]);
            let bulk = &result.flows[0];
            assert!(bulk.goodput_bps.unwrap() > 0.5 * rate, "{bulk:?}");
            assert!(
                bulk.whole_flow.is_some() && bulk.srtt_ms.is_some(),
                "{bulk:?}"
            );
            assert!(!bulk.tuples.is_empty() && bulk.path.is_some(), "{bulk:?}");
            assert!(result.flows[1].ping_rtt_ms.is_some());
            assert_eq!(result.jain_flows, ["bulk"]);
            assert!(result.accounting_ok);
        }
    }

    #[test]
    fn a_queue_is_named_however_it_was_written() {
        let name = |v: serde_json::Value| queue_name(&v);
        assert_eq!(name(serde_json::json!("fq_codel target 5ms")), "fq_codel");
        assert_eq!(
            name(serde_json::json!({"discipline": "dualpi2", "alpha": 41})),
            "dualpi2"
        );
        assert_eq!(name(serde_json::json!({"pie": {}})), "pie");
    }

    #[test]
    fn assignments_keep_values_with_spaces() {
        let cell = CellDir {
            cell: 1,
            label: "bottleneck.delay=10ms bottleneck.queue=pfifo limit 50 flows.0.cc=cubic".into(),
            sweep: Assignments::default(),
            dir: PathBuf::new(),
            queues: Vec::new(),
            rates: Vec::new(),
            runs: Vec::new(),
        };
        assert_eq!(
            cell.axes(),
            [
                ("bottleneck.delay".to_string(), "10ms".to_string()),
                ("bottleneck.queue".to_string(), "pfifo limit 50".to_string()),
                ("flows.0.cc".to_string(), "cubic".to_string()),
            ]
        );
    }
}
