//! The metrics of one direction of one run, accumulated from a
//! time-ordered stream of events in memory bounded by the run's length
//! and its number of flows, never by its number of packets.
//!
//! The readers ([`crate::logs::emu_reader`], [`crate::logs::mahimahi_reader`]) feed it
//! the events of [`crate::analysis::events`]; [`DirectionAnalysis::finish`] gives
//! back the figures and series of [`crate::analysis::summary`], in three steps: the
//! path, the flows with their fairness, and the per-bin series.

use crate::analysis::events::{
    FlowName, FlowSelection, Options, PathEvent, PathKind, ShellEvent, ShellInfo, ShellKind,
    Unmatched,
};
use crate::analysis::mahimahi_figures::MmAccumulator;
use crate::analysis::summary::{
    jain, ms, DelayStats, DirectionSeries, DirectionSummary, Fairness, FlowSummary, Marks,
    OtherFlows, PantheonSummary, PathSummary, QueueSummary, ShellSummary, SAMPLE_POINTS,
};
use crate::measures::capacity::{with_shaper, Capacity};
use crate::measures::histogram::{Histogram, Rank};
use crate::measures::series::{Bins, Step};
use emu_core::log::{Change, Direction, DropCounts, Mark};
use emu_core::Nanos;
use std::collections::{BTreeMap, HashMap};

const NS_PER_S: f64 = 1e9;

/// Counts and delays of a set of packets (the whole direction or a flow).
#[derive(Debug, Clone)]
struct Totals {
    arrivals: u64,
    arrival_bytes: u64,
    delivered: u64,
    delivered_bytes: u64,
    drops: DropCounts,
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
                self.drops.add(reason);
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
        self.drops.nonzero_by_name()
    }

    fn dropped(&self) -> u64 {
        self.drops.total()
    }

    fn marks(&self) -> Marks {
        Marks::of(self.ce, self.ect1, self.delivered)
    }

    /// Dropped of what was delivered or dropped: a packet the log ends on
    /// while it is still in flight (a run stops with packets on the wire)
    /// is neither, and counted lost it made a lossless path look lossy.
    fn loss(&self) -> Option<f64> {
        let done = self.delivered + self.dropped();
        (done > 0).then(|| self.dropped() as f64 / done as f64)
    }
}

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
    drops: DropCounts,
    ce: u64,
    ect1: u64,
    sojourn: Histogram,
    transit: Histogram,
    queue_bytes: Step,
    queue_packets: Step,
    departed_bins: Bins,
    logged_capacity: Bins,
    mahimahi: MmAccumulator,
    /// The path's parameter changes this shell logged (event 7), in time
    /// order: the rate (bit/s), outages (true = down) and base delay (ns).
    rate_changes: Vec<(Nanos, u64)>,
    outages: Vec<(Nanos, bool)>,
    delay_changes: Vec<(Nanos, u64)>,
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
            Change::LossState => {}
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

/// The report's window and its bins.
struct Window {
    from: Nanos,
    to: Nanos,
    bin: Nanos,
    bins: usize,
}

impl Window {
    fn new(options: &Options, end: Nanos) -> Window {
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

    fn seconds(&self) -> f64 {
        (self.to - self.from) as f64 / NS_PER_S
    }

    fn bin_s(&self) -> f64 {
        self.bin as f64 / NS_PER_S
    }

    /// Width of bin `b` in s: the last one may end early, with the window.
    fn width_s(&self, b: usize) -> f64 {
        if b + 1 == self.bins {
            (self.to - self.from - (self.bins as u64 - 1) * self.bin) as f64 / NS_PER_S
        } else {
            self.bin_s()
        }
    }

    /// Length in s of bins `first..=last`.
    fn span_s(&self, first: usize, last: usize) -> f64 {
        (first..=last).map(|b| self.width_s(b)).sum()
    }

    /// Bytes per bin as Mbit/s, each over its bin's own width.
    fn rates(&self, bytes: Vec<u64>) -> Vec<f64> {
        bytes
            .into_iter()
            .enumerate()
            .map(|(b, v)| v as f64 * 8.0 / self.width_s(b).max(1e-9) / 1e6)
            .collect()
    }
}

/// The shell that limits the path (the least capacity) and the queue
/// worth plotting (the bottleneck's, else the deepest).
#[derive(Clone)]
struct Bottleneck {
    shell: Option<u8>,
    capacity_bytes: Option<Vec<u64>>,
    capacity_source: Option<&'static str>,
    queue_shell: Option<u8>,
    queue_mean: Vec<f64>,
    queue_max: Vec<u64>,
}

impl Bottleneck {
    fn of(shells: &[ShellParts]) -> Bottleneck {
        let shell = shells
            .iter()
            .filter_map(|(s, _, _)| Some((s.shell, s.capacity_mbps?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(shell, _)| shell);
        let capacity_bytes = shells
            .iter()
            .find(|(s, _, _)| Some(s.shell) == shell)
            .and_then(|(_, c, _)| c.clone());
        let queue_shell = shell.or_else(|| {
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
        let capacity_source = shells
            .iter()
            .find(|(s, _, _)| Some(s.shell) == shell)
            .and_then(|(s, _, _)| s.capacity_source);
        Bottleneck {
            shell,
            capacity_bytes,
            capacity_source,
            queue_shell,
            queue_mean,
            queue_max,
        }
    }
}

/// The flows shown (rows and throughput lines), those left out, and
/// fairness over the shown ones, overall and per bin.
struct FlowTables {
    rows: Vec<FlowSummary>,
    lines: Vec<(String, Vec<f64>)>,
    other: OtherFlows,
    fairness: Fairness,
    jain_bins: Vec<Option<f64>>,
    /// See [`active_span`].
    active: Option<(usize, usize)>,
}

/// Flows biggest first; the selection decides who is shown, and Jain's
/// index takes the shown flows that compete for the path.
fn flows_and_fairness(
    flows: HashMap<u32, Totals>,
    names: &HashMap<u32, FlowName>,
    selection: &FlowSelection,
    total: &Totals,
    window: &Window,
) -> FlowTables {
    let bins = window.bins;
    let (flows, selected, fair) = rank_and_select(flows, names, selection, total.delivered_bytes);
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let mut other = OtherFlows {
        count: 0,
        delivered_bytes: 0,
    };
    let mut shares = Vec::new();
    let mut active_bins = Vec::new();
    let common = common_window(
        flows
            .iter()
            .zip(&fair)
            .filter(|(_, fair)| **fair)
            .map(|((_, t), _)| t.delivered_bins.span()),
        bins,
    );
    let windows = Windows {
        window,
        common,
        common_s: common.map_or(0.0, |(a, b)| window.span_s(a, b)),
        common_total: common_bytes(common, &total.delivered_bins.dense(bins)),
    };
    let mut common_rates = Vec::new();
    for (((id, t), chosen), &fair) in flows.iter().zip(&selected).zip(&fair) {
        if !chosen {
            other.count += 1;
            other.delivered_bytes += t.delivered_bytes;
            continue;
        }
        let named = names.get(id);
        let name = named.map_or_else(|| format!("flow {id:08x}"), FlowName::label);
        let dense = t.delivered_bins.dense(bins);
        let row = flow_row(*id, t, named, fair, &windows, &dense);
        if fair {
            common_rates.extend(row.common_window_throughput_mbps);
            shares.extend(t.throughput_mbps());
            if let Some(span) = t.delivered_bins.span() {
                active_bins.push((span, dense.clone()));
            }
        }
        rows.push(row);
        lines.push((name, window.rates(dense)));
    }
    let fair_flows = fair.iter().filter(|&&f| f).count();
    let active = active_span(&flows, &selected, &fair, bins);
    let jain_bins = jain_per_bin(&active_bins, bins);
    let defined: Vec<f64> = jain_bins.iter().flatten().copied().collect();
    let fairness = Fairness {
        flows: fair_flows,
        common_from_s: common.map(|(a, _)| (a as u64 * window.bin) as f64 / NS_PER_S),
        common_to_s: common.map(|(_, b)| {
            ((b as u64 * window.bin + window.bin).min(window.to - window.from)) as f64 / NS_PER_S
        }),
        jain: (common_rates.len() == fair_flows)
            .then(|| jain(common_rates.iter().copied()))
            .flatten(),
        jain_over_own_spans: jain(shares.iter().copied()),
        jain_mean_over_bins: (!defined.is_empty())
            .then(|| defined.iter().sum::<f64>() / defined.len() as f64),
    };
    FlowTables {
        rows,
        lines,
        other,
        fairness,
        jain_bins,
        active,
    }
}

/// The bins from the earliest first delivery of the flows in Jain's index
/// to their latest last one (of every shown flow where the index takes
/// none): the time the link was in use, without the idle time before the
/// flows start (a run's setup, a ping before the transfer) or after they
/// end. None if no such flow delivered anything.
fn active_span(
    flows: &[(u32, Totals)],
    selected: &[bool],
    fair: &[bool],
    bins: usize,
) -> Option<(usize, usize)> {
    let over = |take: &[bool]| {
        flows
            .iter()
            .zip(take)
            .filter(|(_, t)| **t)
            .filter_map(|((_, t), _)| t.delivered_bins.span())
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    };
    let last = bins.saturating_sub(1) as u32;
    over(fair)
        .or_else(|| over(selected))
        .map(|(a, b)| (a.min(last) as usize, b.min(last) as usize))
}

/// The flows biggest first (by id where equal), which the selection shows,
/// and which of those Jain's index takes: those that compete for the path,
/// unless the user named the flows.
fn rank_and_select(
    flows: HashMap<u32, Totals>,
    names: &HashMap<u32, FlowName>,
    selection: &FlowSelection,
    total_bytes: u64,
) -> (Vec<(u32, Totals)>, Vec<bool>, Vec<bool>) {
    let mut flows: Vec<(u32, Totals)> = flows.into_iter().collect();
    flows.sort_by(|a, b| {
        b.1.delivered_bytes
            .cmp(&a.1.delivered_bytes)
            .then(a.0.cmp(&b.0))
    });
    let selected: Vec<bool> = flows
        .iter()
        .enumerate()
        .map(|(rank, (id, t))| match selection {
            FlowSelection::All => true,
            FlowSelection::Significant => {
                t.delivered_bytes > 0 && t.delivered_bytes * 100 >= total_bytes
            }
            FlowSelection::Top(n) => rank < *n,
            FlowSelection::Matching(matches) => {
                matches.iter().any(|m| m.matches(*id, names.get(id)))
            }
        })
        .collect();
    let fair: Vec<bool> = flows
        .iter()
        .zip(&selected)
        .map(|((id, t), &chosen)| {
            chosen
                && (matches!(selection, FlowSelection::Matching(_)) || competes(t, names.get(id)))
        })
        .collect();
    (flows, selected, fair)
}

/// Where the flows' throughputs are told: the report window, and the
/// common window (the bins where every flow in Jain's index is active)
/// with its length and what the direction delivered in it.
struct Windows<'a> {
    window: &'a Window,
    common: Option<(usize, usize)>,
    common_s: f64,
    common_total: Option<u64>,
}

/// The bytes of `dense` (per bin) within the common window, if there is one.
fn common_bytes(common: Option<(usize, usize)>, dense: &[u64]) -> Option<u64> {
    common.map(|(a, b)| dense[a..=b].iter().sum::<u64>())
}

/// The row of one shown flow; `dense` its delivered bytes per bin.
fn flow_row(
    id: u32,
    t: &Totals,
    named: Option<&FlowName>,
    fair: bool,
    windows: &Windows,
    dense: &[u64],
) -> FlowSummary {
    let from = windows.window.from;
    let seconds = |ns: Nanos| (ns - from) as f64 / NS_PER_S;
    let window_s = windows.window.seconds();
    let in_common = common_bytes(windows.common, dense);
    let common_rate = in_common
        .filter(|_| windows.common_s > 0.0)
        .map(|bytes| bytes as f64 * 8.0 / windows.common_s / 1e6);
    FlowSummary {
        flow: format!("{id:08x}"),
        name: named.map(FlowName::label),
        tuple: named.map(|n| n.entry.clone()),
        left_as: named.and_then(|n| n.exit.clone()),
        arrivals: t.arrivals,
        delivered: t.delivered,
        delivered_bytes: t.delivered_bytes,
        dropped: t.dropped(),
        drops: t.drops_by_reason(),
        first_delivery_s: t.first_delivery.map(seconds),
        last_delivery_s: t.first_delivery.map(|_| seconds(t.last_delivery)),
        throughput_mbps: t.throughput_mbps(),
        window_throughput_mbps: (window_s > 0.0)
            .then(|| t.delivered_bytes as f64 * 8.0 / window_s / 1e6),
        common_window_throughput_mbps: common_rate,
        common_window_share: in_common
            .zip(windows.common_total)
            .filter(|&(_, total)| total > 0)
            .map(|(bytes, total)| bytes as f64 / total as f64),
        loss: t.loss(),
        one_way_delay: DelayStats::of(&t.delay),
        marks: t.marks(),
        in_fairness: fair,
    }
}

/// Jain's index per bin over the flows active in that bin (`active`: each
/// flow's span of bins and its bytes per bin); with several flows, only
/// bins where two or more share the path count (a flow alone is trivially
/// fair to itself).
fn jain_per_bin(active: &[((u32, u32), Vec<u64>)], bins: usize) -> Vec<Option<f64>> {
    let needed = active.len().min(2);
    (0..bins)
        .map(|b| {
            let rates: Vec<f64> = active
                .iter()
                .filter(|((first, last), _)| (*first as usize..=*last as usize).contains(&b))
                .map(|(_, dense)| dense[b] as f64)
                .collect();
            (rates.len() >= needed).then(|| jain(rates)).flatten()
        })
        .collect()
}

/// The longest pure TCP acknowledgement: an IPv6 header (40 bytes), a TCP
/// header (20) and the most options (40).
const LONGEST_PURE_ACK: u64 = 100;

/// Whether a flow competes for the path, and so takes a place in Jain's
/// index: it carries data of its own. Not a probe (ICMP: a ping shares the
/// path but asks for no share of it), and not an acknowledgement stream
/// (its packets no bigger than a pure acknowledgement, on average): a
/// reverse flow's acknowledgements, a few hundred kbit/s beside bulk flows
/// of tens of Mbit/s, counted as a starved third flow and took two equal
/// flows' index from 1.00 to 0.69 (and shortened the common window to the
/// reverse flow's life).
fn competes(t: &Totals, name: Option<&FlowName>) -> bool {
    let probe = name.is_some_and(|n| matches!(n.entry.protocol, 1 | 58));
    let acknowledgements = t.delivered > 0 && t.delivered_bytes <= LONGEST_PURE_ACK * t.delivered;
    !probe && !acknowledgements
}

/// The bins where every flow of `spans` (first and last bin with a
/// delivery) is active, None if some flow delivered nothing or they never
/// overlap.
fn common_window(
    spans: impl Iterator<Item = Option<(u32, u32)>>,
    bins: usize,
) -> Option<(usize, usize)> {
    let mut window: Option<(u32, u32)> = None;
    for span in spans {
        let (first, last) = span?;
        window = Some(match window {
            None => (first, last),
            Some((a, b)) => (a.max(first), b.min(last)),
        });
    }
    // A delivery exactly at the window's end falls one past the last bin.
    let last = bins.saturating_sub(1) as u32;
    window
        .map(|(a, b)| (a, b.min(last)))
        .filter(|(a, b)| a <= b)
        .map(|(a, b)| (a as usize, b as usize))
}

/// A shell's logged base delay as a step line in report seconds and ms,
/// from its first change to the window's end.
fn delay_steps(changes: &[(Nanos, u64)], window: &Window) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    let x = |t: Nanos| t.saturating_sub(window.from) as f64 / NS_PER_S;
    for (i, &(t, delay)) in changes.iter().enumerate() {
        if t >= window.to {
            break;
        }
        let t = t.max(window.from);
        if i > 0 {
            points.push((x(t), ms(changes[i - 1].1)));
        }
        points.push((x(t), ms(delay)));
    }
    if let Some(&(_, last)) = changes.iter().rfind(|(t, _)| *t < window.to) {
        points.push((x(window.to), ms(last)));
    }
    points
}

type ShellParts = (ShellSummary, Option<Vec<u64>>, (Vec<f64>, Vec<u64>));

fn shell_summary(acc: ShellAcc, window: &Window) -> ShellParts {
    let (from, to, bins) = (window.from, window.to, window.bins);
    let window_s = window.seconds();
    let base_rate = match acc.info.capacity {
        Capacity::Rate(bps) => Some(bps),
        _ => None,
    };
    // A rate that followed a schedule or had outages: the rate the link
    // actually had, from its change records.
    let scheduled =
        !acc.rate_changes.is_empty() || (!acc.outages.is_empty() && base_rate.is_some());
    let link = if scheduled {
        let steps =
            crate::measures::capacity::effective_rate(base_rate, &acc.rate_changes, &acc.outages);
        let source = if acc.rate_changes.is_empty() {
            "link rate with outages"
        } else {
            "link rate schedule"
        };
        Some((
            crate::measures::capacity::step_bins(&steps, from, to, bins, window.bin),
            source,
        ))
    } else {
        acc.info
            .capacity
            .per_bin(&acc.logged_capacity, from, to, bins, window.bin)
            .zip(acc.info.capacity.source())
    };
    let (capacity, capacity_source) =
        match with_shaper(link, acc.info.shaper_bps, from, to, bins, window.bin) {
            Some((bins, source)) => (Some(bins), Some(source)),
            None => (None, None),
        };
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
        drops: acc.drops.nonzero_by_name(),
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
        capacity_source,
        throughput_mbps: throughput,
        utilization: throughput
            .zip(capacity_mbps)
            .filter(|&(_, c)| c > 0.0)
            .map(|(t, c)| t / c),
        mahimahi,
    };
    (summary, capacity, (bytes_mean, bytes_max))
}
