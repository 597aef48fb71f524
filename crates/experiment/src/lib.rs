//! `emu run`: experiments on a dumbbell of hosts.
//!
//! An experiment file names hosts on two sides of one or more bottlenecks,
//! the links between them and the flows to run. The layers, each standing
//! only on those before it:
//!
//! - [`file`]: the experiment file (its schema, the cross-key checks, the
//!   plan with every default filled in, the sweep's grid, the units).
//! - [`results`]: what a run measured (per flow and per run, from the
//!   programs' output and the links' logs), merged across directories
//!   and compared across schemes.
//! - [`run`]: a session over the grid's cells, one repetition of one cell
//!   on real namespaces with emu's fabric, the flows' programs, and
//!   whether the run kept time.

pub mod file;
pub mod results;
pub mod run;
