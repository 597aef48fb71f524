//! `emu run FILE|DIR [--set KEY=VALUE]... [--runs N] [--out DIR] [--cell K]
//! [--list-cells] [--quick] [--json]`: an experiment on a dumbbell of
//! hosts, or a study (every experiment file of a directory).

use super::output::UsageError;
use clap::Args;
use experiment::run::session::Options;
use std::path::PathBuf;

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
    let study = cli.file.is_dir();
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
    if study {
        return experiment::run::study::execute(&options).map_err(|e| UsageError(e.0));
    }
    match experiment::run::session::execute(&options) {
        Ok(code) => Ok(code),
        Err(error) => {
            eprintln!("emu run: {error}");
            Ok(1)
        }
    }
}
