//! Running a plan: the session over a grid's cells (`session`), the file
//! read and every cell planned first (`prepare`), what it was asked
//! (`options`), what it writes into the
//! results directory (`writing`), and a study of several files (`study`); one
//! repetition on real namespaces, its phases in order (`runner`), what
//! names it and how it fails (`repetition`); its links and topology
//! (`links`); the flows' control plane (`control`) and the programs behind
//! each kind of flow (`flows`, `wrappers`); emu's congestion controls in
//! the hosts (`congestion`); each link's accounting (`accounting`); the
//! flows' figures taken after the run (`measure`); whether it kept time
//! (`timing`); how far the session is and the time left (`progress`); and
//! the one place that spawns, signals and kills (`system`).

mod accounting;
pub mod congestion;
pub mod control;
pub mod flows;
pub mod links;
mod measure;
pub mod options;
pub mod pantheon;
mod prepare;
pub mod progress;
pub mod repetition;
mod resume;
pub mod runner;
pub mod session;
pub mod study;
pub mod system;
pub mod timing;
pub mod wrappers;
mod writing;
