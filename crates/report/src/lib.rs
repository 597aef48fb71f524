//! Turns emu's per-packet logs (and Mahimahi's link logs) into the numbers
//! and pictures a study publishes: throughput, capacity and utilization,
//! one-way delay through the whole nested path and sojourn per shell,
//! percentiles, loss and drops by reason, CE and ECT(1) marks, queue
//! length, Jain's fairness index, and Pantheon's and Mahimahi's own
//! figures, as JSON, SVG and one HTML page.
//!
//! Layers, each usable alone: readers ([`emu_reader`], [`mahimahi_reader`])
//! turn a log into events; [`analysis`] accumulates them in bounded memory
//! ([`histogram`], [`series`]); [`run`] ties a run's files together;
//! [`figures`], [`plot`] and [`output`] draw and write; [`render`] turns the
//! SVGs into PNG or PDF. What `emu run` wrote has pages of its own:
//! [`results_dir`] finds the experiments, [`run_flows`] and
//! [`bottleneck_series`] read a run, [`experiment_figures`],
//! [`experiment_page`] and [`study_index`] draw, [`experiment_report`]
//! lays the pages out; [`schemes`] draws a scheme comparison (Pantheon's
//! throughput against delay, an ellipse per scheme).

pub mod analysis;
pub mod bottleneck_series;
pub mod capacity;
pub mod emu_reader;
pub mod events;
pub mod experiment_figures;
pub mod experiment_page;
pub mod experiment_report;
pub mod figures;
pub mod histogram;
mod keyed_fifo;
pub mod mahimahi_figures;
pub mod mahimahi_reader;
pub mod mahimahi_writer;
pub mod output;
pub mod plot;
pub mod render;
pub mod results_dir;
pub mod run;
pub mod run_flows;
pub mod schemes;
pub mod series;
pub mod study_index;
pub mod summary;
pub mod tcp;

pub use events::{FlowMatch, FlowName, FlowSelection, Options};
pub use run::{load, Run};
