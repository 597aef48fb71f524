//! `emu run FILE|DIR [--set KEY=VALUE]... [--runs N] [--out DIR] [--cell K]
//! [--list-cells] [--quick] [--json]`: an experiment on a dumbbell of
//! hosts, or a study (every experiment file of a directory).

use super::output::UsageError;
use clap::Args;
use experiment::file::ExperimentError;
use experiment::run::progress::Progress;
use experiment::run::session::{Options, Workload};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

#[derive(Args)]
#[command(
    long_about = "Run an experiment: hosts in their own network namespaces on two sides \
        of one or more bottlenecks, each link an exact emu link model with its own \
        packet log, and flows between them (kernel TCP by congestion control, UDP at \
        a rate with an ECN codepoint, ping probes, any command).\n\n\
        Any scalar in the file may be a list: the experiment is then the grid of all \
        combinations, one cell after another (concurrent real-time emulation on shared \
        cores bends the results; spread a large grid over machines with --list-cells \
        and --cell K instead).\n\n\
        Results go to OUT/NAME/cell-K/run-R/: per-link packet logs (links/*/, read \
        them with emu report), TCP_INFO samples (tcp/*.csv), each flow's output, \
        links.json (packet accounting) and result.json; OUT/NAME/summary.json holds \
        mean and standard deviation across repetitions.\n\n\
        Given a directory, runs each of its experiment files (*.toml, in name order) \
        as a study into OUT/DIRNAME/NAME/; `emu report OUT/DIRNAME` then pairs the \
        variants of each scenario. --quick runs each file's quick form: one \
        repetition, 5 s or the file's [quick] duration, with its [quick] overrides, \
        into NAME-quick."
)]
pub struct RunArgs {
    /// The experiment file (TOML), or a directory of them (a study).
    file: PathBuf,
    /// Override a key of the file, e.g. bottleneck.rate=50mbit or flows.0.cc=bbr;
    /// a list (rate=["10mbit","50mbit"]) sweeps.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Repetitions of every cell (overrides run.runs).
    #[arg(long)]
    runs: Option<u32>,
    /// Where results go (overrides run.out) [default: runs].
    #[arg(long, value_hint = clap::ValueHint::DirPath)]
    out: Option<PathBuf>,
    /// Run only sweep cell K (0-based, as --list-cells numbers them).
    #[arg(long, value_name = "K")]
    cell: Option<usize>,
    /// Print the sweep's cells and exit.
    #[arg(long)]
    list_cells: bool,
    /// Print results (or the cells) as JSON.
    #[arg(long)]
    json: bool,
    /// Run the quick form: one repetition, short, with the file's [quick]
    /// overrides; results under NAME-quick.
    #[arg(long)]
    quick: bool,
    /// Go on after an interrupted run: keep every repetition that ended
    /// (its result.json is there, for the same cell), run the rest.
    #[arg(long)]
    resume: bool,
}

pub fn run(cli: RunArgs) -> Result<i32, UsageError> {
    if cli.file.is_dir() {
        return study(cli);
    }
    let options = Options {
        file: cli.file,
        sets: cli.sets,
        runs: cli.runs,
        out: cli.out,
        cell: cli.cell,
        list_cells: cli.list_cells,
        json: cli.json,
        quick: cli.quick,
        resume: cli.resume,
        progress: None,
    };
    match experiment::run::session::execute(&options) {
        Ok(code) => Ok(code),
        Err(error) => {
            eprintln!("emu run: {error}");
            Ok(1)
        }
    }
}

/// Every experiment file of a directory, one after another, into
/// OUT/DIRNAME/. A file that fails does not stop the others; an
/// interruption does. Every file is planned first, so a mistake in the
/// last one is found before the first runs.
fn study(cli: RunArgs) -> Result<i32, UsageError> {
    if cli.cell.is_some() {
        return Err(UsageError(format!(
            "--cell: {} is a directory of experiments, whose cells are numbered per file; run one file with --cell K",
            cli.file.display()
        )));
    }
    let files = study_files(&cli.file)?;
    let name = std::fs::canonicalize(&cli.file)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "study".into());
    let name = if cli.quick {
        format!("{name}-quick")
    } else {
        name
    };
    let out = cli
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs"))
        .join(name);
    let options = |file: &PathBuf, list_cells: bool| Options {
        file: file.clone(),
        sets: cli.sets.clone(),
        runs: cli.runs,
        out: Some(out.clone()),
        cell: None,
        list_cells,
        json: cli.json,
        quick: cli.quick,
        resume: cli.resume,
        progress: None,
    };
    let mut whole = Workload::default();
    if !cli.list_cells {
        match workload(&files, &options) {
            Ok(work) => whole = work,
            Err(error) => {
                eprintln!("emu run: {error}");
                return Ok(1);
            }
        }
    }
    // One progress for the whole study: its cells done of all of them.
    let progress = Rc::new(RefCell::new(Progress::new(whole.cells, whole.seconds)));
    let mut failed = Vec::new();
    for file in &files {
        if cli.list_cells {
            super::output::print_out(format_args!("# {}\n", file.display()));
        } else {
            eprintln!("emu run: {}", file.display());
        }
        let options = Options {
            progress: Some(progress.clone()),
            ..options(file, cli.list_cells)
        };
        match experiment::run::session::execute(&options) {
            Ok(0) => {}
            Ok(130) => return Ok(130),
            Ok(_) => failed.push(file.display().to_string()),
            Err(error) => {
                eprintln!("emu run: {error}");
                failed.push(file.display().to_string());
            }
        }
    }
    if !cli.list_cells {
        eprintln!("emu run: the study's results are in {}", out.display());
    }
    if failed.is_empty() {
        Ok(0)
    } else {
        eprintln!("emu run: these experiments failed: {}", failed.join(", "));
        Ok(1)
    }
}

/// The experiment files of a study's directory (`*.toml`), in name order.
fn study_files(dir: &std::path::Path) -> Result<Vec<PathBuf>, UsageError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| UsageError(format!("{}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(UsageError(format!(
            "{}: no experiment files (*.toml) in this directory",
            dir.display()
        )));
    }
    Ok(files)
}

/// Plans every file of a study (`options` for each), running nothing, and
/// adds up the cells and planned seconds they will run; the first file
/// that does not plan is the error.
fn workload(
    files: &[PathBuf],
    options: &dyn Fn(&PathBuf, bool) -> Options,
) -> Result<Workload, ExperimentError> {
    let mut whole = Workload::default();
    for file in files {
        let work = experiment::run::session::check(&options(file, false))?;
        whole.cells += work.cells;
        whole.seconds += work.seconds;
    }
    Ok(whole)
}
