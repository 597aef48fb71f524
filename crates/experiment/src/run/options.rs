//! What the command line asks of `emu run`: the file (or a study's
//! directory) and what overrides it, for the session, its planning, its
//! results and a study alike.

use crate::run::progress::Progress;
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

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
