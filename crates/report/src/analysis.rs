//! The metrics of one direction of one run, accumulated from a
//! time-ordered stream of events in memory bounded by the run's length
//! and its number of flows, never by its number of packets.
//!
//! Two streams feed it. *Path* events follow a packet through the whole
//! nested path: it arrives at the first shell, is delivered by the last
//! (with its one-way delay through every shell) or is dropped by one of
//! them. *Shell* events are one shell's view: its queue, its sojourn
//! times, its capacity. The readers ([`crate::emu_input`],
//! [`crate::mahimahi_input`]) turn their log formats into both.

use crate::histogram::{Histogram, Rank};
use crate::mahimahi_figures::{MahimahiFigures, MmAccumulator};
use crate::series::{Bins, Step};
use emu_core::log::{Direction, DropReason, Mark};
use emu_core::Nanos;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const NS_PER_S: f64 = 1e9;

/// What the user asked the report to cover.
#[derive(Debug, Clone)]
pub struct Options {
    /// Width of a time bin.
    pub bin: Nanos,
    /// Only events at or after this time (from the run's start) count.
    pub from: Nanos,
    /// Only events before this time count.
    pub to: Option<Nanos>,
    pub flows: FlowSelection,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            bin: 100_000_000,
            from: 0,
            to: None,
            flows: FlowSelection::Significant,
        }
    }
}

/// Which flows get their own rows, lines and a place in Jain's index.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowSelection {
    /// Flows that carried at least 1% of the direction's delivered bytes:
    /// the bulk flows of an experiment, without the control connections
    /// and name lookups that would drag a fairness index down.
    Significant,
    All,
    /// The N flows that delivered the most bytes.
    Top(usize),
    /// These flow ids.
    Ids(Vec<u32>),
}

/// Where a shell's capacity comes from.
#[derive(Debug, Clone)]
pub enum Capacity {
    /// No bottleneck (a delay or loss shell), or not recorded.
    Unknown,
    /// A constant rate in bit/s.
    Rate(u64),
    /// A delivery trace starting at `start` (from the report's time 0,
    /// negative for a shell that started before it).
    Trace {
        trace: Arc<link::Trace>,
        repeat: bool,
        start: i64,
    },
    /// Delivery opportunities that appear in the log itself (Mahimahi's `#`).
    Logged,
}

#[derive(Debug, Clone)]
pub struct ShellInfo {
    pub shell: u8,
    pub description: String,
    pub capacity: Capacity,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PathKind {
    /// Entered the path at its first shell.
    Arrive,
    /// Left the path's last shell, `delay` after it entered.
    Deliver {
        delay: Nanos,
    },
    Drop(DropReason),
    Mark(Mark),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathEvent {
    /// Time from the run's start.
    pub time: Nanos,
    pub flow: u32,
    /// IP bytes.
    pub bytes: u32,
    pub kind: PathKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShellKind {
    Arrive,
    /// Only the queue changed.
    Enqueue,
    /// `arrived`: when the packet arrived at this shell, if known.
    Depart {
        sojourn: Nanos,
        arrived: Option<Nanos>,
    },
    Drop(DropReason),
    Mark(Mark),
    /// A delivery opportunity of `bytes` (a [`Capacity::Logged`] shell).
    Opportunity,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShellEvent {
    pub time: Nanos,
    pub shell: u8,
    pub bytes: u32,
    /// The shell's queue after the event (bytes, packets), if recorded.
    pub queue: Option<(u32, u32)>,
    pub kind: ShellKind,
}

/// Counts and delays of a set of packets (the whole direction or a flow).
#[derive(Debug, Clone)]
struct Totals {
    arrivals: u64,
    arrival_bytes: u64,
    delivered: u64,
    delivered_bytes: u64,
    drops: [u64; 8],
    dropped_bytes: u64,
    ce: u64,
    ect1: u64,
    first_delivery: Option<Nanos>,
    last_delivery: Nanos,
    delay: Histogram,
    delivered_bins: Bins,
}

impl Totals {
    fn new() -> Totals {
        Totals {
            arrivals: 0,
            arrival_bytes: 0,
            delivered: 0,
            delivered_bytes: 0,
            drops: [0; 8],
            dropped_bytes: 0,
            ce: 0,
            ect1: 0,
            first_delivery: None,
            last_delivery: 0,
            delay: Histogram::micros(),
            delivered_bins: Bins::default(),
        }
    }

    fn add(&mut self, event: &PathEvent, bin: u32) {
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
                self.drops[reason as usize] += 1;
                self.dropped_bytes += bytes;
            }
            PathKind::Mark(Mark::Ce) => self.ce += 1,
            PathKind::Mark(Mark::Ect1) => self.ect1 += 1,
        }
    }

    /// Pantheon's average throughput: delivered bits over the time from the
    /// first delivery to the last.
    fn throughput_mbps(&self) -> Option<f64> {
        let first = self.first_delivery?;
        (self.last_delivery > first).then(|| {
            self.delivered_bytes as f64 * 8.0
                / ((self.last_delivery - first) as f64 / NS_PER_S)
                / 1e6
        })
    }

    fn drops_by_reason(&self) -> BTreeMap<&'static str, u64> {
        drops_by_reason(&self.drops)
    }

    fn dropped(&self) -> u64 {
        self.drops.iter().sum()
    }

    fn marks(&self) -> Marks {
        Marks::of(self.ce, self.ect1, self.delivered)
    }

    fn loss(&self) -> Option<f64> {
        (self.arrivals > 0).then(|| 1.0 - self.delivered as f64 / self.arrivals as f64)
    }
}

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

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl DelayStats {
    fn of(h: &Histogram) -> Option<DelayStats> {
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
    fn of(ce: u64, ect1: u64, delivered: u64) -> Marks {
        let rate = |n: u64| (delivered > 0).then(|| n as f64 / delivered as f64);
        Marks {
            ce,
            ect1,
            ce_per_delivered: rate(ce),
            ect1_per_delivered: rate(ect1),
        }
    }
}

/// Drop counts indexed by reason, as a name → count map of the nonzero ones.
fn drops_by_reason(drops: &[u64; 8]) -> BTreeMap<&'static str, u64> {
    DropReason::ALL
        .iter()
        .map(|&r| (r.name(), drops[r as usize]))
        .filter(|&(_, n)| n > 0)
        .collect()
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
    /// 1 − delivered/arrived, in packets.
    pub loss: Option<f64>,
    /// Delivered bits over the first-to-last delivery span (as Pantheon).
    pub throughput_mbps: Option<f64>,
    /// Delivered bits over the whole report window.
    pub window_throughput_mbps: Option<f64>,
    /// The bottleneck's mean capacity over the window, and delivered / capacity.
    pub capacity_mbps: Option<f64>,
    pub utilization: Option<f64>,
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
    pub capacity_mbps: Option<f64>,
    pub throughput_mbps: Option<f64>,
    pub utilization: Option<f64>,
    /// Mahimahi's graph figures for this shell, for shells with a bottleneck.
    pub mahimahi: Option<MahimahiFigures>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowSummary {
    /// The flow's 5-tuple hash as the first shell saw it, in hex.
    pub flow: String,
    pub arrivals: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped: u64,
    pub drops: BTreeMap<&'static str, u64>,
    pub first_delivery_s: Option<f64>,
    pub last_delivery_s: Option<f64>,
    pub throughput_mbps: Option<f64>,
    pub loss: Option<f64>,
    pub one_way_delay: Option<DelayStats>,
    pub marks: Marks,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fairness {
    /// Flows the index is taken over.
    pub flows: usize,
    /// Jain's index of the flows' average throughputs.
    pub jain: Option<f64>,
    /// Jain's index per bin over the flows active in it (between their
    /// first and last delivery), averaged over the bins.
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
}

pub const SAMPLE_POINTS: usize = 4000;

/// A fixed-size uniform sample of a stream (reservoir sampling with a
/// fixed seed, so the same log always gives the same picture).
#[derive(Debug, Clone)]
struct Reservoir {
    seen: u64,
    state: u64,
    points: Vec<(Nanos, Nanos)>,
}

impl Reservoir {
    fn new() -> Reservoir {
        Reservoir {
            seen: 0,
            state: 0x9E37_79B9_7F4A_7C15,
            points: Vec::new(),
        }
    }

    fn offer(&mut self, point: (Nanos, Nanos)) {
        self.seen += 1;
        if self.points.len() < SAMPLE_POINTS {
            self.points.push(point);
            return;
        }
        // xorshift64*: plenty for choosing which points to draw.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let slot = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) % self.seen;
        if let Some(p) = self.points.get_mut(slot as usize) {
            *p = point;
        }
    }
}

struct ShellAcc {
    info: ShellInfo,
    arrivals: u64,
    departures: u64,
    departed_bytes: u64,
    drops: [u64; 8],
    ce: u64,
    ect1: u64,
    sojourn: Histogram,
    transit: Histogram,
    queue_bytes: Step,
    queue_packets: Step,
    departed_bins: Bins,
    logged_capacity: Bins,
    mahimahi: MmAccumulator,
}

/// The accumulator of one direction.
/// Most bins in one series of a report: more than a day at the default
/// 100 ms. A log whose times jump further (damaged, or made to hurt) would
/// otherwise have the report allocate without bound; events beyond are
/// counted and said, and a wider `--bin` or a `--to` covers them.
pub const MAX_BINS: u64 = 1 << 20;

pub struct DirectionAnalysis {
    direction: Direction,
    options: Options,
    entry_shell: u8,
    exit_shell: u8,
    total: Totals,
    flows: HashMap<u32, Totals>,
    ingress_bins: Bins,
    drop_bins: Bins,
    ce_bins: Bins,
    ect1_bins: Bins,
    band_bin: Option<u32>,
    band_histogram: Histogram,
    bands: Vec<(u32, [f64; 5])>,
    sample: Reservoir,
    shells: Vec<ShellAcc>,
    end: Nanos,
    /// Events offered, in the window or not.
    seen: u64,
    beyond_horizon: u64,
}

/// Packets a reader could not see through the path, handed to
/// [`DirectionAnalysis::finish`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unmatched {
    /// Entered the path and neither left nor were dropped by the end.
    pub in_flight: u64,
    /// Left the path's last shell without having entered at its first:
    /// sent from a namespace between two shells.
    pub entered_mid_path: u64,
}

impl DirectionAnalysis {
    /// `shells` in any order; `entry_shell`/`exit_shell` are where packets
    /// of this direction enter and leave the path.
    pub fn new(
        direction: Direction,
        options: Options,
        shells: Vec<ShellInfo>,
        entry_shell: u8,
        exit_shell: u8,
    ) -> DirectionAnalysis {
        let bin = options.bin.max(1);
        let shells = shells
            .into_iter()
            .map(|info| ShellAcc {
                info,
                arrivals: 0,
                departures: 0,
                departed_bytes: 0,
                drops: [0; 8],
                ce: 0,
                ect1: 0,
                sojourn: Histogram::micros(),
                transit: Histogram::micros(),
                queue_bytes: Step::new(bin),
                queue_packets: Step::new(bin),
                departed_bins: Bins::default(),
                logged_capacity: Bins::default(),
                mahimahi: MmAccumulator::default(),
            })
            .collect();
        DirectionAnalysis {
            direction,
            options: Options { bin, ..options },
            entry_shell,
            exit_shell,
            total: Totals::new(),
            flows: HashMap::new(),
            ingress_bins: Bins::default(),
            drop_bins: Bins::default(),
            ce_bins: Bins::default(),
            ect1_bins: Bins::default(),
            band_bin: None,
            band_histogram: Histogram::micros(),
            bands: Vec::new(),
            sample: Reservoir::new(),
            shells,
            end: 0,
            seen: 0,
            beyond_horizon: 0,
        }
    }

    /// True if no event was ever offered (a direction that carried nothing).
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// The first time the report has no bin for: [`MAX_BINS`] bins after
    /// the window's start.
    fn horizon(&self) -> Nanos {
        self.options
            .from
            .saturating_add(MAX_BINS.saturating_mul(self.options.bin))
    }

    /// Events that came after the horizon and were left out.
    pub fn beyond_horizon(&self) -> u64 {
        self.beyond_horizon
    }

    /// Takes note of an event at `time`; its bin, or None outside the
    /// window or beyond the horizon (counted).
    fn bin(&mut self, time: Nanos) -> Option<u32> {
        self.seen += 1;
        if time >= self.horizon() {
            self.beyond_horizon += 1;
            return None;
        }
        self.end = self.end.max(time);
        if time < self.options.from || self.options.to.is_some_and(|to| time >= to) {
            return None;
        }
        Some(((time - self.options.from) / self.options.bin) as u32)
    }

    pub fn path(&mut self, event: PathEvent) {
        let Some(bin) = self.bin(event.time) else {
            return;
        };
        self.total.add(&event, bin);
        self.flows
            .entry(event.flow)
            .or_insert_with(Totals::new)
            .add(&event, bin);
        match event.kind {
            PathKind::Arrive => self.ingress_bins.add(bin, event.bytes as u64),
            PathKind::Deliver { delay } => {
                if self.band_bin != Some(bin) {
                    self.close_band();
                    self.band_bin = Some(bin);
                }
                self.band_histogram.add(delay);
                self.sample.offer((event.time - self.options.from, delay));
            }
            PathKind::Drop(_) => self.drop_bins.add(bin, 1),
            PathKind::Mark(Mark::Ce) => self.ce_bins.add(bin, 1),
            PathKind::Mark(Mark::Ect1) => self.ect1_bins.add(bin, 1),
        }
    }

    fn close_band(&mut self) {
        if let Some(bin) = self.band_bin.take() {
            let p = self
                .band_histogram
                .percentiles(Rank::NearestRank, &[0.05, 0.25, 0.5, 0.75, 0.95]);
            let band = [0, 1, 2, 3, 4].map(|i| ms(p[i].unwrap_or(0)));
            self.bands.push((bin, band));
            self.band_histogram.clear();
        }
    }

    pub fn shell(&mut self, event: ShellEvent) {
        let Some(bin) = self.bin(event.time) else {
            return;
        };
        let from = self.options.from;
        let Some(acc) = self.shells.iter_mut().find(|s| s.info.shell == event.shell) else {
            return;
        };
        if let Some((bytes, packets)) = event.queue {
            acc.queue_bytes.set(event.time - from, bytes as u64);
            acc.queue_packets.set(event.time - from, packets as u64);
        }
        let bytes = event.bytes as u64;
        match event.kind {
            ShellKind::Arrive => {
                acc.arrivals += 1;
                acc.mahimahi.arrival(event.time);
            }
            ShellKind::Depart { sojourn, arrived } => {
                acc.departures += 1;
                acc.departed_bytes += bytes;
                acc.departed_bins.add(bin, bytes);
                acc.sojourn.add(sojourn);
                if let Some(arrived) = arrived {
                    acc.transit.add(event.time.saturating_sub(arrived));
                }
                acc.mahimahi.departure(event.time, event.bytes, arrived);
            }
            ShellKind::Enqueue => {}
            ShellKind::Drop(reason) => acc.drops[reason as usize] += 1,
            ShellKind::Mark(Mark::Ce) => acc.ce += 1,
            ShellKind::Mark(Mark::Ect1) => acc.ect1 += 1,
            ShellKind::Opportunity => {
                acc.logged_capacity.add(bin, bytes);
                acc.mahimahi.opportunity(event.time, event.bytes);
            }
        }
    }

    /// The report, with `end` the time the run ended (the last record of
    /// any direction) and `in_flight` the packets the reader saw enter the
    /// path without leaving it.
    pub fn finish(
        mut self,
        end: Nanos,
        unmatched: Unmatched,
    ) -> (DirectionSummary, DirectionSeries) {
        self.close_band();
        let end = end.max(self.end).min(self.horizon());
        let from = self.options.from;
        let to = self.options.to.map_or(end, |to| to.min(end)).max(from);
        let bin = self.options.bin;
        let bins = ((to - from).div_ceil(bin) as usize).max(1);
        let window_s = (to - from) as f64 / NS_PER_S;
        let bin_s = bin as f64 / NS_PER_S;
        // The last bin may end early, with the window: rates use its width.
        let last_bin_s = (to - from - (bins as u64 - 1) * bin) as f64 / NS_PER_S;
        let width_s = |b: usize| if b + 1 == bins { last_bin_s } else { bin_s };
        let rates = |bytes: Vec<u64>| -> Vec<f64> {
            bytes
                .into_iter()
                .enumerate()
                .map(|(b, v)| v as f64 * 8.0 / width_s(b).max(1e-9) / 1e6)
                .collect()
        };

        let shells: Vec<ShellParts> = self
            .shells
            .into_iter()
            .map(|acc| shell_summary(acc, from, to, bins, bin))
            .collect();
        // The bottleneck: the shell with the least capacity.
        let bottleneck = shells
            .iter()
            .filter_map(|(s, _, _)| Some((s.shell, s.capacity_mbps?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(shell, _)| shell);
        let capacity_bytes = shells
            .iter()
            .find(|(s, _, _)| Some(s.shell) == bottleneck)
            .and_then(|(_, c, _)| c.clone());
        let capacity_mbps = capacity_bytes
            .as_ref()
            .map(|c| c.iter().sum::<u64>() as f64 * 8.0 / window_s / 1e6);
        let window_throughput =
            (window_s > 0.0).then(|| self.total.delivered_bytes as f64 * 8.0 / window_s / 1e6);
        // The queue worth plotting: the bottleneck's, else the deepest.
        let queue_shell = bottleneck.or_else(|| {
            shells
                .iter()
                .max_by_key(|(s, _, _)| s.queue.max_bytes)
                .map(|(s, _, _)| s.shell)
        });
        let (queue_mean, queue_max) = shells
            .iter()
            .find(|(s, _, _)| Some(s.shell) == queue_shell)
            .map(|(_, _, q)| q.clone())
            .unwrap_or_default();

        let path = PathSummary {
            entry_shell: self.entry_shell,
            exit_shell: self.exit_shell,
            arrivals: self.total.arrivals,
            arrival_bytes: self.total.arrival_bytes,
            delivered: self.total.delivered,
            delivered_bytes: self.total.delivered_bytes,
            dropped: self.total.dropped(),
            drops: self.total.drops_by_reason(),
            in_flight_at_end: unmatched.in_flight,
            entered_mid_path: unmatched.entered_mid_path,
            loss: self.total.loss(),
            throughput_mbps: self.total.throughput_mbps(),
            window_throughput_mbps: window_throughput,
            capacity_mbps,
            utilization: window_throughput
                .zip(capacity_mbps)
                .filter(|&(_, c)| c > 0.0)
                .map(|(t, c)| t / c),
            one_way_delay: DelayStats::of(&self.total.delay),
            marks: self.total.marks(),
        };
        let pantheon = PantheonSummary {
            throughput_mbps: self.total.throughput_mbps(),
            delay_p95_ms: self
                .total
                .delay
                .percentile(Rank::NumpyNearest, 0.95)
                .map(ms),
            loss: (self.total.arrival_bytes > 0)
                .then(|| 1.0 - self.total.delivered_bytes as f64 / self.total.arrival_bytes as f64),
        };

        // Flows, biggest first; the selection decides who is shown.
        let mut flows: Vec<(u32, Totals)> = self.flows.into_iter().collect();
        flows.sort_by(|a, b| {
            b.1.delivered_bytes
                .cmp(&a.1.delivered_bytes)
                .then(a.0.cmp(&b.0))
        });
        let total_bytes = self.total.delivered_bytes;
        let selected: Vec<bool> = flows
            .iter()
            .enumerate()
            .map(|(rank, (id, t))| match &self.options.flows {
                FlowSelection::All => true,
                FlowSelection::Significant => {
                    t.delivered_bytes > 0 && t.delivered_bytes * 100 >= total_bytes
                }
                FlowSelection::Top(n) => rank < *n,
                FlowSelection::Ids(ids) => ids.contains(id),
            })
            .collect();
        let mut flow_rows = Vec::new();
        let mut flow_lines = Vec::new();
        let mut other = OtherFlows {
            count: 0,
            delivered_bytes: 0,
        };
        let mut shares = Vec::new();
        let mut active_bins = Vec::new();
        for ((id, t), chosen) in flows.iter().zip(&selected) {
            if !chosen {
                other.count += 1;
                other.delivered_bytes += t.delivered_bytes;
                continue;
            }
            let name = format!("{id:08x}");
            let seconds = |ns: Nanos| (ns - from) as f64 / NS_PER_S;
            flow_rows.push(FlowSummary {
                flow: name.clone(),
                arrivals: t.arrivals,
                delivered: t.delivered,
                delivered_bytes: t.delivered_bytes,
                dropped: t.dropped(),
                drops: t.drops_by_reason(),
                first_delivery_s: t.first_delivery.map(seconds),
                last_delivery_s: t.first_delivery.map(|_| seconds(t.last_delivery)),
                throughput_mbps: t.throughput_mbps(),
                loss: t.loss(),
                one_way_delay: DelayStats::of(&t.delay),
                marks: t.marks(),
            });
            let dense = t.delivered_bins.dense(bins);
            if let Some(tput) = t.throughput_mbps() {
                shares.push(tput);
            }
            if let Some(span) = t.delivered_bins.span() {
                active_bins.push((span, dense.clone()));
            }
            flow_lines.push((name, rates(dense)));
        }
        // Jain's index per bin over the flows active in that bin.
        let jain_bins: Vec<Option<f64>> = (0..bins)
            .map(|b| {
                let rates = active_bins
                    .iter()
                    .filter(|((first, last), _)| (*first as usize..=*last as usize).contains(&b))
                    .map(|(_, dense)| dense[b] as f64);
                jain(rates)
            })
            .collect();
        let defined: Vec<f64> = jain_bins.iter().flatten().copied().collect();
        let fairness = Fairness {
            flows: flow_rows.len(),
            jain: jain(shares.iter().copied()),
            jain_mean_over_bins: (!defined.is_empty())
                .then(|| defined.iter().sum::<f64>() / defined.len() as f64),
        };

        let mut bands = vec![None; bins];
        for (b, band) in self.bands {
            if let Some(slot) = bands.get_mut(b as usize) {
                *slot = Some(band);
            }
        }
        let mut points: Vec<(f64, f64)> = self
            .sample
            .points
            .iter()
            .map(|&(t, d)| (t as f64 / NS_PER_S, ms(d)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let series = DirectionSeries {
            direction: self.direction.name(),
            time_s: (0..bins).map(|b| b as f64 * bin_s).collect(),
            throughput_mbps: rates(self.total.delivered_bins.dense(bins)),
            ingress_mbps: rates(self.ingress_bins.dense(bins)),
            capacity_mbps: capacity_bytes.map(rates),
            delay_bands_ms: bands,
            delay_points: points,
            delay_cdf_ms: self
                .total
                .delay
                .cdf(400)
                .into_iter()
                .map(|(v, f)| (ms(v), f))
                .collect(),
            drops: self.drop_bins.dense(bins),
            ce_marks: self.ce_bins.dense(bins),
            ect1_marks: self.ect1_bins.dense(bins),
            queue_shell,
            queue_bytes_mean: queue_mean,
            queue_bytes_max: queue_max,
            jain: jain_bins,
            flows: flow_lines,
        };
        let summary = DirectionSummary {
            direction: self.direction.name(),
            from_s: from as f64 / NS_PER_S,
            to_s: to as f64 / NS_PER_S,
            bin_s,
            path,
            pantheon,
            bottleneck_shell: bottleneck,
            shells: shells.into_iter().map(|(s, _, _)| s).collect(),
            flows: flow_rows,
            other_flows: other,
            fairness,
        };
        (summary, series)
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²), None without a positive value.
pub fn jain(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut n, mut sum, mut squares) = (0usize, 0.0, 0.0);
    for x in values {
        n += 1;
        sum += x;
        squares += x * x;
    }
    (n > 0 && squares > 0.0).then(|| sum * sum / (n as f64 * squares))
}

/// Capacity in bytes per bin over the window, if the shell has one.
fn capacity_bins(
    acc: &ShellAcc,
    from: Nanos,
    to: Nanos,
    bins: usize,
    bin: Nanos,
) -> Option<Vec<u64>> {
    match &acc.info.capacity {
        Capacity::Unknown => None,
        Capacity::Logged => Some(acc.logged_capacity.dense(bins)),
        Capacity::Rate(bps) => Some(
            (0..bins as u64)
                .map(|b| {
                    let start = from + b * bin;
                    let stop = (start + bin).min(to);
                    (*bps as u128 * stop.saturating_sub(start) as u128 / 8 / 1_000_000_000) as u64
                })
                .collect(),
        ),
        Capacity::Trace {
            trace,
            repeat,
            start,
        } => {
            let mut out = vec![0u64; bins];
            for_each_opportunity(trace, *repeat, *start, from, to, |t, bytes| {
                out[((t - from) / bin) as usize] += bytes as u64;
            });
            Some(out)
        }
    }
}

/// Calls `f(time, bytes)` for every opportunity of a trace started at
/// `start` that falls in `[from, to)`.
pub(crate) fn for_each_opportunity(
    trace: &link::Trace,
    repeat: bool,
    start: i64,
    from: Nanos,
    to: Nanos,
    mut f: impl FnMut(Nanos, u32),
) {
    let period = trace.period() as i64;
    let (from_i, to_i) = (from as i64, to as i64);
    let first_lap = if repeat {
        (from_i - start).max(0) / period
    } else {
        0
    };
    for lap in first_lap.. {
        if !repeat && lap > 0 {
            break;
        }
        let base = start + lap * period;
        if base >= to_i {
            break;
        }
        for i in 0..trace.len() {
            let (offset, bytes) = trace.opportunity(i);
            let t = base + offset as i64;
            if t >= to_i {
                break;
            }
            if t >= from_i {
                f(t as Nanos, bytes);
            }
        }
    }
}

type ShellParts = (ShellSummary, Option<Vec<u64>>, (Vec<f64>, Vec<u64>));

fn shell_summary(acc: ShellAcc, from: Nanos, to: Nanos, bins: usize, bin: Nanos) -> ShellParts {
    let window_s = (to - from) as f64 / NS_PER_S;
    let capacity = capacity_bins(&acc, from, to, bins, bin);
    let capacity_mbps = capacity
        .as_ref()
        .map(|c| c.iter().sum::<u64>() as f64 * 8.0 / window_s / 1e6);
    let throughput = (window_s > 0.0).then(|| acc.departed_bytes as f64 * 8.0 / window_s / 1e6);
    let mahimahi = match &acc.info.capacity {
        Capacity::Unknown => None,
        capacity => acc.mahimahi.figures(capacity),
    };
    let (bytes_mean, bytes_max) = acc.queue_bytes.finish(to - from, bins);
    let (packets_mean, packets_max) = acc.queue_packets.finish(to - from, bins);
    let time_mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let summary = ShellSummary {
        shell: acc.info.shell,
        description: acc.info.description.clone(),
        arrivals: acc.arrivals,
        departures: acc.departures,
        departed_bytes: acc.departed_bytes,
        drops: drops_by_reason(&acc.drops),
        marks: Marks::of(acc.ce, acc.ect1, acc.departures),
        sojourn: DelayStats::of(&acc.sojourn),
        transit: DelayStats::of(&acc.transit),
        queue: QueueSummary {
            mean_bytes: time_mean(&bytes_mean),
            max_bytes: bytes_max.iter().copied().max().unwrap_or(0),
            mean_packets: time_mean(&packets_mean),
            max_packets: packets_max.iter().copied().max().unwrap_or(0),
        },
        capacity_mbps,
        throughput_mbps: throughput,
        utilization: throughput
            .zip(capacity_mbps)
            .filter(|&(_, c)| c > 0.0)
            .map(|(t, c)| t / c),
        mahimahi,
    };
    (summary, capacity, (bytes_mean, bytes_max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_opportunities_are_placed_from_the_shell_start() {
        const MS: Nanos = 1_000_000;
        let trace = link::Trace::parse("5\n10\n").unwrap();
        let times = |repeat, start: i64| {
            let mut out = Vec::new();
            for_each_opportunity(&trace, repeat, start, 0, 20 * MS, |t, _| out.push(t / MS));
            out
        };
        // Started 3 ms before time 0: opportunities at 2, 7, 12, 17 ms.
        assert_eq!(times(true, -3 * (MS as i64)), vec![2, 7, 12, 17]);
        assert_eq!(times(false, -3 * (MS as i64)), vec![2, 7]);
        assert_eq!(times(true, 4 * MS as i64), vec![9, 14, 19]);
    }
}
