//! An experiment file read and every cell of its grid planned, before
//! anything runs: `--set` and the quick form applied, each cell parsed
//! and planned against the machine's congestion controls and Pantheon
//! wrappers, and every error said with the cell it is in.

use crate::file::sweep::{Cell, Grid};
use crate::file::{self, Experiment, ExperimentError, Plan, Source};
use crate::run::options::Options;
use emu_core::time::NS_PER_SEC;
use std::path::Path;

/// A cell, read and planned.
pub(super) struct Planned {
    pub(super) cell: Cell,
    pub(super) experiment: Experiment,
    pub(super) plan: Plan,
}

/// Reads the file and plans every cell: all errors come before anything
/// starts.
pub(super) fn prepare(options: &Options) -> Result<(Grid, Vec<Planned>), ExperimentError> {
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

/// An error of one cell of a sweep, said with the cell it is in.
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
