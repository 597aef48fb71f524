//! Turns emu's per-packet logs (and Mahimahi's link logs) into the numbers
//! and pictures a study publishes: throughput, capacity and utilization,
//! one-way delay through the whole nested path and sojourn per shell,
//! percentiles, loss and drops by reason, CE and ECT(1) marks, queue
//! length, Jain's fairness index, and Pantheon's and Mahimahi's own
//! figures, as JSON, SVG and one HTML page.
//!
//! The layers, each standing only on those before it:
//!
//! - [`measures`]: accumulators in bounded memory (exact histograms, time
//!   series per bin, a link's capacity, queues of values per key).
//! - [`analysis`]: what the analysis is fed (`events`), one direction of
//!   one run accumulated from them (`direction`), Mahimahi's own figures,
//!   and what it gives back (`summary`).
//! - [`logs`]: the readers that turn emu's and Mahimahi's logs into events,
//!   Mahimahi's text format written from emu's records, TCP_INFO samples,
//!   and one run's files tied together (`run`).
//! - [`draw`]: self-contained SVG charts, and the same SVGs as PNG or PDF.
//! - [`pages`]: a shell run's report (its charts, `summary.json`,
//!   `index.html`) and a comparison of schemes.
//! - [`experiments`]: what `emu run` wrote: the results directory found,
//!   a run's flows and bottleneck series read, each experiment's page and
//!   a study's index drawn and laid out.

pub mod analysis;
pub mod draw;
pub mod experiments;
pub mod logs;
pub mod measures;
pub mod pages;

pub use analysis::events::{FlowMatch, FlowName, FlowSelection, Options};
pub use logs::run::{load, Run};
