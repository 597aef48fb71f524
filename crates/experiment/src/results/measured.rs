//! What a run measured, per flow and per run, and the figures across
//! repetitions (mean and standard deviation, as papers print them).

use crate::file::{kind_name, FlowKind};
use crate::results::flow_paths::PathFigures;
use emu_core::flow::FlowTuple;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Mean and percentiles of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub samples: usize,
}

impl Distribution {
    /// None for an empty series. Percentiles by nearest rank.
    pub fn of(values: &[f64]) -> Option<Distribution> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Distribution {
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: nearest_rank(&sorted, 0.50),
            p95: nearest_rank(&sorted, 0.95),
            p99: nearest_rank(&sorted, 0.99),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            samples: sorted.len(),
        })
    }
}

/// The smallest value with at least `q` of the series at or below it.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// Jain's fairness index, (Σx)² / (n Σx²): 1 when all are equal, 1/n when
/// one flow has everything. None without flows or without any traffic.
pub fn jain(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|v| v * v).sum();
    if values.is_empty() || squares == 0.0 {
        return None;
    }
    Some(sum * sum / (values.len() as f64 * squares))
}

/// Mean and sample standard deviation (n − 1); the deviation is 0 for one
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub mean: f64,
    pub stddev: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Spread { mean, stddev, n })
    }
}

/// A TCP flow over its whole life, start-up included whatever its `omit`
/// says: the "mean TCP throughput" and "mean TCP RTT" of the SCE one- and
/// two-flow tests (draft-heist-tsvwg-sce-one-and-two-flow-tests), which
/// `emu report --table` lays out. Taken from the TCP_INFO samples of the
/// flow's data socket, so its resolution is the run's `sample_interval`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
    /// (TCP and UDP flows; see [`crate::results::marks`]).
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
    /// [`crate::results::flow_paths`]).
    #[serde(default)]
    pub tuples: Vec<FlowTuple>,
    /// The flow's throughput, 95th-percentile one-way delay and loss from
    /// the links' logs, whatever its kind (beside TCP's and iperf3's own
    /// view above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathFigures>,
}

/// One repetition of one cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub cell: usize,
    pub cell_label: String,
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
    /// Where the run did not keep time (see [`crate::run::timing`]).
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
        self.jain_index = jain(&taken.iter().map(|(_, v)| *v).collect::<Vec<_>>());
        self.jain_flows = taken.iter().map(|(f, _)| f.name.clone()).collect();
        self.jain_measure = measure;
        self
    }
}

impl FlowResult {
    /// A Pantheon scheme the links measured: it competes like a TCP or UDP
    /// flow, though no receiver of emu's reports its goodput.
    fn is_scheme_on_path(&self) -> bool {
        self.kind == kind_name(FlowKind::Pantheon)
            && self
                .path
                .as_ref()
                .is_some_and(|p| p.throughput_bps.is_some())
    }
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
    fn jain_is_one_for_equal_shares_and_one_over_n_for_a_hog() {
        assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert!((jain(&[10.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        // (1+2+3)^2 / (3 * 14) = 36/42
        assert!((jain(&[1.0, 2.0, 3.0]).unwrap() - 36.0 / 42.0).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn spread_uses_the_sample_deviation() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(Spread::of(&[3.0]).unwrap().stddev, 0.0);
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Distribution::of(&values).unwrap();
        assert_eq!(
            (d.p50, d.p95, d.p99, d.min, d.max),
            (50.0, 95.0, 99.0, 1.0, 100.0)
        );
        assert_eq!(d.mean, 50.5);
        assert_eq!(Distribution::of(&[7.0]).unwrap().p99, 7.0);
    }

    #[test]
    fn a_cell_summary_spans_its_runs() {
        let run = |goodput: f64| {
            RunResult {
                cell: 0,
                cell_label: "x".into(),
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
        use crate::results::flow_paths::PathFigures;
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
