//! `emu run FILE`: every cell of the grid (or the one `--cell` names),
//! each repeated, one at a time; then the figures across repetitions.
//!
//! Cells run one after another on purpose: concurrent real-time emulation
//! on shared cores bends the results. To spread a grid over machines, run
//! `--cell K` for each K that `--list-cells` prints.

use crate::file::sweep::{Cell, Grid};
use crate::file::{self, Experiment, ExperimentError, Plan, Source};
use crate::results::measured::{self, CellSummary, Meta, RunResult, RunSummary};
use crate::run::control::ControlPlane;
use crate::run::flows;
use crate::run::progress::Progress;
use crate::run::repetition::{RunError, RunInfo};
use crate::run::runner;
use emu_core::time::NS_PER_SEC;
use report::experiments::results_dir;
use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub file: PathBuf,
    pub sets: Vec<String>,
    pub runs: Option<u32>,
    pub out: Option<PathBuf>,
    pub cell: Option<usize>,
    pub list_cells: bool,
    pub json: bool,
    /// The file's quick form: `[quick]`'s overrides, one repetition,
    /// results under NAME-quick.
    pub quick: bool,
    /// Keep the repetitions an earlier attempt finished (see
    /// [`super::resume`]); run the rest.
    pub resume: bool,
    /// The progress of the whole session this file is part of (a study's,
    /// shared by its files); None: this file's own.
    pub progress: Option<Rc<RefCell<Progress>>>,
}

/// What a file's session will run: its cells (those `--cell` selects) and
/// their runs' planned seconds, for a study's progress.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Workload {
    pub cells: usize,
    pub seconds: f64,
}

/// A cell, read and planned.
struct Planned {
    cell: Cell,
    experiment: Experiment,
    plan: Plan,
}

/// Reads the file and plans every cell: all errors come before anything
/// starts.
fn prepare(options: &Options) -> Result<(Grid, Vec<Planned>), ExperimentError> {
    let file = options.file.display().to_string();
    let text = std::fs::read_to_string(&options.file)
        .map_err(|e| ExperimentError(format!("{file}: cannot read the experiment file: {e}")))?;
    let sets = if options.quick {
        quick_sets(&file, &text, &options.sets)?
    } else {
        options.sets.clone()
    };
    let grid = Grid::new(&file, &text, &sets)?;
    let base = options
        .file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let stem = options
        .file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "experiment".into());
    let available = crate::run::congestion::with_emus(crate::run::system::congestion_controls());
    let mut planned = Vec::new();
    for index in 0..grid.len() {
        let cell = grid.cell(index);
        let source = Source {
            file: &file,
            text: &cell.text,
        };
        let mut experiment = file::parse(&source)
            .map_err(|e| with_sets(e, &sets))
            .map_err(|e| in_cell(e, &cell, &grid))?;
        if let Some(runs) = options.runs {
            experiment.run.runs = runs;
        }
        let mut plan = file::plan(
            &experiment,
            &source,
            &stem,
            &base,
            &available,
            &crate::run::wrappers::run_first,
        )
        .map_err(|e| in_cell(e, &cell, &grid))?;
        crate::run::congestion::to_kernel_names(&mut plan);
        planned.push(Planned {
            cell,
            experiment,
            plan,
        });
    }
    crate::run::pantheon::deps::check(&crate::run::pantheon::wrappers(
        planned.iter().map(|p| &p.plan),
    ))
    .map_err(|e| ExperimentError(format!("{file}: {e}")))?;
    // Said once, not once per cell of a sweep.
    let mut warned: Vec<&String> = Vec::new();
    for warning in planned.iter().flat_map(|p| &p.plan.warnings) {
        if !warned.contains(&warning) {
            eprintln!("emu run: warning: {warning}");
            warned.push(warning);
        }
    }
    if let Some(k) = options.cell {
        if k >= grid.len() {
            return Err(ExperimentError(format!(
                "--cell {k}: the experiment has {} cell{} (0 to {})",
                grid.len(),
                if grid.len() == 1 { "" } else { "s" },
                grid.len() - 1
            )));
        }
    }
    Ok((grid, planned))
}

/// The overrides of the quick form, then the command line's: one
/// repetition of `quick.duration` (5 s if absent) and `quick.set`. A file
/// that does not parse gets its error from the grid, which reads it next.
fn quick_sets(file: &str, text: &str, sets: &[String]) -> Result<Vec<String>, ExperimentError> {
    let quick = match text.parse::<toml::Table>() {
        Ok(mut table) => match table.remove("quick") {
            Some(section) => section
                .try_into::<file::QuickSection>()
                .map_err(|e| ExperimentError(format!("{file}: [quick]: {}", e.message())))?,
            None => file::QuickSection::default(),
        },
        Err(_) => file::QuickSection::default(),
    };
    let duration = quick.duration.map_or(5 * NS_PER_SEC, |d| d.0);
    let mut all = vec![
        "run.runs=1".to_string(),
        format!("run.duration=\"{duration}ns\""),
    ];
    all.extend(quick.set);
    all.extend(sets.iter().cloned());
    Ok(all)
}

/// A parse error of a file changed by `--set` counts its lines in the
/// changed text, which the user never sees: say so, and what changed it.
fn with_sets(error: ExperimentError, sets: &[String]) -> ExperimentError {
    if sets.is_empty() {
        return error;
    }
    ExperimentError(format!(
        "{}\n(the lines are those of the file with --set {} applied)",
        error.0,
        sets.join(", --set ")
    ))
}

fn in_cell(error: ExperimentError, cell: &Cell, grid: &Grid) -> ExperimentError {
    if grid.len() == 1 {
        error
    } else {
        ExperimentError(format!(
            "{} (in sweep cell {}: {})",
            error.0,
            cell.index,
            cell.label()
        ))
    }
}

/// Reads and plans every cell, running nothing: a study checks all its
/// files before the first runs, and adds up what they will run.
pub fn check(options: &Options) -> Result<Workload, ExperimentError> {
    let (_, planned) = prepare(options)?;
    let selected: Vec<&Planned> = planned
        .iter()
        .filter(|p| options.cell.is_none_or(|k| k == p.cell.index))
        .collect();
    Ok(workload(&selected))
}

fn workload(selected: &[&Planned]) -> Workload {
    Workload {
        cells: selected.len(),
        seconds: selected
            .iter()
            .map(|p| Progress::planned_run(p.plan.run.duration.0) * p.plan.run.runs as f64)
            .sum(),
    }
}

/// Runs the command; returns the exit status.
pub fn execute(options: &Options) -> Result<i32, ExperimentError> {
    let (grid, planned) = prepare(options)?;
    if options.list_cells {
        print_cells(&planned, options.json);
        return Ok(0);
    }
    shells::privilege::check().map_err(|e| ExperimentError(e.to_string()))?;
    let for_schemes = pantheon_preflight(&planned)?;
    let first = &planned[0].plan;
    let root = results_root(options, first)?;
    let selected: Vec<&Planned> = planned
        .iter()
        .filter(|p| options.cell.is_none_or(|k| k == p.cell.index))
        .collect();
    write_meta(&root, options, &grid, &selected)?;

    // The guardian is forked while this process still has one thread.
    let mut guardian =
        shells::guardian::Guardian::start().map_err(|e| ExperimentError(e.to_string()))?;
    let progress = options.progress.clone().unwrap_or_else(|| {
        let work = workload(&selected);
        Rc::new(RefCell::new(Progress::new(work.cells, work.seconds)))
    });
    let outcome = run_cells(
        &root,
        &selected,
        &progress,
        options.resume,
        &for_schemes,
        &mut guardian,
    );
    guardian.release();
    let (summaries, missing, failure) = outcome?;

    write_summary(&root, &first.name, &summaries)?;

    if options.json {
        let json = serde_json::json!({
            "directory": root.display().to_string(),
            "cells": summaries,
            "missing": missing,
        });
        say(&format!("{json:#}\n"));
    } else {
        say(&measured::table(&summaries));
        say(&format!("results in {}\n", root.display()));
    }
    let no_data = compare_schemes(&root, &first.name, &planned, options.json);
    if let Some(failure) = failure {
        return Err(ExperimentError(failure));
    }
    if !no_data.is_empty() {
        return Err(ExperimentError(format!(
            "schemes that moved no data: {}",
            no_data.join("; ")
        )));
    }
    if !missing.is_empty() {
        eprintln!(
            "emu run: interrupted; cells not finished: {}",
            missing
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(130);
    }
    Ok(0)
}

/// What the Pantheon schemes of the plans need, asked once before any
/// cell: refused here if they cannot run, warned about if their set-up
/// fails in part. Returns the congestion controls the schemes' set-up asks for that emu
/// provides (a `modprobe tcp_vegas` answered by emu's Vegas).
fn pantheon_preflight(planned: &[Planned]) -> Result<Vec<&'static str>, ExperimentError> {
    let wrappers = crate::run::pantheon::wrappers(planned.iter().map(|p| &p.plan));
    let preflight =
        crate::run::pantheon::after_reboot::preflight(&wrappers).map_err(ExperimentError)?;
    for warning in &preflight.warnings {
        eprintln!("emu run: warning: {warning}");
    }
    Ok(preflight.congestion_controls)
}

/// Loads emu's congestion controls that the plans name, and those the
/// schemes' set-up asks for (`for_schemes`).
fn load_endpoints(
    selected: &[&Planned],
    for_schemes: &[&'static str],
) -> Result<Option<endpoints::Loaded>, ExperimentError> {
    let mut names = crate::run::congestion::named(selected.iter().map(|p| &p.plan));
    for name in for_schemes {
        if !names.contains(name) {
            names.push(name);
        }
    }
    crate::run::congestion::load(&names)
}

/// The directory this session's results go to (`--out`, else the file's
/// `run.out`, else `runs`; then the experiment's name), made.
fn results_root(options: &Options, first: &Plan) -> Result<PathBuf, ExperimentError> {
    let root = options
        .out
        .clone()
        .or_else(|| first.run.out.clone())
        .unwrap_or_else(|| PathBuf::from("runs"))
        .join(if options.quick {
            format!("{}-quick", first.name)
        } else {
            first.name.clone()
        });
    std::fs::create_dir_all(&root)
        .map_err(|e| ExperimentError(format!("creating {}: {e}", root.display())))?;
    Ok(root)
}

/// A flow's `scheme` swept: the comparison of every cell run so far,
/// printed (unless `json`); the schemes whose runs moved no data.
fn compare_schemes(root: &Path, name: &str, planned: &[Planned], json: bool) -> Vec<String> {
    let compared: Vec<_> = planned
        .iter()
        .filter_map(|p| crate::results::schemes::scheme_cell(&p.cell, &p.experiment, &p.plan))
        .collect();
    if compared.is_empty() {
        return Vec::new();
    }
    match crate::results::schemes::write(root, name, &compared) {
        Ok((text, failures)) => {
            if !json {
                say(&text);
            }
            failures
        }
        Err(e) => {
            eprintln!("emu run: {e}");
            Vec::new()
        }
    }
}

/// Writes `ROOT/summary.json`: the cells just run, with those of the file
/// already there that were not (cells run elsewhere with `--cell`, or
/// earlier), in cell order.
fn write_summary(
    root: &Path,
    experiment: &str,
    summaries: &[CellSummary],
) -> Result<(), ExperimentError> {
    let mut all: Vec<CellSummary> = Vec::new();
    let summary_path = root.join(results_dir::SUMMARY);
    // Cells run elsewhere (--cell on other machines) or earlier are kept.
    if let Ok(text) = std::fs::read_to_string(&summary_path) {
        if let Ok(old) = serde_json::from_str::<RunSummary>(&text) {
            all.extend(
                old.cells
                    .into_iter()
                    .filter(|c| !summaries.iter().any(|s| s.cell == c.cell)),
            );
        }
    }
    all.extend(summaries.iter().cloned());
    all.sort_by_key(|c| c.cell);
    let summary = RunSummary {
        cells: all,
        experiment: experiment.to_string(),
    };
    write_json(&summary_path, &summary)
}

type CellsOutcome = (Vec<CellSummary>, Vec<usize>, Option<String>);

/// Runs each selected cell's repetitions in turn, keeping `progress`
/// (said once a cell, where stderr is not a terminal; on one, the running
/// flows' line carries it).
// Long: per cell, per run, the decisions between keeping a finished run,
// running it, stopping on an interruption or a failure, and counting it.
fn run_cells(
    root: &Path,
    selected: &[&Planned],
    progress: &RefCell<Progress>,
    resume: bool,
    for_schemes: &[&'static str],
    guardian: &mut shells::guardian::Guardian,
) -> Result<CellsOutcome, ExperimentError> {
    let mut control = ControlPlane::new().map_err(ExperimentError)?;
    control.endpoints = load_endpoints(selected, for_schemes)?;
    let per_cell_line = !std::io::stderr().is_terminal();
    let mut summaries = Vec::new();
    let mut missing = Vec::new();
    let mut failure = None;
    for planned in selected {
        let cell_dir = results_dir::cell_dir(root, planned.cell.index);
        let resuming = resume && super::resume::same_cell(&cell_dir, &resolved(planned)?);
        write_cell_files(&cell_dir, planned)?;
        let mut kept = 0;
        let mut results: Vec<RunResult> = Vec::new();
        let mut finished = true;
        let failed_before = failure.is_some();
        for run in 0..planned.plan.run.runs {
            if control.interrupted() || failure.is_some() {
                finished = false;
                break;
            }
            let planned_run = Progress::planned_run(planned.plan.run.duration.0);
            let info = {
                let p = progress.borrow();
                RunInfo {
                    cell: planned.cell.index,
                    cell_label: planned.cell.label(),
                    sweep: planned.cell.assignments.clone(),
                    run,
                    runs: planned.plan.run.runs,
                    seed: planned.plan.run.seed.wrapping_add(run as u64),
                    cells_done: p.done(),
                    cells_all: p.cells(),
                    later_seconds: p.seconds_left_besides(planned_run),
                }
            };
            let dir = results_dir::run_dir(root, planned.cell.index, run);
            if let Some(result) = resuming.then(|| super::resume::kept_result(&dir)).flatten() {
                results.push(result);
                kept += 1;
                progress.borrow_mut().run_done(planned_run, None);
                continue;
            }
            // A directory left by an earlier, interrupted attempt goes.
            let _ = std::fs::remove_dir_all(&dir);
            let started = Instant::now();
            let outcome = runner::run_once(&planned.plan, &dir, &info, guardian, &mut control);
            progress
                .borrow_mut()
                .run_done(planned_run, Some(started.elapsed().as_secs_f64()));
            match outcome {
                Ok(result) => {
                    keep_result(planned, run, &dir, &result)?;
                    results.push(result);
                }
                Err(RunError::Interrupted) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    finished = false;
                }
                Err(RunError::Failed(message)) => {
                    failure = Some(format!("cell {} run {run}: {message}", planned.cell.index));
                    finished = false;
                }
            }
        }
        super::resume::say_kept(planned.cell.index, kept, planned.plan.run.runs);
        // Done: finished, or failed here (the cells after a failure are
        // not run, and stay to do).
        if finished || (failure.is_some() && !failed_before) {
            progress.borrow_mut().cell_done();
            if per_cell_line {
                eprintln!("emu run: {}", progress.borrow().line());
            }
        }
        if finished {
            let summary =
                measured::summarize_cell(planned.cell.index, &planned.cell.label(), &results);
            write_json(&cell_dir.join(results_dir::SUMMARY), &summary)?;
            summaries.push(summary);
        } else {
            missing.push(planned.cell.index);
        }
    }
    Ok((summaries, missing, failure))
}

/// Writes run `run` of cell `cell`'s result into its directory, and warns
/// of what makes its figures doubtful: accounting that does not add up, a
/// flow whose program failed (it has no figures, or wrong ones; the table
/// shows a dash), a run that did not keep time.
fn keep_result(
    planned: &Planned,
    run: u32,
    dir: &Path,
    result: &RunResult,
) -> Result<(), ExperimentError> {
    let cell = planned.cell.index;
    write_json(&dir.join(results_dir::RESULT), result)?;
    if !result.accounting_ok {
        eprintln!(
            "emu run: warning: cell {cell} run {run}: a link's packet accounting does not add up; see {}",
            dir.join(results_dir::LINKS).display()
        );
    }
    for flow in result.flows.iter().filter(|f| !flows::ended_well(&f.ended)) {
        eprintln!(
            "emu run: warning: cell {cell} run {run}: flow {} ended with {}; see {}",
            flow.name,
            flow.ended,
            dir.join(results_dir::FLOWS_DIR).display()
        );
    }
    let planned_cc = planned
        .plan
        .flows
        .iter()
        .map(|f| (f.name.as_str(), f.cc.as_deref()));
    for warning in crate::run::congestion::fallbacks(planned_cc, &result.flows) {
        eprintln!("emu run: warning: cell {cell} run {run}: {warning}");
    }
    for warning in &result.timing_warnings {
        eprintln!("emu run: warning: cell {cell} run {run}: {warning}");
    }
    Ok(())
}

/// Writes `value` as pretty JSON, a newline after it.
fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), ExperimentError> {
    let json = serde_json::to_string_pretty(value).expect("results serialize");
    std::fs::write(path, json + "\n")
        .map_err(|e| ExperimentError(format!("writing {}: {e}", path.display())))
}

fn print_cells(planned: &[Planned], json: bool) {
    if json {
        let cells: Vec<serde_json::Value> = planned
            .iter()
            .map(|p| {
                let values: serde_json::Map<String, serde_json::Value> = p
                    .cell
                    .assignments
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().into()))
                    .collect();
                serde_json::json!({ "cell": p.cell.index, "values": values, "runs": p.plan.run.runs })
            })
            .collect();
        say(&format!("{:#}\n", serde_json::Value::Array(cells)));
    } else {
        let lines: String = planned
            .iter()
            .map(|p| format!("{}\t{}\n", p.cell.index, p.cell.label()))
            .collect();
        say(&lines);
    }
}

/// Prints to standard output; a reader that went away (`| head`) is not
/// an error worth a panic.
fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn write_meta(
    root: &Path,
    options: &Options,
    grid: &Grid,
    selected: &[&Planned],
) -> Result<(), ExperimentError> {
    let meta = Meta {
        emu_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: endpoints::kernel::release(),
        file: options.file.display().to_string(),
        set: options.sets.clone(),
        cells_in_grid: Some(grid.len()),
        cells_here: selected.iter().map(|p| p.cell.index).collect(),
        swept_keys: grid.axes().iter().map(|a| a.key.clone()).collect(),
        quick: options.quick,
        scenario: selected.first().and_then(|p| p.plan.run.scenario.clone()),
        variant: selected.first().and_then(|p| p.plan.run.variant.clone()),
        started_unix_ns: emu_core::time::realtime_now(),
    };
    write_json(&root.join(results_dir::meta_file(options.cell)), &meta)
}

/// The cell's experiment with every default filled in, as TOML and as
/// the plan the runs follow.
/// The cell's experiment with every default filled in, as its
/// `experiment.toml` holds it.
fn resolved(planned: &Planned) -> Result<String, ExperimentError> {
    toml::to_string(&planned.experiment)
        .map_err(|e| ExperimentError(format!("writing the resolved experiment: {e}")))
}

fn write_cell_files(dir: &Path, planned: &Planned) -> Result<(), ExperimentError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| ExperimentError(format!("creating {}: {e}", dir.display())))?;
    let toml = resolved(planned)?;
    let path = dir.join(results_dir::EXPERIMENT);
    let header = format!(
        "# cell {}: {}\n# emu {}, kernel {}\n",
        planned.cell.index,
        planned.cell.label(),
        env!("CARGO_PKG_VERSION"),
        endpoints::kernel::release()
    );
    std::fs::write(&path, header + &toml)
        .map_err(|e| ExperimentError(format!("writing {}: {e}", path.display())))?;
    write_json(
        &dir.join(results_dir::PLAN),
        &crate::results::plan_file::plan_file(&planned.plan),
    )
}
