//! The metrics of one direction of one run, accumulated from a
//! time-ordered stream of events in memory bounded by the run's length
//! and its number of flows, never by its number of packets.
//!
//! The readers ([`crate::logs::emu_reader`], [`crate::logs::mahimahi_reader`]) feed it
//! the events of [`crate::analysis::events`]; [`DirectionAnalysis::finish`] gives
//! back the figures and series of [`crate::analysis::summary`], in three steps: the
//! path, the flows with their fairness, and the per-bin series.

use super::flows::*;
use super::shells::*;
use super::totals::*;
use crate::analysis::events::{
    FlowName, Options, PathEvent, PathKind, ShellEvent, ShellInfo, ShellKind, Unmatched,
};
use crate::analysis::mahimahi_figures::MmAccumulator;
use crate::analysis::summary::{
    ms, DelayStats, DirectionSeries, DirectionSummary, PantheonSummary, PathSummary, SAMPLE_POINTS,
};
use crate::measures::histogram::{Histogram, Rank};
use crate::measures::series::{Bins, Step};
use emu_core::log::{Change, Direction, DropCounts, Mark};
use emu_core::Nanos;
use std::collections::HashMap;

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
    /// Flow names, by id, from the log's flow records.
    names: HashMap<u32, FlowName>,
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
                drops: DropCounts::default(),
                ce: 0,
                ect1: 0,
                sojourn: Histogram::micros(),
                transit: Histogram::micros(),
                queue_bytes: Step::new(bin),
                queue_packets: Step::new(bin),
                departed_bins: Bins::default(),
                logged_capacity: Bins::default(),
                mahimahi: MmAccumulator::default(),
                rate_changes: Vec::new(),
                outages: Vec::new(),
                delay_changes: Vec::new(),
            })
            .collect();
        DirectionAnalysis {
            direction,
            options: Options { bin, ..options },
            entry_shell,
            exit_shell,
            total: Totals::new(),
            flows: HashMap::new(),
            names: HashMap::new(),
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
    /// Gives flows their names (protocol and 5-tuple), by id.
    pub fn name_flows(&mut self, names: HashMap<u32, FlowName>) {
        self.names = names;
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

    /// A change of the path's parameters that `shell` logged at `time`
    /// (report time): the report draws the rate and delay the link had.
    pub fn change(&mut self, shell: u8, time: Nanos, change: Change, value: u64) {
        let Some(acc) = self.shells.iter_mut().find(|s| s.info.shell == shell) else {
            return;
        };
        match change {
            Change::Rate => acc.rate_changes.push((time, value)),
            Change::OutageStart => acc.outages.push((time, true)),
            Change::OutageEnd => acc.outages.push((time, false)),
            Change::Delay => acc.delay_changes.push((time, value)),
            Change::LossState
            | Change::Queue
            | Change::Loss
            | Change::Jitter
            | Change::QueueParameters => {}
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
            ShellKind::Drop(reason) => acc.drops.add(reason),
            ShellKind::Mark(Mark::Ce) => acc.ce += 1,
            ShellKind::Mark(Mark::Ect1) => acc.ect1 += 1,
            ShellKind::Opportunity => {
                acc.logged_capacity.add(bin, bytes);
                acc.mahimahi.opportunity(event.time, event.bytes);
            }
        }
    }

    /// The report, with `end` the time the run ended (the last record of
    /// any direction) and `unmatched` the packets the reader could not
    /// follow through the path.
    pub fn finish(
        mut self,
        end: Nanos,
        unmatched: Unmatched,
    ) -> (DirectionSummary, DirectionSeries) {
        self.close_band();
        let window = Window::new(&self.options, end.max(self.end).min(self.horizon()));
        let base_delays = self
            .shells
            .iter()
            .filter(|acc| !acc.delay_changes.is_empty())
            .map(|acc| (acc.info.shell, delay_steps(&acc.delay_changes, &window)))
            .collect();
        let shells: Vec<ShellParts> = std::mem::take(&mut self.shells)
            .into_iter()
            .map(|acc| shell_summary(acc, &window))
            .collect();
        let bottleneck = Bottleneck::of(&shells);
        let flows = flows_and_fairness(
            std::mem::take(&mut self.flows),
            &self.names,
            &self.options.flows,
            &self.total,
            &window,
        );
        let path = self.path_summary(&window, &bottleneck, flows.active, unmatched);
        let mut series = self.series(&window, bottleneck.clone(), &flows);
        series.base_delay_ms = base_delays;
        let summary = DirectionSummary {
            direction: self.direction.name(),
            from_s: window.from as f64 / NS_PER_S,
            to_s: window.to as f64 / NS_PER_S,
            bin_s: window.bin_s(),
            path,
            pantheon: self.pantheon(),
            bottleneck_shell: bottleneck.shell,
            shells: shells.into_iter().map(|(s, _, _)| s).collect(),
            flows: flows.rows,
            other_flows: flows.other,
            fairness: flows.fairness,
        };
        (summary, series)
    }

    /// The whole path: counts, loss, throughput against the bottleneck's
    /// capacity (over the flows' active bins, `active`, and over the whole
    /// window), one-way delay and marks.
    fn path_summary(
        &self,
        window: &Window,
        bottleneck: &Bottleneck,
        active: Option<(usize, usize)>,
        unmatched: Unmatched,
    ) -> PathSummary {
        let window_s = window.seconds();
        let capacity_mbps = bottleneck
            .capacity_bytes
            .as_ref()
            .map(|c| c.iter().sum::<u64>() as f64 * 8.0 / window_s / 1e6);
        let window_throughput =
            (window_s > 0.0).then(|| self.total.delivered_bytes as f64 * 8.0 / window_s / 1e6);
        let active = active.map(|(a, b)| (a, b, window.span_s(a, b)));
        let over_active = |bytes: &[u64]| {
            active.filter(|&(_, _, s)| s > 0.0).and_then(|(a, b, s)| {
                Some(bytes.get(a..=b)?.iter().sum::<u64>() as f64 * 8.0 / s / 1e6)
            })
        };
        let active_throughput = over_active(&self.total.delivered_bins.dense(window.bins));
        let active_capacity = bottleneck.capacity_bytes.as_deref().and_then(over_active);
        let ratio =
            |t: Option<f64>, c: Option<f64>| t.zip(c).filter(|&(_, c)| c > 0.0).map(|(t, c)| t / c);
        let bin_edge =
            |b: usize| ((b as u64 * window.bin).min(window.to - window.from)) as f64 / NS_PER_S;
        PathSummary {
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
            active_from_s: active.map(|(a, _, _)| bin_edge(a)),
            active_to_s: active.map(|(_, b, _)| bin_edge(b + 1)),
            active_throughput_mbps: active_throughput,
            active_capacity_mbps: active_capacity,
            capacity_mbps,
            capacity_source: bottleneck.capacity_source,
            utilization: ratio(active_throughput, active_capacity),
            window_utilization: ratio(window_throughput, capacity_mbps),
            one_way_delay: DelayStats::of(&self.total.delay),
            marks: self.total.marks(),
        }
    }

    /// Pantheon's three figures, as its analysis defines them.
    fn pantheon(&self) -> PantheonSummary {
        PantheonSummary {
            throughput_mbps: self.total.throughput_mbps(),
            delay_p95_ms: self
                .total
                .delay
                .percentile(Rank::NumpyNearest, 0.95)
                .map(ms),
            loss: (self.total.arrival_bytes > 0)
                .then(|| 1.0 - self.total.delivered_bytes as f64 / self.total.arrival_bytes as f64),
        }
    }

    /// The per-bin series the charts draw.
    fn series(
        &self,
        window: &Window,
        bottleneck: Bottleneck,
        flows: &FlowTables,
    ) -> DirectionSeries {
        let bins = window.bins;
        let mut bands = vec![None; bins];
        for &(b, band) in &self.bands {
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
        DirectionSeries {
            direction: self.direction.name(),
            time_s: (0..bins).map(|b| b as f64 * window.bin_s()).collect(),
            throughput_mbps: window.rates(self.total.delivered_bins.dense(bins)),
            ingress_mbps: window.rates(self.ingress_bins.dense(bins)),
            capacity_mbps: bottleneck.capacity_bytes.map(|c| window.rates(c)),
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
            queue_shell: bottleneck.queue_shell,
            queue_bytes_mean: bottleneck.queue_mean,
            queue_bytes_max: bottleneck.queue_max,
            jain: flows.jain_bins.clone(),
            flows: flows.lines.clone(),
            base_delay_ms: Vec::new(),
        }
    }
}
