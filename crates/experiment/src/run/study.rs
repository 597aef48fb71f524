//! `emu run DIR`: a study, every experiment file of a directory
//! (`*.toml`, in name order), each into `OUT/DIRNAME/NAME/`, under one
//! progress line over all their cells. Every file is planned first, so a
//! mistake in the last one is found before the first runs; a file that
//! fails does not stop the others; an interruption does.

use crate::file::ExperimentError;
use crate::run::progress::Progress;
use crate::run::session::{self, say, Options, Workload};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A study the command line cannot ask for: one message, said as a
/// usage mistake.
#[derive(Debug)]
pub struct Refused(pub String);

/// Runs the study in the directory `given.file`, every file with
/// `given`'s options; returns the exit status (130 when interrupted, 1
/// when a file failed).
pub fn execute(given: &Options) -> Result<i32, Refused> {
    if given.cell.is_some() {
        return Err(Refused(format!(
            "--cell: {} is a directory of experiments, whose cells are numbered per file; run one file with --cell K",
            given.file.display()
        )));
    }
    let files = files(&given.file)?;
    let out = root(given);
    let options = |file: &Path| Options {
        file: file.to_path_buf(),
        out: Some(out.clone()),
        cell: None,
        progress: None,
        ..given.clone()
    };
    let mut whole = Workload::default();
    if !given.list_cells {
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
        if given.list_cells {
            say(&format!("# {}\n", file.display()));
        } else {
            eprintln!("emu run: {}", file.display());
        }
        let options = Options {
            progress: Some(progress.clone()),
            ..options(file)
        };
        match session::execute(&options) {
            Ok(0) => {}
            Ok(130) => return Ok(130),
            Ok(_) => failed.push(file.display().to_string()),
            Err(error) => {
                eprintln!("emu run: {error}");
                failed.push(file.display().to_string());
            }
        }
    }
    if !given.list_cells {
        eprintln!("emu run: the study's results are in {}", out.display());
    }
    if failed.is_empty() {
        Ok(0)
    } else {
        eprintln!("emu run: these experiments failed: {}", failed.join(", "));
        Ok(1)
    }
}

/// Where the study's results go: `OUT/DIRNAME` (`DIRNAME-quick` for the
/// quick form), `OUT` being `--out` or `runs`.
fn root(given: &Options) -> PathBuf {
    let name = std::fs::canonicalize(&given.file)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "study".into());
    let name = if given.quick {
        format!("{name}-quick")
    } else {
        name
    };
    given
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs"))
        .join(name)
}

/// The experiment files of a study's directory (`*.toml`), in name order.
fn files(dir: &Path) -> Result<Vec<PathBuf>, Refused> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Refused(format!("{}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Refused(format!(
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
    options: &dyn Fn(&Path) -> Options,
) -> Result<Workload, ExperimentError> {
    let mut whole = Workload::default();
    for file in files {
        let work = session::check(&Options {
            list_cells: false,
            ..options(file)
        })?;
        whole.cells += work.cells;
        whole.seconds += work.seconds;
    }
    Ok(whole)
}
