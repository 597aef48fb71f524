//! The AQM evaluation thesis's static-link grid (experiments/aqm-thesis/):
//! the study's cells are the thesis's 504 runs, written out here by hand
//! from its grid, every one once, each with the queue its scheme and flow
//! mix call for; and its quick forms run through `emu run DIR --quick`,
//! every flow of every file moving data.
//!
//! The quick forms need root, iperf3 and bpftool, as the other experiment
//! tests (EMU_SKIP_PRIVILEGED=1 opts out; CI never sets it).

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use support::experiment::{run_quick_forms, swept_values};
use support::start;

fn study() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("experiments/aqm-thesis")
}

/// One run as the thesis's appendix names it: scheme, nL, nC, the C and
/// the L congestion control, and `ecn` on the C flows.
type ThesisCell = (String, u64, u64, String, String, u64);

/// The scheme a queue specification stands for, checking that a dual
/// queue's flow counts and L threshold base are the cell's.
fn scheme(queue: &str, l_flows: u64, c_flows: u64, l_cc: &str) -> String {
    let words: Vec<&str> = queue.split_whitespace().collect();
    let option = |key: &str| words.iter().position(|w| *w == key).map(|at| words[at + 1]);
    match words[0] {
        "pie" => "sq-pie".into(),
        "instant_red" => "sq-red".into(),
        "dualq_cred" => "l4s-cred".into(),
        "dualq_pi2" => "l4s-pi2".into(),
        "dualq_pie" => "l4s-pie".into(),
        "dualq_uncoupled" => {
            assert_eq!(
                option("l_flows"),
                Some(l_flows.to_string().as_str()),
                "{queue}"
            );
            assert_eq!(
                option("c_flows"),
                Some(c_flows.to_string().as_str()),
                "{queue}"
            );
            if option("aqm") == Some("pie") {
                return "dq-pie".into();
            }
            let base = if ["reno", "cubic"].contains(&l_cc) {
                "34"
            } else {
                "5"
            };
            assert_eq!(option("l_max"), Some(base), "{queue} for {l_cc} L flows");
            "dq-red".into()
        }
        other => panic!("queue '{other}' is none of the thesis's"),
    }
}

/// A cell from its swept values; `fixed_queue` is the file's queue where
/// the file does not sweep it.
fn cell(values: &serde_json::Value, fixed_queue: Option<&str>) -> ThesisCell {
    let get = |key: &str| {
        values[key]
            .as_str()
            .map(String::from)
            .or_else(|| values[key].as_u64().map(|n| n.to_string()))
            .or_else(|| (key == "bottleneck.queue").then(|| fixed_queue.map(String::from))?)
            .unwrap_or_else(|| panic!("{key} in {values}"))
    };
    let count = |key: &str| get(key).parse::<u64>().unwrap();
    let (l_flows, c_flows) = (count("flows.0.count"), count("flows.1.count"));
    let (c_cc, l_cc) = (get("flows.1.cc"), get("flows.0.cc"));
    (
        scheme(&get("bottleneck.queue"), l_flows, c_flows, &l_cc),
        l_flows,
        c_flows,
        c_cc,
        l_cc,
        count("hosts.c-sender.tcp_ecn"),
    )
}

/// Each file's cells, as the thesis names them.
fn cells_of(file: &str) -> Vec<ThesisCell> {
    let toml = std::fs::read_to_string(study().join(file)).unwrap();
    let fixed_queue = toml
        .lines()
        .find_map(|l| l.strip_prefix("queue = \""))
        .and_then(|rest| rest.strip_suffix('"'));
    swept_values(&study().join(file))
        .iter()
        .map(|values| cell(values, fixed_queue))
        .collect()
}

/// The thesis's grid: each scheme's pairs (C / L) in its table's order,
/// times 3 × 3 flow mixes and `ecn` 0 and 1.
fn thesis_grid() -> BTreeSet<ThesisCell> {
    let sq = ["cubic/cubic", "reno/reno"];
    let dq = [
        "cubic/cubic",
        "cubic/dctcp",
        "cubic/relentless",
        "reno/dctcp",
        "reno/relentless",
        "reno/reno",
    ];
    let l4s = [
        "cubic/dctcp",
        "cubic/relentless",
        "reno/dctcp",
        "reno/relentless",
    ];
    let schemes: [(&str, &[&str]); 7] = [
        ("sq-pie", &sq),
        ("sq-red", &sq),
        ("dq-pie", &dq),
        ("dq-red", &dq),
        ("l4s-cred", &l4s),
        ("l4s-pi2", &l4s),
        ("l4s-pie", &l4s),
    ];
    let mut grid = BTreeSet::new();
    for (scheme, pairs) in schemes {
        for l in [1, 5, 10] {
            for c in [1, 5, 10] {
                for pair in pairs {
                    let (c_cc, l_cc) = pair.split_once('/').unwrap();
                    for ecn in [0, 1] {
                        grid.insert((scheme.into(), l, c, c_cc.into(), l_cc.into(), ecn));
                    }
                }
            }
        }
    }
    grid
}

/// 36 + 36 + 108 + 108 + 3 × 72 = 504 runs, each in the study once, and
/// nothing else; each file holds one scheme.
#[test]
fn the_study_has_every_run_of_the_thesiss_grid_once() {
    let grid = thesis_grid();
    assert_eq!(grid.len(), 504);
    let files = [
        ("1-sq-pie.toml", 36),
        ("2-sq-red.toml", 36),
        ("3-dq-pie.toml", 108),
        ("4a-dq-red-classic-l.toml", 36),
        ("4b-dq-red-scalable-l.toml", 72),
        ("5-l4s-cred.toml", 72),
        ("6-l4s-pi2.toml", 72),
        ("7-l4s-pie.toml", 72),
    ];
    let mut listed = Vec::new();
    for (file, count) in files {
        let cells = cells_of(file);
        assert_eq!(cells.len(), count, "{file}");
        let schemes: BTreeSet<&String> = cells.iter().map(|c| &c.0).collect();
        assert_eq!(schemes.len(), 1, "{file}: one scheme a file");
        listed.extend(cells);
    }
    assert_eq!(listed.len(), 504);
    assert_eq!(listed.into_iter().collect::<BTreeSet<_>>(), grid);
    let tomls = std::fs::read_dir(study())
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .count();
    assert_eq!(tomls, files.len(), "the study's files are the ones above");
}

/// The quick forms (one L and one C flow, 5 s, classic ECN on, through
/// each scheme's queue) run, and every flow moves data over the 10 Mbit/s
/// bottleneck.
#[test]
fn the_quick_forms_run() {
    let Some(_machine) = start() else { return };
    let (out, _, flows) = run_quick_forms(&study(), "aqm-thesis-quick", 10e6);
    assert_eq!(
        flows.len(),
        8 * 2,
        "an L and a C flow in each of the 8 files"
    );
    std::fs::remove_dir_all(&out).unwrap();
}
