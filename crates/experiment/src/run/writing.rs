//! What a session writes into its results directory, by the layout of
//! `report::experiments::results_dir` and the types of its
//! `results_schema`: the root, `meta.json`, each cell's
//! `experiment.toml` and `plan.json`, each run's `result.json` (with the
//! warnings its figures call for), and the cells' and the experiment's
//! `summary.json`.

use crate::file::sweep::Grid;
use crate::file::{ExperimentError, Plan};
use crate::results::measured::{CellSummary, Meta, RunResult, RunSummary};
use crate::run::flows;
use crate::run::options::Options;
use crate::run::prepare::Planned;
use report::experiments::results_dir;
use std::path::{Path, PathBuf};

/// The directory this session's results go to (`--out`, else the file's
/// `run.out`, else `runs`; then the experiment's name), made.
pub(super) fn results_root(options: &Options, first: &Plan) -> Result<PathBuf, ExperimentError> {
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

/// Writes `ROOT/summary.json`: the cells just run, with those of the file
/// already there that were not (cells run elsewhere with `--cell`, or
/// earlier), in cell order.
pub(super) fn write_summary(
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

/// Writes run `run` of cell `cell`'s result into its directory, and warns
/// of what makes its figures doubtful: accounting that does not add up, a
/// flow whose program failed (it has no figures, or wrong ones; the table
/// shows a dash), a run that did not keep time.
pub(super) fn keep_result(
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
pub(super) fn write_json(
    path: &Path,
    value: &impl serde::Serialize,
) -> Result<(), ExperimentError> {
    let json = serde_json::to_string_pretty(value).expect("results serialize");
    std::fs::write(path, json + "\n")
        .map_err(|e| ExperimentError(format!("writing {}: {e}", path.display())))
}

pub(super) fn write_meta(
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

/// The cell's experiment with every default filled in, as its
/// `experiment.toml` holds it.
pub(super) fn resolved(planned: &Planned) -> Result<String, ExperimentError> {
    toml::to_string(&planned.experiment)
        .map_err(|e| ExperimentError(format!("writing the resolved experiment: {e}")))
}

pub(super) fn write_cell_files(dir: &Path, planned: &Planned) -> Result<(), ExperimentError> {
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
