//! Reads emu's per-packet logs. This first version counts, per shell and
//! direction, what happened to the packets; the full report (throughput,
//! delay percentiles, fairness, plots) builds on the same streaming reader.

pub mod mahimahi;
