//! Counts and delays of a set of packets, and the report's window with
//! its bins: what the direction's, its flows' and its shells' figures
//! are made of.

use crate::analysis::events::{Options, PathEvent, PathKind};
use crate::analysis::summary::Marks;
use crate::measures::histogram::Histogram;
use crate::measures::series::Bins;
use emu_core::log::{DropCounts, Mark};
use emu_core::Nanos;
use std::collections::BTreeMap;

pub(super) const NS_PER_S: f64 = 1e9;

/// Counts and delays of a set of packets (the whole direction or a flow).
#[derive(Debug, Clone)]
pub(super) struct Totals {
    pub(super) arrivals: u64,
    pub(super) arrival_bytes: u64,
    pub(super) delivered: u64,
    pub(super) delivered_bytes: u64,
    pub(super) drops: DropCounts,
    pub(super) dropped_bytes: u64,
    pub(super) ce: u64,
    pub(super) ect1: u64,
    pub(super) first_delivery: Option<Nanos>,
    pub(super) last_delivery: Nanos,
    pub(super) delay: Histogram,
    pub(super) delivered_bins: Bins,
}

impl Totals {
    pub(super) fn new() -> Totals {
        Totals {
            arrivals: 0,
            arrival_bytes: 0,
            delivered: 0,
            delivered_bytes: 0,
            drops: DropCounts::default(),
            dropped_bytes: 0,
            ce: 0,
            ect1: 0,
            first_delivery: None,
            last_delivery: 0,
            delay: Histogram::micros(),
            delivered_bins: Bins::default(),
        }
    }

    pub(super) fn add(&mut self, event: &PathEvent, bin: u32) {
        let bytes = event.bytes as u64;
        match event.kind {
            PathKind::Arrive => {
                self.arrivals += 1;
                self.arrival_bytes += bytes;
            }
            PathKind::Deliver { delay } => {
                self.delivered += 1;
                self.delivered_bytes += bytes;
                self.first_delivery.get_or_insert(event.time);
                self.last_delivery = event.time;
                self.delay.add(delay);
                self.delivered_bins.add(bin, bytes);
            }
            PathKind::Drop(reason) => {
                self.drops.add(reason);
                self.dropped_bytes += bytes;
            }
            PathKind::Mark(Mark::Ce) => self.ce += 1,
            PathKind::Mark(Mark::Ect1) => self.ect1 += 1,
        }
    }

    /// Pantheon's average throughput: delivered bits over the time from the
    /// first delivery to the last.
    pub(super) fn throughput_mbps(&self) -> Option<f64> {
        let first = self.first_delivery?;
        (self.last_delivery > first).then(|| {
            self.delivered_bytes as f64 * 8.0
                / ((self.last_delivery - first) as f64 / NS_PER_S)
                / 1e6
        })
    }

    pub(super) fn drops_by_reason(&self) -> BTreeMap<&'static str, u64> {
        self.drops.nonzero_by_name()
    }

    pub(super) fn dropped(&self) -> u64 {
        self.drops.total()
    }

    pub(super) fn marks(&self) -> Marks {
        Marks::of(self.ce, self.ect1, self.delivered)
    }

    /// Dropped of what was delivered or dropped: a packet the log ends on
    /// while it is still in flight (a run stops with packets on the wire)
    /// is neither, and counted lost it made a lossless path look lossy.
    pub(super) fn loss(&self) -> Option<f64> {
        let done = self.delivered + self.dropped();
        (done > 0).then(|| self.dropped() as f64 / done as f64)
    }
}

/// The report's window and its bins.
pub(super) struct Window {
    pub(super) from: Nanos,
    pub(super) to: Nanos,
    pub(super) bin: Nanos,
    pub(super) bins: usize,
}

impl Window {
    pub(super) fn new(options: &Options, end: Nanos) -> Window {
        let from = options.from;
        let to = options.to.map_or(end, |to| to.min(end)).max(from);
        let bin = options.bin;
        Window {
            from,
            to,
            bin,
            bins: ((to - from).div_ceil(bin) as usize).max(1),
        }
    }

    pub(super) fn seconds(&self) -> f64 {
        (self.to - self.from) as f64 / NS_PER_S
    }

    pub(super) fn bin_s(&self) -> f64 {
        self.bin as f64 / NS_PER_S
    }

    /// Width of bin `b` in s: the last one may end early, with the window.
    pub(super) fn width_s(&self, b: usize) -> f64 {
        if b + 1 == self.bins {
            (self.to - self.from - (self.bins as u64 - 1) * self.bin) as f64 / NS_PER_S
        } else {
            self.bin_s()
        }
    }

    /// Length in s of bins `first..=last`.
    pub(super) fn span_s(&self, first: usize, last: usize) -> f64 {
        (first..=last).map(|b| self.width_s(b)).sum()
    }

    /// Bytes per bin as Mbit/s, each over its bin's own width.
    pub(super) fn rates(&self, bytes: Vec<u64>) -> Vec<f64> {
        bytes
            .into_iter()
            .enumerate()
            .map(|(b, v)| v as f64 * 8.0 / self.width_s(b).max(1e-9) / 1e6)
            .collect()
    }
}
