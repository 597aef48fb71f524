//! The pages of what `emu run` wrote, in a real browser: a study of one
//! scenario in two variants (SCE through a single queue, L4S through
//! DualPI2), each a sweep of two cells. Every flow is named as the
//! experiment named it (never by its 5-tuple), every chart is drawn, the
//! dual queue shows its L and C queues, the moments the path changed (the
//! L4S variant's rate step and queue replacement) are marked on the time
//! axis of its flows' and queues' charts, and the index pairs the two
//! variants of each cell, linking both pages.
//! Needs `chromium` (scripts/install-deps installs it).

use emu_core::flow::FlowTuple;
use emu_core::log::{write_log_file, Change, Direction, Event, LogHeader, Record};
use emu_core::Nanos;
use report::draw::render::FigureFormat;
use report::experiments::page::PageOptions;
use std::path::{Path, PathBuf};

#[path = "support/browser.rs"]
mod browser;

const MS: Nanos = 1_000_000;
/// The monotonic instant the flows started (`clock.json`).
const START: Nanos = 7_000 * MS;
const CSV_HEADER: &str = "time_s,inode,src,sport,dst,dport,state,congestion_control,srtt_us,rttvar_us,min_rtt_us,cwnd,ssthresh,mss,unacked,lost,total_retrans,pacing_rate_Bps,delivery_rate_Bps,bytes_acked,bytes_received,bytes_sent,bytes_retrans,delivered,delivered_ce,ecn,ecn_seen";

/// The two flows: (name, sender's port); both to port 5201.
const FLOWS: [(&str, u16); 2] = [("alpha-bulk", 40100), ("beta-bulk", 40200)];

fn tuple(port: u16) -> FlowTuple {
    FlowTuple {
        protocol: 6,
        source: "10.9.0.2".parse().unwrap(),
        destination: "10.9.1.2".parse().unwrap(),
        source_port: port,
        destination_port: 5201,
    }
}

fn reversed(t: &FlowTuple) -> FlowTuple {
    FlowTuple {
        protocol: t.protocol,
        source: t.destination,
        destination: t.source,
        source_port: t.destination_port,
        destination_port: t.source_port,
    }
}

/// The bottleneck's log: 2 s of both flows (from 0.5 s after the flows
/// started; before it, an idle link), the packets ECT(0) but for the L4S
/// variant's first flow (ECT(1)), every 10th marked (CE, or ECT(1) for
/// SCE), every 50th dropped; ACKs the other way. The L4S variant's link
/// steps its rate to 40 Mbit/s at 1 s and replaces its queue at 1.5 s
/// (both directions log both).
fn bottleneck_log(path: &Path, l4s: bool) {
    let mut records = Vec::new();
    for (f, (_, port)) in FLOWS.iter().enumerate() {
        let id = f as u32 + 1;
        let (named, n) = tuple(*port).records(START, id, 0, Direction::Uplink);
        records.extend_from_slice(&named[..n]);
        let (named, n) = reversed(&tuple(*port)).records(START, 10 + id, 0, Direction::Downlink);
        records.extend_from_slice(&named[..n]);
    }
    for k in 0..4000u64 {
        let f = (k % 2) as u32;
        let ecn = if l4s && f == 0 { 1 } else { 2 };
        let t = START + 500 * MS + k / 2 * MS;
        let queue = (k % 40) * MS / 4;
        let r = |time, event, detail, ecn| Record {
            time,
            sojourn: queue,
            flow: f + 1,
            fingerprint: k as u32,
            bytes: 1500,
            queue_bytes: 3000,
            queue_packets: 2,
            shell: 0,
            direction: Direction::Uplink,
            event,
            detail,
            ecn,
        };
        records.push(r(t, Event::Arrive, 0, ecn));
        records.push(r(t, Event::Enqueue, 0, ecn));
        if k % 50 == 49 {
            records.push(r(t + queue, Event::Drop, 3, ecn));
            continue;
        }
        let mut out = ecn;
        if k % 10 == 3 {
            let (mark, after) = if l4s { (16, 3) } else { (17, 1) };
            records.push(r(t + queue / 2, Event::Mark, mark, after));
            out = after;
        }
        records.push(r(t + queue + 2 * MS, Event::Depart, 0, out));
        let ack = |time, event| Record {
            flow: 10 + f + 1,
            fingerprint: 1_000_000 + k as u32,
            bytes: 52,
            direction: Direction::Downlink,
            sojourn: 0,
            ..r(time, event, 0, 0)
        };
        records.push(ack(t + 10 * MS, Event::Arrive));
        records.push(ack(t + 10 * MS, Event::Enqueue));
        records.push(ack(t + 12 * MS, Event::Depart));
    }
    for direction in Direction::BOTH.into_iter().filter(|_| l4s) {
        let change = |time, what: Change, value| Record {
            time,
            sojourn: value,
            direction,
            event: Event::Change,
            detail: what as u8,
            ..Record::default()
        };
        records.push(change(START - 1000 * MS, Change::Rate, 50_000_000));
        records.push(change(START + 1000 * MS, Change::Rate, 40_000_000));
        records.push(change(START + 1500 * MS, Change::Queue, 1));
    }
    records.sort_by_key(|r| r.time);
    let header = LogHeader {
        description: "link 50mbit".into(),
        monotonic_origin_ns: START - 1000 * MS,
        rate_bps: Some([Some(50_000_000), Some(50_000_000)]),
        ..LogHeader::default()
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    write_log_file(path, &header, &records).unwrap();
}

/// One run: result.json (the first flow with its tuples, the second
/// named through its TCP samples only), clock.json, the TCP samples and
/// the bottleneck's log.
fn write_run(dir: &Path, cell: usize, label: &str, l4s: bool) {
    std::fs::create_dir_all(dir.join("tcp")).unwrap();
    let flows: Vec<serde_json::Value> = FLOWS
        .iter()
        .enumerate()
        .map(|(i, (name, port))| {
            let mut f = serde_json::json!({
                "name": name, "kind": "tcp", "from": "left", "to": "right",
                "congestion_control": if l4s { "prague" } else { "reno-sce" },
                "goodput_bps": 2.0e7,
            });
            if i == 0 {
                f["tuples"] = serde_json::json!([{
                    "protocol": 6, "source": "10.9.0.2", "source_port": port,
                    "destination": "10.9.1.2", "destination_port": 5201,
                }]);
            }
            f
        })
        .collect();
    let result = serde_json::json!({
        "cell": cell, "cell_label": label, "run": 0, "seed": 1,
        "flows": flows, "jain_index": 0.99, "accounting_ok": true,
    });
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    std::fs::write(
        dir.join("clock.json"),
        format!("{{\"flows_started_monotonic_ns\": {START}}}"),
    )
    .unwrap();
    for (name, port) in FLOWS {
        let rows: Vec<String> = (0..25)
            .map(|i| {
                let t = i as f64 * 0.1;
                let rate = if t < 0.5 { 0 } else { 2_500_000 + i * 10_000 };
                format!(
                    "{t:.1},7,10.9.0.2,{port},10.9.1.2,5201,1,cubic,{},0,20000,{},0,1448,0,0,0,0,{rate},{},0,0,0,0,0,0,0",
                    20_000 + i * 300,
                    10 + i,
                    i * 100_000
                )
            })
            .collect();
        let csv = std::iter::once(CSV_HEADER.to_string())
            .chain(rows)
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(dir.join(format!("tcp/{name}.csv")), csv).unwrap();
    }
    bottleneck_log(&dir.join("links/bottleneck-0/0-link.emulog"), l4s);
}

/// One experiment of the study: meta.json with its scenario and variant,
/// two cells (a sweep of the side delay), one run each.
fn write_experiment(dir: &Path, variant: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let meta = serde_json::json!({
        "cells_in_grid": 2, "scenario": "two-flow", "variant": variant,
    });
    std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
    let l4s = variant == "l4s";
    for (cell, label) in ["hosts.left.delay=10ms", "hosts.left.delay=40ms"]
        .iter()
        .enumerate()
    {
        let cell_dir = dir.join(format!("cell-{cell}"));
        let plan = serde_json::json!({
            "runs": 1,
            "hosts": [
                {"name": "left", "address": "10.9.0.2"},
                {"name": "right", "address": "10.9.1.2"},
            ],
            "bottlenecks": [{
                "forward": {"queue": if l4s { "dualpi2" } else { "cake" }, "server": "50000000 bit/s"},
                "reverse": {"server": "50000000 bit/s"},
            }],
        });
        std::fs::create_dir_all(&cell_dir).unwrap();
        std::fs::write(cell_dir.join("plan.json"), plan.to_string()).unwrap();
        write_run(&cell_dir.join("run-0"), cell, label, l4s);
    }
}

/// The merged table `emu report` hands the page (mean ± stddev per flow).
fn table() -> report::experiments::merge::Merged {
    let spread = |m: f64| serde_json::json!({"mean": m, "stddev": m / 10.0, "n": 1});
    let cells: Vec<serde_json::Value> = (0..2)
        .map(|cell| {
            serde_json::json!({
                "cell": cell, "label": "", "runs": 1, "jain_index": spread(0.99),
                "flows": FLOWS.iter().map(|(name, _)| serde_json::json!({
                    "name": name, "congestion_control": "prague",
                    "goodput_bps": spread(2.0e7), "srtt_mean_ms": spread(21.0),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "cells": cells })).unwrap()
}

/// The SVGs of a DOM, each one's text.
fn svgs(dom: &str) -> Vec<&str> {
    dom.split("<svg").skip(1).collect()
}

#[test]
fn the_study_pages_name_the_flows_draw_every_chart_and_pair_the_variants() {
    let root = std::env::temp_dir().join(format!("emu-experiment-pages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let study = root.join("bakeoff");
    write_experiment(&study.join("two-flow-sce"), "sce");
    write_experiment(&study.join("two-flow-l4s"), "l4s");
    let found = report::experiments::results_dir::find(std::slice::from_ref(&study)).unwrap();
    assert_eq!(found.len(), 2);
    let tables = vec![table(), table()];
    let out = root.join("report");
    let options = PageOptions {
        bin: 100 * MS,
        formats: vec![FigureFormat::Svg],
        tables: None,
    };
    let written =
        report::experiments::report::write(&found, &tables, &out, "bakeoff", &options).unwrap();
    assert!(written.warnings.is_empty(), "{:?}", written.warnings);
    assert_eq!(written.index, out.join("index.html"));
    assert_eq!(written.pages.len(), 2);

    for variant in ["sce", "l4s"] {
        let dir = out.join(format!("two-flow-{variant}"));
        let page = dir.join("index.html");
        let dom = browser::dom(&page, &root.join(format!("profile-{variant}")));
        // Every chart written is inline, and each has a line drawn.
        let files = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
            .count();
        let charts = svgs(&dom);
        // Per cell: delivery, cwnd, marks, queue delay, queue signals.
        assert_eq!(charts.len(), 10, "{variant}: charts in the DOM");
        assert_eq!(
            charts.len(),
            files,
            "{variant}: charts in the DOM and files"
        );
        for (i, chart) in charts.iter().enumerate() {
            assert!(
                chart.contains("<polyline") || chart.contains("<polygon"),
                "{variant}: chart {i} has nothing drawn"
            );
        }
        // Flows by their names: in the table and the legends, including
        // the one named only through its TCP samples; never a 5-tuple.
        for (name, _) in FLOWS {
            assert!(
                dom.contains(&format!("<td>{name}</td>")),
                "{variant}: {name}"
            );
            for what in ["delivery rate", "srtt", "CE", "ECT(1)"] {
                assert!(
                    dom.contains(&format!(">{name} {what}</text>")),
                    "{variant}: no legend '{name} {what}'"
                );
            }
            assert!(
                dom.contains(&format!(">{name} one-way through the bottleneck</text>")),
                "{variant}: {name}'s one-way delay is not drawn"
            );
        }
        assert!(!dom.contains("10.9.0.2"), "{variant}: a 5-tuple is shown");
        // The bottleneck's throughput and utilization, while the flows
        // were active and since they started.
        assert!(
            dom.contains("<p>bottleneck-0 uplink: ")
                && dom.contains(" Mbit/s while the flows were active (")
                && dom.contains(", of 50.00 Mbit/s</p>"),
            "{variant}: the bottleneck's utilization"
        );
        // The sweep's axes head the cells.
        assert!(dom.contains("hosts.left.delay = 40ms"), "{variant}");
        assert!(
            dom.contains("20.00 ± 2.00"),
            "{variant}: the table across runs"
        );
        // The dual queue shows its L and C queues; the single queue one.
        for queue in ["L", "C"] {
            assert_eq!(
                dom.contains(&format!(">uplink {queue} mean</text>")),
                variant == "l4s",
                "{variant}: the {queue} queue"
            );
        }
        assert_eq!(
            dom.contains(">uplink mean</text>"),
            variant == "sce",
            "{variant}: single queue"
        );
        // The L4S variant's rate step and queue replacement are marked on
        // every chart's time axis (each once, though both directions
        // logged them); the SCE variant's path never changed.
        for chart in &charts {
            let markers = chart.matches("class=\"marker\"").count();
            if variant == "l4s" {
                assert_eq!(markers, 2, "{variant}: {chart}");
                assert!(chart.contains(">rate 40 Mbit/s</text>"), "{chart}");
                assert!(chart.contains(">queue step 1</text>"), "{chart}");
            } else {
                assert_eq!(markers, 0, "{variant}: {chart}");
            }
        }
    }

    // The index pairs the variants cell by cell: one row per cell with a
    // link to each variant's section, and each link's target exists.
    let dom = browser::dom(&written.index, &root.join("profile-index"));
    assert!(
        dom.contains("<h2 id=\"scenario-two-flow\">two-flow</h2>"),
        "{dom}"
    );
    let rows: Vec<&str> = dom.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), 2, "one row per cell: {dom}");
    for (cell, row) in rows.iter().enumerate() {
        for variant in ["sce", "l4s"] {
            let href = format!("two-flow-{variant}/index.html#cell-{cell}");
            assert!(
                row.contains(&format!("href=\"{href}\"")),
                "row {cell}: {row}"
            );
            let page: PathBuf = out.join(format!("two-flow-{variant}/index.html"));
            let target = std::fs::read_to_string(page).unwrap();
            assert!(target.contains(&format!("id=\"cell-{cell}\"")));
        }
        assert!(row.contains("alpha-bulk 20.00"), "row {cell}: {row}");
        // Each variant's first delivery chart, as an image of its file.
        for variant in ["sce", "l4s"] {
            let chart = format!("two-flow-{variant}/cell-{cell}-run-0-delivery.svg");
            assert!(
                row.contains(&format!("src=\"{chart}\"")),
                "row {cell}: {row}"
            );
            assert!(out.join(&chart).is_file());
        }
    }
    assert!(dom.find(">l4s</th>").unwrap() < dom.find(">sce</th>").unwrap());
    std::fs::remove_dir_all(&root).unwrap();
}
