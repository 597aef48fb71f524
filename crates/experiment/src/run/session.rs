//! `emu run FILE`: every cell of the grid (or the one `--cell` names),
//! each repeated, one at a time; then the figures across repetitions.
//!
//! Cells run one after another on purpose: concurrent real-time emulation
//! on shared cores bends the results. To spread a grid over machines, run
//! `--cell K` for each K that `--list-cells` prints.

use crate::file::ExperimentError;
use crate::results::measured::{self, CellSummary, RunResult};
use crate::run::control::ControlPlane;
use crate::run::prepare::{prepare, Planned};
use crate::run::progress::Progress;
use crate::run::repetition::{RunError, RunInfo};
use crate::run::runner;
use crate::run::writing;
use report::experiments::results_dir;
use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::Path;
use std::rc::Rc;
use std::time::Instant;

pub use crate::run::options::Options;

/// What a file's session will run: its cells (those `--cell` selects) and
/// their runs' planned seconds, for a study's progress.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Workload {
    pub cells: usize,
    pub seconds: f64,
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
    let root = writing::results_root(options, first)?;
    let selected: Vec<&Planned> = planned
        .iter()
        .filter(|p| options.cell.is_none_or(|k| k == p.cell.index))
        .collect();
    writing::write_meta(&root, options, &grid, &selected)?;

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

    writing::write_summary(&root, &first.name, &summaries)?;

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
        let resuming = resume && super::resume::same_cell(&cell_dir, &writing::resolved(planned)?);
        writing::write_cell_files(&cell_dir, planned)?;
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
                    writing::keep_result(planned, run, &dir, &result)?;
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
            writing::write_json(&cell_dir.join(results_dir::SUMMARY), &summary)?;
            summaries.push(summary);
        } else {
            missing.push(planned.cell.index);
        }
    }
    Ok((summaries, missing, failure))
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
pub(crate) fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
