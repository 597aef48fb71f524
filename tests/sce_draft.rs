//! The SCE one- and two-flow tests (experiments/sce-draft/): the study's
//! cells are the draft's grids, written out here by hand from the draft,
//! every one once; and its quick forms run through `emu run DIR --quick`,
//! every flow ends well with its whole-flow figures, and `emu report
//! --table` lays them out as the draft's tables.
//!
//! The quick forms need root, iperf3 and bpftool, as the other experiment
//! tests (EMU_SKIP_PRIVILEGED=1 opts out; CI never sets it).

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use support::experiment::{run_quick_forms, swept_values};
use support::{emu, start, text};

fn study() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("experiments/sce-draft")
}

/// The draft's congestion controls, by emu's names.
const CCS: [&str; 5] = ["cubic", "reno", "reno-sce", "dctcp", "dctcp-sce"];

/// One cell as the draft names it: Cake's bandwidth (kbit/s), the delay
/// added to the round trip (µs), Cake's set-up, and the flows' congestion
/// controls (a pair sorted: either order is the same test).
type DraftCell = (u64, u64, String, Vec<String>);

/// `bottleneck.queue = cake bandwidth 0.5mbit flowblind sce` and
/// `bottleneck.delay = 2.5ms` (each way) as the draft's cell.
fn draft_cell(values: &serde_json::Value) -> DraftCell {
    let queue = values["bottleneck.queue"].as_str().expect("a queue");
    let words: Vec<&str> = queue.split_whitespace().collect();
    assert_eq!(words[..2], ["cake", "bandwidth"], "{queue}");
    let mbit: f64 = words[2]
        .strip_suffix("mbit")
        .expect("Mbit/s")
        .parse()
        .unwrap();
    let setup = match words[3..].join(" ").as_str() {
        "sce" | "triple-isolate sce" => "triple-isolate",
        "flowblind sce" => "flowblind",
        "flowblind sce-single" => "flowblind sce-single",
        other => panic!("Cake set-up '{other}' is not one of the draft's"),
    };
    let delay = values["bottleneck.delay"].as_str().expect("a delay");
    let each_way_ms: f64 = delay.strip_suffix("ms").expect("in ms").parse().unwrap();
    let mut ccs: Vec<String> = ["flows.0.cc", "flows.1.cc"]
        .iter()
        .filter_map(|k| values[*k].as_str().map(String::from))
        .collect();
    ccs.sort();
    (
        (mbit * 1000.0).round() as u64,
        (2.0 * each_way_ms * 1000.0).round() as u64,
        setup.to_string(),
        ccs,
    )
}

/// Each file's cells, as the draft names them.
fn cells_of(file: &str) -> Vec<DraftCell> {
    swept_values(&study().join(file))
        .iter()
        .map(draft_cell)
        .collect()
}

fn grid(
    kbits: &[u64],
    delays_ms: &[u64],
    setups: &[&str],
    pairs: &[Vec<&str>],
) -> BTreeSet<DraftCell> {
    let mut cells = BTreeSet::new();
    for &rate in kbits {
        for &delay in delays_ms {
            for setup in setups {
                for ccs in pairs {
                    let mut ccs: Vec<String> = ccs.iter().map(|c| c.to_string()).collect();
                    ccs.sort();
                    cells.insert((rate, delay * 1000, setup.to_string(), ccs));
                }
            }
        }
    }
    cells
}

/// One flow: 8 bandwidths × 8 delays × 5 congestion controls (320); two
/// flows: every pair of the five, each against itself too (15), × 5
/// bandwidths × 4 delays × 3 Cake set-ups (900). Each draft cell is in
/// the study once, and the study has no other.
#[test]
fn the_study_has_every_cell_of_the_drafts_grids_once() {
    let one_flow = grid(
        &[500, 1_000, 2_000, 5_000, 10_000, 25_000, 50_000, 100_000],
        &[0, 2, 5, 10, 20, 40, 80, 160],
        &["triple-isolate"],
        &CCS.iter().map(|cc| vec![*cc]).collect::<Vec<_>>(),
    );
    assert_eq!(one_flow.len(), 320);
    let mut pairs = Vec::new();
    for (i, a) in CCS.iter().enumerate() {
        for b in &CCS[i..] {
            pairs.push(vec![*a, *b]);
        }
    }
    let two_flow = grid(
        &[1_000, 5_000, 10_000, 50_000, 100_000],
        &[0, 10, 20, 80],
        &["flowblind", "flowblind sce-single", "triple-isolate"],
        &pairs,
    );
    assert_eq!(two_flow.len(), 900);

    let listed = cells_of("1-one-flow.toml");
    assert_eq!(listed.len(), 320, "one cell per draft cell");
    assert_eq!(listed.iter().cloned().collect::<BTreeSet<_>>(), one_flow);
    let mut listed = Vec::new();
    for file in [
        "2-two-flow-flowblind.toml",
        "3-two-flow-flowblind-sce-single.toml",
        "4-two-flow-triple-isolate.toml",
    ] {
        let cells = cells_of(file);
        assert_eq!(cells.len(), 300, "{file}");
        let setups: BTreeSet<&String> = cells.iter().map(|c| &c.2).collect();
        assert_eq!(setups.len(), 1, "{file}: one Cake set-up a file");
        listed.extend(cells);
    }
    assert_eq!(listed.len(), 900);
    assert_eq!(listed.into_iter().collect::<BTreeSet<_>>(), two_flow);
    let files = std::fs::read_dir(study())
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .count();
    assert_eq!(files, 4, "the study's files are the four above");
}

/// The quick forms (Reno and Reno-SCE alone at 10 Mbit/s and 2 and 20 ms;
/// Reno against Reno-SCE through each Cake set-up) run; every flow moves
/// data, with its whole-flow figures; `emu report --table` lays the
/// one-flow cells out by congestion control and delay, the RTT over the
/// whole flow at least the delay added, the throughput within Cake's
/// bandwidth; the two-flow files, which do not sweep those axes, get no
/// tables and say so.
#[test]
fn the_quick_forms_run_and_report_their_tables() {
    let Some(_machine) = start() else { return };
    let (out, root, flows) = run_quick_forms(&study(), "sce-draft-quick", 10e6);
    for (label, flow) in &flows {
        let whole = &flow["whole_flow"];
        assert!(
            whole["samples"].as_u64().unwrap_or(0) > 10,
            "{label}: {whole}"
        );
    }
    assert_eq!(
        flows.len(),
        4 + 3 * 2,
        "four one-flow cells, three two-flow cells"
    );

    let report = emu()
        .args([
            "report",
            root.to_str().unwrap(),
            "--table",
            "rtt,throughput",
            "--rows",
            "cc",
            "--cols",
            "delay",
        ])
        .output()
        .unwrap();
    let printed = text(&report.stdout);
    let notes = text(&report.stderr);
    eprintln!("{printed}");
    assert!(report.status.success(), "{notes}");
    assert!(
        notes.contains("no tables for 2-two-flow-flowblind-quick"),
        "{notes}"
    );
    // The RTT table: rows reno and reno-sce, columns 1 and 10 ms each way.
    let rtt = printed
        .split("### ")
        .find(|t| t.starts_with("mean TCP RTT (ms), flow flow\n"))
        .unwrap_or_else(|| panic!("no RTT table in\n{printed}"));
    for cc in ["reno", "reno-sce"] {
        let row = rtt
            .lines()
            .find(|l| l.starts_with(&format!("| {cc} ")))
            .unwrap_or_else(|| panic!("no row {cc} in\n{rtt}"));
        let cells: Vec<f64> = row
            .split('|')
            .map(str::trim)
            .skip(2)
            .filter(|c| !c.is_empty())
            .map(|c| c.parse().unwrap_or_else(|_| panic!("'{c}' in {row}")))
            .collect();
        assert_eq!(cells.len(), 2, "{row}");
        assert!(cells[0] >= 2.0 && cells[1] >= 20.0, "{cc}: {row}");
        assert!(cells[1] > cells[0], "{cc}: {row}");
    }
    assert!(
        printed.contains("### mean throughput (Mbit/s), flow flow\n"),
        "{printed}"
    );
    let md = root.join("report/1-one-flow-quick/tables/tables.md");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| flows.0.cc \\ bottleneck.delay |"), "{md}");
    std::fs::remove_dir_all(&out).unwrap();
}
