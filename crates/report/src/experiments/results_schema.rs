//! What `emu run` writes of a run and of a cell, and `emu report` reads:
//! one run's `result.json` ([`RunResult`]), a cell's and an experiment's
//! `summary.json` ([`CellSummary`]), and the figures across repetitions
//! (mean and standard deviation, as papers print them). The layout they
//! are written in is [`crate::experiments::results_dir`]'s.
//!
//! A field added later is read as its default from results written
//! before it, so an older results directory still reads.

use crate::measures::statistics::jain;
pub use crate::measures::statistics::{Distribution, Spread};
use emu_core::flow::FlowTuple;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A flow's `kind` when it is a Pantheon scheme.
pub const PANTHEON_KIND: &str = "pantheon";

/// A flow's figures from the links' logs, as Pantheon defines them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PathFigures {
    /// Delivered bits over the span from the first delivery to the last.
    pub throughput_bps: Option<f64>,
    /// One-way delay, 95th percentile (numpy's `nearest`, as Pantheon),
    /// to the microsecond.
    pub delay_p95_ms: Option<f64>,
    /// 1 − delivered bytes / sent bytes, in percent (what was still in
    /// flight at the end counts as lost, as in Pantheon).
    pub loss_percent: Option<f64>,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
}

/// An experiment's `meta.json` (or `meta-cell-K.json` for the cells one
/// machine ran with `--cell K`): what ran, where, and the grid's size;
/// the scenario and variant a study pairs experiments by.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// The cells this machine ran.
    pub cells_here: Vec<usize>,
    pub cells_in_grid: Option<usize>,
    pub emu_version: String,
    /// The experiment file, as given.
    pub file: String,
    pub kernel: String,
    /// Whether it ran in its quick form.
    pub quick: bool,
    pub scenario: Option<String>,
    /// The `--set` overrides.
    pub set: Vec<String>,
    pub started_unix_ns: u64,
    pub swept_keys: Vec<String>,
    pub variant: Option<String>,
}

/// What the report reads of a run's `clock.json` (which the TCP sampler
/// writes): the monotonic instant the flows started, time 0 of the
/// samples and of the page's charts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Clock {
    pub flows_started_monotonic_ns: Option<u64>,
}

/// A cell's `plan.json`: the plan its runs follow, every default filled
/// in, durations as text (`10 s`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanFile {
    pub bottlenecks: Vec<BottleneckFile>,
    pub duration: String,
    pub flows: Vec<FlowFile>,
    pub hosts: Vec<HostFile>,
    pub mtu: u32,
    pub name: String,
    /// The repetitions planned.
    pub runs: Option<u32>,
    pub sample_interval: String,
    pub seed: u64,
}

/// A host of a plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostFile {
    pub address: Option<String>,
    /// Its side link's direction towards it.
    pub down: DirectionFile,
    pub name: String,
    /// `left` or `right`.
    pub side: String,
    pub sysctls: Vec<(String, String)>,
    /// Its side link's direction from it.
    pub up: DirectionFile,
}

/// A bottleneck of a plan, left to right (forward) and back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BottleneckFile {
    pub forward: DirectionFile,
    pub reverse: DirectionFile,
}

/// One direction of a link in a plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DirectionFile {
    pub delay: String,
    /// The path's changes over time, if any (as the plan shows them).
    pub dynamics: Option<String>,
    pub loss: String,
    pub overhead: u32,
    /// The queue as aqm's specification serializes, tagged by its
    /// `discipline` (`{"discipline": "cake", "bandwidth": ...}`).
    pub queue: serde_json::Value,
    /// The link's rate in bit/s, for a fixed rate (results written before
    /// it have the server's text alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    /// `N bit/s`, `unlimited`, `trace, period T` or `rate schedule`.
    pub server: Option<String>,
}

/// A flow of a plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlowFile {
    pub bytes: Option<u64>,
    pub cc: Option<String>,
    pub command: Option<String>,
    pub duration: String,
    pub ecn: String,
    pub from: String,
    pub kind: String,
    pub name: String,
    pub port: u16,
    pub rate_bps: Option<u64>,
    pub start: String,
    pub to: Option<String>,
}

/// A queue's shaper, where it has one (cake's `bandwidth`, bytes/s).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct QueueShaper {
    bandwidth: Option<f64>,
}

impl DirectionFile {
    /// The link's fixed rate in bit/s: `rate_bps`, or the server's `N
    /// bit/s` where an older plan has only that.
    pub fn link_rate(&self) -> Option<f64> {
        if let Some(bps) = self.rate_bps {
            return Some(bps as f64);
        }
        self.server
            .as_deref()?
            .strip_suffix(" bit/s")?
            .trim()
            .parse()
            .ok()
    }

    /// The direction's rate in bit/s: the lower of the link's rate and
    /// its queue's shaper; None for a trace or a schedule without one.
    pub fn rate(&self) -> Option<f64> {
        let shaper = serde_json::from_value::<QueueShaper>(self.queue.clone())
            .ok()
            .and_then(|q| q.bandwidth)
            .filter(|b| *b > 0.0)
            .map(|b| b * 8.0);
        match (self.link_rate(), shaper) {
            (Some(l), Some(s)) => Some(l.min(s)),
            (l, s) => l.or(s),
        }
    }
}

/// A TCP flow over its whole life, start-up included whatever its `omit`
/// says: the "mean TCP throughput" and "mean TCP RTT" of the SCE one- and
/// two-flow tests (draft-heist-tsvwg-sce-one-and-two-flow-tests), which
/// `emu report --table` lays out. Taken from the TCP_INFO samples of the
/// flow's data socket, so its resolution is the run's `sample_interval`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WholeFlow {
    /// Mean of the sender's smoothed RTT over every sample, in ms.
    pub srtt_mean_ms: f64,
    /// Bits the sender saw acknowledged from the flow's start to its last
    /// sample, over that time (None if no sample came after its start).
    pub throughput_bps: Option<f64>,
    /// How many samples the mean takes.
    pub samples: usize,
}

/// What TCP Prague's classic-ECN detection concluded for one flow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassicEcn {
    /// The highest score it reached, with alpha's scale (1 = a full
    /// alpha): 0 on an L4S AQM's shallow queue, up to 17 on a classic
    /// AQM's deep or jittery one.
    pub score_max: f64,
    /// Whether the score passed 8, above which the reference takes the
    /// bottleneck for a classic AQM's (and, with fallback, answers CE as
    /// a classic flow would).
    pub detected: bool,
}

/// One flow of one run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FlowResult {
    pub name: String,
    pub kind: String,
    pub from: String,
    pub to: Option<String>,
    pub congestion_control: Option<String>,
    /// Bits per second the receiver got (TCP and UDP flows).
    pub goodput_bps: Option<f64>,
    /// The sender's smoothed RTT over the samples, in milliseconds (TCP),
    /// past the start-up the flow's `omit` leaves out.
    pub srtt_ms: Option<Distribution>,
    /// The flow over its whole life, start-up included (TCP; see
    /// [`WholeFlow`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_flow: Option<WholeFlow>,
    /// The kernel's minimum RTT at the end, in milliseconds (TCP).
    pub min_rtt_ms: Option<f64>,
    pub retransmits: Option<u64>,
    /// Packets of the flow the links marked CE, counted in their logs
    /// (TCP and UDP flows; see `experiment::results::marks`).
    pub ce_marks: Option<u64>,
    /// Segments the sender saw acknowledged with ECE (TCP's own
    /// `delivered_ce`). Classic ECN echoes a mark on every acknowledgement
    /// until the sender answers, so this is about a window of segments
    /// per mark: TCP's view, not a count of marks.
    pub ece_acked: Option<u64>,
    /// Whether the connection negotiated ECN (TCP; from TCP_INFO). A
    /// congestion control that needs it (prague) falls back without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// Bytes the sender saw acknowledged by ACKs that carried SCE
    /// feedback (ESCE), counted by emu's helpers on the sending host (TCP
    /// flows of emu's SCE congestion controls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub esce_acked_bytes: Option<u64>,
    /// The settings the flow gave its congestion control (one of emu's),
    /// as written (`ecn_fallback = "1"`); the rest were the reference's
    /// defaults.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cc_settings: BTreeMap<String, String>,
    /// TCP Prague with classic-ECN detection on (`ecn_fallback` 1 or 2):
    /// what detection concluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classic_ecn: Option<ClassicEcn>,
    /// Round trips of ping probes, in milliseconds.
    pub ping_rtt_ms: Option<Distribution>,
    /// Share of datagrams (UDP) or probes (ping) lost, in percent.
    pub lost_percent: Option<f64>,
    /// How the flow's program ended: `exit 0`, `killed at its end`, ...
    pub ended: String,
    /// Every 5-tuple the flow's sender sent, as the links saw them (see
    /// `experiment::results::flow_paths`).
    #[serde(default)]
    pub tuples: Vec<FlowTuple>,
    /// The flow's throughput, 95th-percentile one-way delay and loss from
    /// the links' logs, whatever its kind (beside TCP's and iperf3's own
    /// view above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathFigures>,
}

/// A cell's place in the sweep: each swept key and the value the cell
/// takes, in the grid's order (`bottleneck.rate` before `flows.0.cc`
/// where the file has them so), written as a JSON object in that order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignments(pub Vec<(String, String)>);

impl Assignments {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Assignments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Assignments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> serde::de::Visitor<'de> for InOrder {
            type Value = Assignments;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of swept keys and their values")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Assignments, M::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry::<String, String>()? {
                    pairs.push(pair);
                }
                Ok(Assignments(pairs))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

/// One repetition of one cell.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunResult {
    pub cell: usize,
    #[serde(default = "no_sweep")]
    pub cell_label: String,
    /// The cell's swept values, as the label shows them (results written
    /// before this field have the label alone).
    #[serde(skip_serializing_if = "Assignments::is_empty")]
    pub sweep: Assignments,
    pub run: u32,
    pub seed: u64,
    pub flows: Vec<FlowResult>,
    /// Over the goodputs (or the links' throughputs) of the competing
    /// flows that go the way most of them go (see
    /// [`RunResult::with_jain`]), each over its own span.
    pub jain_index: Option<f64>,
    /// The flows the index takes.
    #[serde(default)]
    pub jain_flows: Vec<String>,
    /// What the index is taken over.
    #[serde(default, skip_serializing_if = "JainMeasure::is_goodput")]
    pub jain_measure: JainMeasure,
    /// Every link direction's accounting held (see `links.json`).
    pub accounting_ok: bool,
    /// Where the run did not keep time (see `experiment::run::timing`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timing_warnings: Vec<String>,
}

impl RunResult {
    /// Takes Jain's index over the flows that compete: those with a
    /// goodput (TCP and UDP) and Pantheon schemes, which have only the
    /// links' view, going the way most of them go (`left_to_right[i]`:
    /// whether flow i does; left to right on a tie). A flow the other way
    /// crosses the bottleneck's other direction and competes with none of
    /// them: a reverse flow among two equal ones took their index from
    /// 0.96 to 0.91. Every flow is taken by one measure: the receivers'
    /// goodput where each has one, else the links' throughput (with a
    /// Pantheon scheme among them), so that like is compared with like.
    pub fn with_jain(mut self, left_to_right: &[bool]) -> RunResult {
        let measured: Vec<(&FlowResult, bool)> = self
            .flows
            .iter()
            .zip(left_to_right)
            .filter(|(f, _)| f.goodput_bps.is_some() || f.is_scheme_on_path())
            .map(|(f, &way)| (f, way))
            .collect();
        let rightwards = measured.iter().filter(|(_, way)| *way).count();
        let way = 2 * rightwards >= measured.len();
        let competing: Vec<&FlowResult> = measured
            .into_iter()
            .filter(|(_, w)| *w == way)
            .map(|(f, _)| f)
            .collect();
        let measure = match competing.iter().all(|f| f.goodput_bps.is_some()) {
            true => JainMeasure::Goodput,
            false => JainMeasure::PathThroughput,
        };
        let taken: Vec<(&FlowResult, f64)> = competing
            .into_iter()
            .filter_map(|f| Some((f, measure.of(f)?)))
            .collect();
        self.jain_index = jain(taken.iter().map(|(_, v)| *v));
        self.jain_flows = taken.iter().map(|(f, _)| f.name.clone()).collect();
        self.jain_measure = measure;
        self
    }
}

impl FlowResult {
    /// A Pantheon scheme the links measured: it competes like a TCP or UDP
    /// flow, though no receiver of emu's reports its goodput.
    fn is_scheme_on_path(&self) -> bool {
        self.kind == PANTHEON_KIND
            && self
                .path
                .as_ref()
                .is_some_and(|p| p.throughput_bps.is_some())
    }
}

/// The label of a cell without a sweep.
fn no_sweep() -> String {
    "(no sweep)".to_string()
}

/// What Jain's index of a run is taken over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JainMeasure {
    /// The goodput each flow's receiver reports (iperf3).
    #[default]
    Goodput,
    /// The throughput the links' logs give each flow (see
    /// [`FlowResult::path`]): where some competing flow is a Pantheon
    /// scheme, whose receiver reports nothing.
    PathThroughput,
}

impl JainMeasure {
    fn of(self, flow: &FlowResult) -> Option<f64> {
        match self {
            JainMeasure::Goodput => flow.goodput_bps,
            JainMeasure::PathThroughput => flow.path.as_ref()?.throughput_bps,
        }
    }

    fn is_goodput(&self) -> bool {
        *self == JainMeasure::Goodput
    }
}

/// A flow's figures across the repetitions of a cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlowSummary {
    pub name: String,
    /// The congestion control its TCP ran (the last sample's), where
    /// sampled: without a `cc` key, the machine's default.
    #[serde(default)]
    pub congestion_control: Option<String>,
    pub goodput_bps: Option<Spread>,
    pub srtt_mean_ms: Option<Spread>,
    pub srtt_p95_ms: Option<Spread>,
    pub retransmits: Option<Spread>,
    pub ce_marks: Option<Spread>,
    pub ping_rtt_mean_ms: Option<Spread>,
    /// The links' view (see [`FlowResult::path`]): throughput, p95
    /// one-way delay and loss.
    #[serde(default)]
    pub path_throughput_bps: Option<Spread>,
    #[serde(default)]
    pub path_delay_p95_ms: Option<Spread>,
    #[serde(default)]
    pub path_loss_percent: Option<Spread>,
}

/// A cell's figures across its repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellSummary {
    pub cell: usize,
    pub label: String,
    pub runs: usize,
    pub flows: Vec<FlowSummary>,
    pub jain_index: Option<Spread>,
    /// The flows Jain's index takes (the first run's; see
    /// [`RunResult::with_jain`]).
    #[serde(default)]
    pub jain_flows: Vec<String>,
    /// What the index is taken over (the first run's).
    #[serde(default, skip_serializing_if = "JainMeasure::is_goodput")]
    pub jain_measure: JainMeasure,
}

/// An experiment's `summary.json` as `emu run` writes it: its cells so
/// far, in cell order (those run elsewhere or earlier kept).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunSummary {
    pub cells: Vec<CellSummary>,
    pub experiment: String,
}

/// Gathers the runs of one cell.
pub fn summarize_cell(cell: usize, label: &str, runs: &[RunResult]) -> CellSummary {
    let mut names: Vec<String> = Vec::new();
    let mut by_flow: BTreeMap<String, Vec<&FlowResult>> = BTreeMap::new();
    for run in runs {
        for flow in &run.flows {
            if !names.contains(&flow.name) {
                names.push(flow.name.clone());
            }
            by_flow.entry(flow.name.clone()).or_default().push(flow);
        }
    }
    let spread = |flows: &[&FlowResult], get: &dyn Fn(&FlowResult) -> Option<f64>| {
        Spread::of(&flows.iter().filter_map(|f| get(f)).collect::<Vec<_>>())
    };
    let flows = names
        .iter()
        .map(|name| {
            let flows = &by_flow[name];
            FlowSummary {
                name: name.clone(),
                congestion_control: flows.iter().find_map(|f| f.congestion_control.clone()),
                goodput_bps: spread(flows, &|f| f.goodput_bps),
                srtt_mean_ms: spread(flows, &|f| f.srtt_ms.map(|d| d.mean)),
                srtt_p95_ms: spread(flows, &|f| f.srtt_ms.map(|d| d.p95)),
                retransmits: spread(flows, &|f| f.retransmits.map(|r| r as f64)),
                ce_marks: spread(flows, &|f| f.ce_marks.map(|r| r as f64)),
                ping_rtt_mean_ms: spread(flows, &|f| f.ping_rtt_ms.map(|d| d.mean)),
                path_throughput_bps: spread(flows, &|f| f.path.as_ref()?.throughput_bps),
                path_delay_p95_ms: spread(flows, &|f| f.path.as_ref()?.delay_p95_ms),
                path_loss_percent: spread(flows, &|f| f.path.as_ref()?.loss_percent),
            }
        })
        .collect();
    CellSummary {
        cell,
        label: label.to_string(),
        runs: runs.len(),
        flows,
        jain_index: Spread::of(&runs.iter().filter_map(|r| r.jain_index).collect::<Vec<_>>()),
        jain_flows: runs.first().map_or_else(Vec::new, |r| r.jain_flows.clone()),
        jain_measure: runs
            .first()
            .map_or_else(JainMeasure::default, |r| r.jain_measure),
    }
}

/// Which flows the cell's index takes, where not all of them: ` over a,
/// b` (flows the other way, pings and commands are left out).
fn jain_scope(cell: &CellSummary) -> String {
    // Results written without `jain_flows` name none.
    let all = cell.jain_flows.is_empty() || cell.jain_flows.len() == cell.flows.len();
    let measure = match cell.jain_measure {
        JainMeasure::Goodput => "",
        JainMeasure::PathThroughput => " (the links' throughputs)",
    };
    if cell.jain_index.is_none() {
        return String::new();
    }
    match all {
        true => measure.to_string(),
        false => format!(" over {}{measure}", cell.jain_flows.join(", ")),
    }
}

fn show(spread: Option<Spread>, scale: f64, digits: usize) -> String {
    match spread {
        None => "-".to_string(),
        Some(s) if s.n > 1 => format!(
            "{:.digits$} ± {:.digits$}",
            s.mean * scale,
            s.stddev * scale
        ),
        Some(s) => format!("{:.digits$}", s.mean * scale),
    }
}

/// The table printed at the end: one block per cell.
pub fn table(cells: &[CellSummary]) -> String {
    let mut out = String::new();
    for cell in cells {
        // A label that brings its own parentheses (`(no sweep)`) is not
        // wrapped in more.
        let label = match cell.label.starts_with('(') {
            true => cell.label.clone(),
            false => format!("({})", cell.label),
        };
        out += &format!(
            "cell {} {label}, {} run{}; Jain's index {}{}\n",
            cell.cell,
            cell.runs,
            if cell.runs == 1 { "" } else { "s" },
            show(cell.jain_index, 1.0, 3),
            jain_scope(cell)
        );
        let rows: Vec<[String; 10]> = cell
            .flows
            .iter()
            .map(|f| {
                [
                    f.name.clone(),
                    f.congestion_control.clone().unwrap_or_else(|| "-".into()),
                    show(f.goodput_bps, 1e-6, 2),
                    show(f.srtt_mean_ms.or(f.ping_rtt_mean_ms), 1.0, 1),
                    show(f.srtt_p95_ms, 1.0, 1),
                    show(f.retransmits, 1.0, 0),
                    show(f.ce_marks, 1.0, 0),
                    show(f.path_throughput_bps, 1e-6, 2),
                    show(f.path_delay_p95_ms, 1.0, 1),
                    show(f.path_loss_percent, 1.0, 2),
                ]
            })
            .collect();
        let header = [
            "flow".to_string(),
            "cc".into(),
            "goodput Mbit/s".into(),
            "rtt mean ms".into(),
            "srtt p95 ms".into(),
            "retransmits".into(),
            "CE marks".into(),
            "path Mbit/s".into(),
            "owd p95 ms".into(),
            "loss %".into(),
        ];
        let mut widths = header.clone().map(|h| h.len());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in std::iter::once(&header).chain(&rows) {
            let line: Vec<String> = row
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (c, w))| {
                    if i < 2 {
                        format!("{c:<w$}")
                    } else {
                        format!("{c:>w$}")
                    }
                })
                .collect();
            out += &format!("  {}\n", line.join("  "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_summary_spans_its_runs() {
        let run = |goodput: f64| {
            RunResult {
                cell: 0,
                cell_label: "x".into(),
                sweep: Default::default(),
                run: 0,
                seed: 1,
                flows: vec![
                    FlowResult {
                        name: "a".into(),
                        goodput_bps: Some(goodput),
                        ..FlowResult::default()
                    },
                    FlowResult {
                        name: "b".into(),
                        goodput_bps: Some(10e6),
                        ..FlowResult::default()
                    },
                ],
                jain_index: None,
                jain_flows: Vec::new(),
                jain_measure: Default::default(),
                accounting_ok: true,
                timing_warnings: Vec::new(),
            }
            .with_jain(&[true, true])
        };
        let runs = [run(10e6), run(30e6)];
        assert_eq!(runs[0].jain_index, Some(1.0));
        assert_eq!(runs[0].jain_flows, ["a", "b"]);
        let cell = summarize_cell(0, "x", &runs);
        let a = cell.flows[0].goodput_bps.unwrap();
        assert_eq!((a.mean, a.n), (20e6, 2));
        assert!((a.stddev - (200e12f64).sqrt()).abs() < 1.0);
        let text = table(&[cell]);
        assert!(text.contains("20.00 ± 14.14"), "{text}");
        assert!(text.contains("2 runs"), "{text}");
        assert!(text.starts_with("cell 0 (x), 2 runs"), "{text}");
        let unswept = summarize_cell(0, "(no sweep)", &runs);
        let text = table(&[unswept]);
        assert!(text.starts_with("cell 0 (no sweep), 2 runs"), "{text}");
    }

    /// A flow the other way, and a ping, are not in the index.
    #[test]
    fn jain_takes_the_flows_that_go_the_way_most_go() {
        let flow = |name: &str, goodput: Option<f64>| FlowResult {
            name: name.into(),
            goodput_bps: goodput,
            ..FlowResult::default()
        };
        let run = RunResult {
            cell: 0,
            cell_label: "x".into(),
            sweep: Default::default(),
            run: 0,
            seed: 1,
            flows: vec![
                flow("a", Some(10e6)),
                flow("rev", Some(1e6)),
                flow("b", Some(10e6)),
                flow("probe", None),
            ],
            jain_index: None,
            jain_flows: Vec::new(),
            jain_measure: Default::default(),
            accounting_ok: true,
            timing_warnings: Vec::new(),
        };
        let one_way = run.clone().with_jain(&[true, false, true, true]);
        assert_eq!(one_way.jain_index, Some(1.0));
        assert_eq!(one_way.jain_flows, ["a", "b"]);
        let text = table(&[summarize_cell(0, "x", std::slice::from_ref(&one_way))]);
        assert!(text.contains("Jain's index 1.000 over a, b\n"), "{text}");
        // A result written before the index named its flows names none.
        let older = RunResult {
            jain_flows: Vec::new(),
            ..one_way
        };
        let text = table(&[summarize_cell(0, "x", &[older])]);
        assert!(text.contains("Jain's index 1.000\n"), "{text}");
        // Most flows right to left: the index takes those.
        let other_way = run.with_jain(&[true, false, false, false]);
        assert_eq!(other_way.jain_flows, ["rev", "b"]);
    }

    /// A Pantheon scheme competes too: with one among the flows, every
    /// flow is taken by the links' throughput, its own included; a ping
    /// (with the links' figures too) stays out.
    #[test]
    fn jain_takes_a_pantheon_scheme_by_the_links_throughput() {
        let on_path = |bps: f64| {
            Some(PathFigures {
                throughput_bps: Some(bps),
                ..PathFigures::default()
            })
        };
        let flow = |name: &str, kind: &str, goodput: Option<f64>, path: f64| FlowResult {
            name: name.into(),
            kind: kind.into(),
            goodput_bps: goodput,
            path: on_path(path),
            ..FlowResult::default()
        };
        let run = |flows: Vec<FlowResult>| {
            RunResult {
                cell: 0,
                cell_label: "x".into(),
                sweep: Default::default(),
                run: 0,
                seed: 1,
                flows,
                jain_index: None,
                jain_flows: Vec::new(),
                jain_measure: JainMeasure::default(),
                accounting_ok: true,
                timing_warnings: Vec::new(),
            }
            .with_jain(&[true, true, true])
        };
        let mixed = run(vec![
            flow("cubic", "tcp", Some(9.0e6), 10e6),
            flow("copa", "pantheon", None, 30e6),
            flow("probe", "ping", None, 0.1e6),
        ]);
        assert_eq!(mixed.jain_flows, ["cubic", "copa"]);
        assert_eq!(mixed.jain_measure, JainMeasure::PathThroughput);
        // (10 + 30)² / (2 (10² + 30²)) = 0.8; the goodput, 9, is not mixed in.
        assert!((mixed.jain_index.unwrap() - 0.8).abs() < 1e-12, "{mixed:?}");
        let text = table(&[summarize_cell(0, "x", std::slice::from_ref(&mixed))]);
        assert!(
            text.contains("Jain's index 0.800 over cubic, copa (the links' throughputs)\n"),
            "{text}"
        );
        // TCP alone keeps the receivers' goodput, and says nothing more.
        let tcp = run(vec![
            flow("a", "tcp", Some(10e6), 12e6),
            flow("b", "tcp", Some(10e6), 8e6),
            flow("probe", "ping", None, 0.1e6),
        ]);
        assert_eq!(tcp.jain_measure, JainMeasure::Goodput);
        assert_eq!(tcp.jain_index, Some(1.0));
        let json = serde_json::to_string(&tcp).unwrap();
        assert!(!json.contains("jain_measure"), "{json}");
        let json = serde_json::to_string(&mixed).unwrap();
        assert!(
            json.contains("\"jain_measure\":\"path-throughput\""),
            "{json}"
        );
    }
}
