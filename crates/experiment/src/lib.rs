//! `emu run`: experiments on a dumbbell of hosts.
//!
//! An experiment file names hosts on two sides of one or more bottlenecks,
//! the links between them and the flows to run; [`config`] reads and
//! checks it, [`sweep`] makes a grid of cells from its lists, [`runner`]
//! runs one repetition of one cell on real namespaces with emu's fabric,
//! [`results`] turns what happened into the numbers papers print, and
//! [`timing`] says whether the run kept time.

pub mod config;
pub mod congestion;
pub mod flow_paths;
pub mod flows;
pub mod marks;
pub mod merge;
pub mod pantheon;
pub mod results;
mod resume;
pub mod runner;
pub mod schemes;
pub mod session;
pub mod sweep;
pub mod system;
pub mod timing;
pub mod units;
pub mod wrappers;
