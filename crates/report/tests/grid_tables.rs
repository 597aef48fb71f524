//! Tables of one swept axis by another, from a synthetic results
//! directory as `emu run` writes it: a grid of Cake's bandwidth by delay
//! by congestion control, two runs a cell, one flow each. Every figure is
//! known, so each table cell is checked against the mean it must hold.

use report::experiments::grid_tables::{build, shown, Difference, GridTable, Metric, TableSpec};
use report::experiments::results_dir::{find, ExperimentDir};
use report::experiments::table_formats::{csv, markdown, write};
use std::path::{Path, PathBuf};

const RATES_MBIT: [u32; 2] = [5, 50];
const DELAYS_MS: [u32; 3] = [0, 10, 40];
const CCS: [&str; 2] = ["reno", "reno-sce"];

/// A flow's throughput in a run, in Mbit/s: distinct per cell, run and
/// congestion control.
fn throughput(rate: u32, delay: u32, cc: usize, run: u32) -> f64 {
    rate as f64 * 0.8 - delay as f64 * 0.01 + cc as f64 * 0.5 + run as f64 * 0.2
}

fn rtt(delay: u32, cc: usize, run: u32) -> f64 {
    delay as f64 + 5.0 - 2.0 * cc as f64 + run as f64
}

fn write_cell(root: &Path, cell: usize, rate: u32, delay: u32, cc: usize) {
    let label = format!(
        "bottleneck.queue=cake bandwidth {rate}mbit sce bottleneck.delay={delay}ms flows.0.cc={}",
        CCS[cc]
    );
    let cell_dir = root.join(format!("cell-{cell}"));
    for run in 0..2 {
        let dir = cell_dir.join(format!("run-{run}"));
        std::fs::create_dir_all(dir.join("links")).unwrap();
        let result = serde_json::json!({
            "cell": cell, "cell_label": label, "run": run, "seed": 1,
            "flows": [{"name": "bulk", "kind": "tcp", "from": "a", "to": "b",
                       "ended": "exit 0",
                       "whole_flow": {"throughput_bps": throughput(rate, delay, cc, run) * 1e6,
                                      "srtt_mean_ms": rtt(delay, cc, run), "samples": 10}}],
            "jain_index": 1.0 - 0.1 * run as f64, "accounting_ok": true
        });
        std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    }
    // Cake shapes; the link has no rate of its own.
    let direction = serde_json::json!({"server": "unlimited",
        "queue": {"discipline": "cake", "bandwidth": rate as f64 * 1e6 / 8.0}});
    let plan = serde_json::json!({"runs": 2,
        "bottlenecks": [{"forward": direction, "reverse": direction}]});
    std::fs::write(cell_dir.join("plan.json"), plan.to_string()).unwrap();
}

/// The grid, less the cell of 50 Mbit/s, 40 ms, reno-sce (not run).
fn experiment(base: &Path) -> ExperimentDir {
    let root = base.join("one-flow");
    let mut cell = 0;
    for rate in RATES_MBIT {
        for delay in DELAYS_MS {
            for cc in 0..CCS.len() {
                if !(rate == 50 && delay == 40 && cc == 1) {
                    write_cell(&root, cell, rate, delay, cc);
                }
                cell += 1;
            }
        }
    }
    let mut found = find(&[root]).unwrap();
    assert_eq!(found.len(), 1);
    found.remove(0)
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-grid-tables-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn spec(metrics: &[Metric], differences: &[&str]) -> TableSpec {
    TableSpec {
        metrics: metrics.to_vec(),
        rows: "queue".into(),
        cols: "delay".into(),
        differences: differences
            .iter()
            .map(|d| Difference::parse(d).unwrap())
            .collect(),
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn find_table<'a>(tables: &'a [GridTable], metric: Metric, context: &[&str]) -> &'a GridTable {
    tables
        .iter()
        .find(|t| t.metric == metric && t.context == context)
        .unwrap_or_else(|| {
            let titles: Vec<String> = tables.iter().map(|t| t.title()).collect();
            panic!("no table {metric:?} {context:?} among {titles:#?}")
        })
}

/// Rows are the bandwidths, columns the delays, one table per congestion
/// control; each cell the mean of its two runs; the cell not run empty.
#[test]
fn a_metric_is_laid_out_by_two_axes_one_table_per_other_value() {
    let base = temp("layout");
    let e = experiment(&base);
    let tables = build(&e, &spec(&[Metric::Throughput, Metric::Rtt], &[])).unwrap();
    assert_eq!(tables.len(), 4, "two metrics by two congestion controls");
    let reno = find_table(
        &tables,
        Metric::Throughput,
        &["flows.0.cc = reno", "flow bulk"],
    );
    assert_eq!(reno.row_axis, "bottleneck.queue");
    assert_eq!(reno.col_axis, "bottleneck.delay");
    assert_eq!(reno.rows, ["5mbit", "50mbit"]);
    assert_eq!(reno.cols, ["0ms", "10ms", "40ms"]);
    for (r, rate) in RATES_MBIT.into_iter().enumerate() {
        for (c, delay) in DELAYS_MS.into_iter().enumerate() {
            let mean = (throughput(rate, delay, 0, 0) + throughput(rate, delay, 0, 1)) / 2.0;
            assert!(
                close(reno.values[r][c], mean),
                "{rate} {delay}: {:?}",
                reno.values[r][c]
            );
        }
    }
    let sce = find_table(
        &tables,
        Metric::Rtt,
        &["flows.0.cc = reno-sce", "flow bulk"],
    );
    assert!(close(sce.values[0][1], 10.0 + 5.0 - 2.0 + 0.5));
    assert_eq!(sce.values[1][2], None, "the cell that did not run");
    let text = markdown(reno);
    assert!(
        text.starts_with("### mean throughput (Mbit/s), flows.0.cc = reno, flow bulk\n\n"),
        "{text}"
    );
    assert!(
        text.contains("| bottleneck.queue \\ bottleneck.delay |"),
        "{text}"
    );
    // At 5 Mbit/s: 4 − delay/100, plus 0.1 for the runs' mean.
    let row = text.lines().find(|l| l.starts_with("| 5mbit ")).unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[1..5], ["5mbit", "4.10", "4.00", "3.70"], "{text}");
    let _ = std::fs::remove_dir_all(&base);
}

/// reno-sce minus reno, cell by cell; utilization over Cake's own
/// bandwidth; Jain's index one table per congestion control, no flow.
#[test]
fn differences_utilization_and_jain() {
    let base = temp("difference");
    let e = experiment(&base);
    let tables = build(
        &e,
        &spec(&[Metric::Utilization, Metric::Jain], &["cc=reno-sce,reno"]),
    )
    .unwrap();
    // Plain tables first, then the differences.
    let kinds: Vec<bool> = tables.iter().map(|t| t.difference).collect();
    assert_eq!(
        kinds,
        [false, false, false, false, true, true],
        "{tables:#?}"
    );
    let share = find_table(
        &tables,
        Metric::Utilization,
        &["flows.0.cc = reno", "flow bulk"],
    );
    let mean = (throughput(50, 10, 0, 0) + throughput(50, 10, 0, 1)) / 2.0 / 50.0;
    assert!(close(share.values[1][1], mean), "{:?}", share.values);
    let jain = find_table(&tables, Metric::Jain, &["flows.0.cc = reno"]);
    assert!(close(jain.values[0][0], 0.95));
    let diff = find_table(
        &tables,
        Metric::Utilization,
        &["flows.0.cc = reno-sce minus reno", "flow bulk"],
    );
    // 0.5 Mbit/s more for reno-sce in every cell: 0.01 of 50, 0.1 of 5.
    assert!(close(diff.values[0][2], 0.1), "{:?}", diff.values);
    assert!(close(diff.values[1][0], 0.01), "{:?}", diff.values);
    assert_eq!(diff.values[1][2], None, "reno-sce did not run there");
    let text = markdown(diff);
    assert!(text.contains(" +0.100 |"), "{text}");
    assert!(text.contains(" - |"), "{text}");
    let _ = std::fs::remove_dir_all(&base);
}

/// Markdown and CSV files, one CSV per table; empty cells stay empty in
/// CSV; a value with a comma is quoted.
#[test]
fn tables_are_written_as_markdown_and_csv() {
    let base = temp("files");
    let e = experiment(&base);
    let tables = build(&e, &spec(&[Metric::Rtt], &["flows.0.cc=reno-sce,reno"])).unwrap();
    let out = base.join("report");
    write(&tables, &out).unwrap();
    let all = std::fs::read_to_string(out.join("tables/tables.md")).unwrap();
    assert_eq!(all.matches("### ").count(), 3, "{all}");
    let mut csvs: Vec<String> = std::fs::read_dir(out.join("tables"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".csv"))
        .collect();
    csvs.sort();
    assert_eq!(csvs.len(), 3, "{csvs:?}");
    assert!(csvs[0].starts_with("01-mean_TCP_RTT"), "{csvs:?}");
    let sce = find_table(
        &tables,
        Metric::Rtt,
        &["flows.0.cc = reno-sce", "flow bulk"],
    );
    let text = csv(sce);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "bottleneck.queue \\ bottleneck.delay,0ms,10ms,40ms"
    );
    assert_eq!(lines[1], "5mbit,3.5,13.5,43.5");
    assert_eq!(lines[2], "50mbit,3.5,13.5,");
    let _ = std::fs::remove_dir_all(&base);
}

/// An axis the sweep lacks is named with the axes it has; a short name
/// two keys end with asks for the whole key; rows and columns differ.
#[test]
fn unknown_and_ambiguous_axes_are_refused_by_name() {
    let base = temp("axes");
    let e = experiment(&base);
    let mut bad = spec(&[Metric::Rtt], &[]);
    bad.rows = "rate".into();
    let error = build(&e, &bad).unwrap_err();
    assert!(error.contains("no swept axis 'rate'"), "{error}");
    assert!(
        error.contains("bottleneck.queue, bottleneck.delay, flows.0.cc"),
        "{error}"
    );
    let mut same = spec(&[Metric::Rtt], &[]);
    same.cols = "bottleneck.queue".into();
    assert!(build(&e, &same)
        .unwrap_err()
        .contains("both bottleneck.queue"));
    let mut on_rows = spec(&[Metric::Rtt], &["delay=0ms,10ms"]);
    on_rows.rows = "cc".into();
    let error = build(&e, &on_rows).unwrap_err();
    assert!(error.contains("rows' or the columns'"), "{error}");
    // Two flows' cc: `cc` alone could be either.
    let keys = [
        "bottleneck.queue",
        "bottleneck.delay",
        "flows.0.cc",
        "flows.1.cc",
    ];
    let mut two = e.clone();
    for cell in &mut two.cells {
        cell.label += " flows.1.cc=cubic";
    }
    assert_eq!(report::experiments::grid_tables::axes(&two), keys);
    let mut ambiguous = spec(&[Metric::Rtt], &["cc=reno-sce,reno"]);
    ambiguous.rows = "queue".into();
    let error = build(&two, &ambiguous).unwrap_err();
    assert!(error.contains("any of flows.0.cc, flows.1.cc"), "{error}");
    for bad in ["cc", "cc=a", "=a,b", "cc=a,b,c"] {
        assert!(Difference::parse(bad).is_err(), "{bad}");
    }
    assert!(Metric::parse("goodput")
        .unwrap_err()
        .contains("throughput, utilization, rtt, jain"));
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn shared_words_are_left_out_of_the_labels() {
    let values = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shown(&values(&[
            "cake bandwidth 5mbit flowblind sce",
            "cake bandwidth 50mbit flowblind sce"
        ])),
        ["5mbit", "50mbit"]
    );
    // Unequal lengths, or one value, are shown whole.
    assert_eq!(shown(&values(&["pie", "pie ecn"])), ["pie", "pie ecn"]);
    assert_eq!(shown(&values(&["cake sce"])), ["cake sce"]);
}
