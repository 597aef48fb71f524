//! What the analysis gives back: the figures of one direction (path,
//! Pantheon's three, per shell with Mahimahi's, per flow, fairness) and its
//! per-bin series, serialized as the report's JSON.

use crate::analysis::mahimahi_figures::MahimahiFigures;
use crate::measures::histogram::{Histogram, Rank};
pub use crate::measures::statistics::jain;
use emu_core::flow::FlowTuple;
use serde::Serialize;
use std::collections::BTreeMap;

/// Mean, extremes and percentiles (nearest rank) of a delay, in ms.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DelayStats {
    pub count: u64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl DelayStats {
    pub(crate) fn of(h: &Histogram) -> Option<DelayStats> {
        let p = h.percentiles(Rank::NearestRank, &[0.5, 0.95, 0.99]);
        Some(DelayStats {
            count: h.count(),
            mean_ms: h.mean()? / 1e6,
            min_ms: ms(h.min()?),
            p50_ms: ms(p[0]?),
            p95_ms: ms(p[1]?),
            p99_ms: ms(p[2]?),
            max_ms: ms(h.max()?),
        })
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Marks {
    pub ce: u64,
    pub ect1: u64,
    /// Marks per delivered packet.
    pub ce_per_delivered: Option<f64>,
    pub ect1_per_delivered: Option<f64>,
}

impl Marks {
    pub(crate) fn of(ce: u64, ect1: u64, delivered: u64) -> Marks {
        let rate = |n: u64| (delivered > 0).then(|| n as f64 / delivered as f64);
        Marks {
            ce,
            ect1,
            ce_per_delivered: rate(ce),
            ect1_per_delivered: rate(ect1),
        }
    }
}

/// Pantheon's three figures, as its analysis defines them.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PantheonSummary {
    /// Delivered bits over the span from the first delivery to the last.
    pub throughput_mbps: Option<f64>,
    /// One-way delay, numpy's `nearest` percentile (index 0.95·(n−1)
    /// rounded half to even).
    pub delay_p95_ms: Option<f64>,
    /// 1 − delivered bytes / arrived bytes.
    pub loss: Option<f64>,
}

/// The whole path of one direction: from the first shell to the last.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PathSummary {
    pub entry_shell: u8,
    pub exit_shell: u8,
    pub arrivals: u64,
    pub arrival_bytes: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped: u64,
    pub drops: BTreeMap<&'static str, u64>,
    /// Packets that had entered but neither left nor were dropped when the
    /// log ends (still queued or in flight at exit).
    pub in_flight_at_end: u64,
    /// Packets that left the path without having entered at its first
    /// shell (sent from between two shells); not in the other figures.
    pub entered_mid_path: u64,
    /// Dropped / (delivered + dropped), in packets: what the path lost of
    /// what it was done with. Packets still in flight when the log ends
    /// are not lost (`in_flight_at_end`); Pantheon's figure counts them.
    pub loss: Option<f64>,
    /// Delivered bits over the first-to-last delivery span (as Pantheon).
    pub throughput_mbps: Option<f64>,
    /// Delivered bits over the whole report window.
    pub window_throughput_mbps: Option<f64>,
    /// The time the flows were active: the bins from the earliest first
    /// delivery of the flows in Jain's index (of all shown flows where it
    /// takes none) to their latest last one, in s. The headline figures
    /// cover it, so a link idle while the run set up (or a ping went
    /// first) does not read as underused.
    pub active_from_s: Option<f64>,
    pub active_to_s: Option<f64>,
    /// Delivered bits (every flow's) over the active time.
    pub active_throughput_mbps: Option<f64>,
    /// The bottleneck's mean capacity over the active time.
    pub active_capacity_mbps: Option<f64>,
    /// The bottleneck's mean capacity over the window (the lower of its
    /// link and its queue's shaper).
    pub capacity_mbps: Option<f64>,
    /// Where the capacity comes from (see [`ShellSummary::capacity_source`]).
    pub capacity_source: Option<&'static str>,
    /// Active throughput / active capacity: the headline.
    pub utilization: Option<f64>,
    /// Window throughput / window capacity: the whole log, idle time included.
    pub window_utilization: Option<f64>,
    pub one_way_delay: Option<DelayStats>,
    pub marks: Marks,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QueueSummary {
    pub mean_bytes: f64,
    pub max_bytes: u64,
    pub mean_packets: f64,
    pub max_packets: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ShellSummary {
    pub shell: u8,
    pub description: String,
    pub arrivals: u64,
    pub departures: u64,
    pub departed_bytes: u64,
    pub drops: BTreeMap<&'static str, u64>,
    pub marks: Marks,
    /// Time in this shell's queue (departures).
    pub sojourn: Option<DelayStats>,
    /// Arrival to departure in this shell (queue, serialization and delay).
    pub transit: Option<DelayStats>,
    pub queue: QueueSummary,
    /// The lower of the link's rate or trace and the queue's shaper, mean
    /// over the window.
    pub capacity_mbps: Option<f64>,
    /// Which one set it: `link rate`, `link trace`, `queue shaper`, the
    /// link's and `and queue shaper` (the lower of the two in each bin),
    /// or `logged` (Mahimahi's delivery opportunities).
    pub capacity_source: Option<&'static str>,
    pub throughput_mbps: Option<f64>,
    pub utilization: Option<f64>,
    /// Mahimahi's graph figures for this shell, for shells with a bottleneck.
    pub mahimahi: Option<MahimahiFigures>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowSummary {
    /// The flow's id: its 5-tuple hash as the first shell saw it, in hex.
    pub flow: String,
    /// Protocol and 5-tuple as the first shell saw it (before any NAT),
    /// with how it left where a shell rewrote it; None for logs without
    /// flow records (older logs, Mahimahi's).
    pub name: Option<String>,
    pub tuple: Option<FlowTuple>,
    pub left_as: Option<FlowTuple>,
    pub arrivals: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped: u64,
    pub drops: BTreeMap<&'static str, u64>,
    pub first_delivery_s: Option<f64>,
    pub last_delivery_s: Option<f64>,
    /// Delivered bits over the flow's own span, first delivery to last (as
    /// Pantheon): what the flow got while it ran. Flows' figures over
    /// different spans do not add up.
    pub throughput_mbps: Option<f64>,
    /// Delivered bits over the whole report window: these add up to the
    /// direction's window throughput.
    pub window_throughput_mbps: Option<f64>,
    /// Delivered bits over the common window (see
    /// [`Fairness::common_from_s`]), where every flow in Jain's index is
    /// active:
    /// these add up to at most the capacity, and Jain's index takes them.
    pub common_window_throughput_mbps: Option<f64>,
    /// This flow's part of everything delivered in the common window.
    pub common_window_share: Option<f64>,
    pub loss: Option<f64>,
    pub one_way_delay: Option<DelayStats>,
    pub marks: Marks,
    /// Whether Jain's index takes this flow: it competes for the path (not
    /// a ping, not a stream of acknowledgements), or the user named it.
    pub in_fairness: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fairness {
    /// Flows the index is taken over (see [`FlowSummary::in_fairness`]).
    pub flows: usize,
    /// The common window: the bins from the latest first delivery of the
    /// flows in the index to the earliest last one (whole bins, so it starts at
    /// a bin's start and ends at a bin's end); None if the flows never
    /// were all active at once.
    pub common_from_s: Option<f64>,
    pub common_to_s: Option<f64>,
    /// Jain's index of the flows' throughputs over the common window.
    pub jain: Option<f64>,
    /// Jain's index of the flows' throughputs over their own spans
    /// (Pantheon's averages), for comparison with tools that report it.
    pub jain_over_own_spans: Option<f64>,
    /// Jain's index per bin over the flows active in it (between their
    /// first and last delivery), averaged over the bins where at least two
    /// of the index's flows are active (all bins with one flow in it).
    pub jain_mean_over_bins: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OtherFlows {
    pub count: usize,
    pub delivered_bytes: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DirectionSummary {
    pub direction: &'static str,
    pub from_s: f64,
    pub to_s: f64,
    pub bin_s: f64,
    pub path: PathSummary,
    pub pantheon: PantheonSummary,
    pub bottleneck_shell: Option<u8>,
    pub shells: Vec<ShellSummary>,
    pub flows: Vec<FlowSummary>,
    /// Flows left out by the flow selection.
    pub other_flows: OtherFlows,
    pub fairness: Fairness,
}

/// Per-bin series of one direction; times are bin starts in s.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DirectionSeries {
    pub direction: &'static str,
    pub time_s: Vec<f64>,
    pub throughput_mbps: Vec<f64>,
    pub ingress_mbps: Vec<f64>,
    pub capacity_mbps: Option<Vec<f64>>,
    /// One-way delay percentiles 5, 25, 50, 75, 95 per bin (None: no delivery).
    pub delay_bands_ms: Vec<Option<[f64; 5]>>,
    /// Sampled per-packet (time s, one-way delay ms) points, at most
    /// [`SAMPLE_POINTS`].
    pub delay_points: Vec<(f64, f64)>,
    pub delay_cdf_ms: Vec<(f64, f64)>,
    pub drops: Vec<u64>,
    pub ce_marks: Vec<u64>,
    pub ect1_marks: Vec<u64>,
    pub queue_shell: Option<u8>,
    pub queue_bytes_mean: Vec<f64>,
    pub queue_bytes_max: Vec<u64>,
    pub jain: Vec<Option<f64>>,
    pub flows: Vec<(String, Vec<f64>)>,
    /// The base delay each shell with a delay schedule logged (change
    /// records), as a step line of (time s, ms) points, by shell.
    pub base_delay_ms: Vec<(u8, Vec<(f64, f64)>)>,
}

pub const SAMPLE_POINTS: usize = 4000;
