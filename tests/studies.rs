//! The studies shipped in experiments/: each runs as shipped, in its quick
//! form, through `emu run DIR --quick` as a user would start it; every
//! flow of every file moves data and ends well, the variants' metadata is
//! where `emu report` pairs them, the study's progress is said once a cell,
//! and nothing is left behind.
//!
//! Needs root and iperf3 and bpftool, as the other experiment tests
//! (EMU_SKIP_PRIVILEGED=1 opts out; CI never sets it).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::experiment::nothing_left;
use support::{start, text};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `result.json` under `dir`.
fn results(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "result.json") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_scenario_of_the_bakeoff_runs_in_its_quick_form() {
    let Some(_machine) = start() else { return };
    let study = repository().join("experiments/sce-l4s");
    let files: Vec<String> = std::fs::read_dir(&study)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.len() >= 12,
        "six scenarios, two variants each: {files:?}"
    );

    let out = support::temp_dir("study-quick");
    let run = Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("run")
        .arg(&study)
        .arg("--quick")
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&run.stderr);
    eprintln!("{stderr}");
    assert!(run.status.success(), "emu run --quick failed:\n{stderr}");
    nothing_left();
    // Off a terminal, the study's progress is said once a cell, counting
    // every file's cells.
    let all = files.len();
    for done in 1..all {
        assert!(
            stderr.contains(&format!("emu run: {done} of {all} cells done, about ")),
            "no progress line for cell {done} of {all}"
        );
    }
    assert!(stderr.contains(&format!("emu run: {all} of {all} cells done, none left")));

    let root = out.join("sce-l4s-quick");
    let mut variants: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in &files {
        let dir = root.join(format!("{name}-quick"));
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
        assert_eq!(meta["quick"], true, "{name}");
        let scenario = meta["scenario"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no scenario"));
        let variant = meta["variant"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no variant"));
        assert!(
            name.starts_with(scenario) && name.ends_with(variant),
            "{name}: {meta}"
        );
        variants
            .entry(scenario.into())
            .or_default()
            .push(variant.into());

        let found = results(&dir);
        assert!(
            !found.is_empty(),
            "{name}: no result.json under {}",
            dir.display()
        );
        for path in found {
            let result: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert_eq!(result["accounting_ok"], true, "{}", path.display());
            for flow in result["flows"].as_array().unwrap() {
                let label = format!("{} flow {}", path.display(), flow["name"]);
                assert_eq!(flow["ended"], "exit 0", "{label}");
                let goodput = flow["goodput_bps"].as_f64().unwrap_or(0.0);
                assert!(goodput > 1e6, "{label}: goodput {goodput} bit/s");
                // The congestion control each variant is about ran.
                let cc = flow["congestion_control"].as_str().unwrap_or("");
                let asked = flow["name"].as_str().unwrap().replace('-', "_");
                assert_eq!(cc, asked, "{label}: ran {cc}");
            }
        }
    }
    // Each scenario has its two variants, for the report to pair.
    for (scenario, mut found) in variants {
        found.sort();
        assert_eq!(found, ["l4s", "sce"], "{scenario}");
    }
}

/// CoCo-Beholder's study lists V1's grid (4 delays × 14 congestion
/// controls) and, in its quick form, runs its two cells: each flow ends
/// well near the path's 100 Mbit/s under the congestion control its cell
/// names (htcp as emu's BPF port where the kernel lacks it).
/// The cells the thesis gives for each experiment, as `--list-cells`
/// prints them: V1's delays (X - 2 ms on the central link in the dumbbell
/// form, X in Pantheon's) times its schemes; V2's two rates times its
/// schemes; V3's mixes; V4's schemes; V5's delta x step square waves
/// (delta outer, then step, then scheme); the example's one cell.
fn coco_beholders_grid() -> BTreeMap<&'static str, Vec<String>> {
    let v1_schemes = [
        "cubic",
        "reno",
        "bbr",
        "vegas",
        "bic",
        "highspeed",
        "htcp",
        "hybla",
        "illinois",
        "nv",
        "scalable",
        "veno",
        "westwood",
        "yeah",
    ];
    let cross = |key: &str, values: &[&str], inner: &str, names: &[&str]| -> Vec<String> {
        let mut cells = Vec::new();
        for v in values {
            for n in names {
                cells.push(format!("{key}={v} {inner}={n}"));
            }
        }
        cells
    };
    let mixes = |mixes: &[&[&str]]| -> Vec<String> {
        let cell = |mix: &&[&str]| {
            let flows = mix.iter().enumerate();
            flows
                .map(|(i, cc)| format!("flows.{i}.cc={cc}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        mixes.iter().map(cell).collect()
    };
    let rates = ["500mbit", "1gbit"]
        .map(|r| format!("hosts.a.rate={r} hosts.b.rate={r} bottleneck.rate={r}"));
    let v2_schemes = ["cubic", "vegas", "bbr", "highspeed", "illinois"];
    let same = |n: usize| -> Vec<String> {
        let each = |cc: &'static str| vec![cc; n];
        mixes(&[&each("cubic"), &each("vegas"), &each("bbr")])
    };
    let v5_schemes = [
        "cubic", "vegas", "bbr", "veno", "yeah", "scalable", "westwood",
    ];
    let mut v5 = Vec::new();
    for delta in (10..=210).step_by(10) {
        for step in (10..=210).step_by(10) {
            for cc in v5_schemes {
                let period = 2 * delta;
                v5.push(format!(
                    "bottleneck.square=0ms:{step}ms:{period}ms flows.0.scheme={cc}"
                ));
            }
        }
    }
    let (c, v, b) = ("cubic", "vegas", "bbr");
    BTreeMap::from([
        (
            "V1-point-to-point",
            cross(
                "bottleneck.delay",
                &["1ms", "3ms", "8ms", "18ms"],
                "flows.0.cc",
                &v1_schemes,
            ),
        ),
        (
            "V1-pantheon-form",
            cross(
                "bottleneck.delay",
                &["3ms", "5ms", "10ms", "20ms"],
                "flows.0.scheme",
                &v1_schemes,
            ),
        ),
        (
            "V2-high-bandwidth",
            rates
                .iter()
                .flat_map(|r| v2_schemes.map(|cc| format!("{r} flows.0.cc={cc}")))
                .collect(),
        ),
        (
            "V3-bandwidth-2-flows",
            mixes(&[&[c, c], &[v, v], &[b, b], &[b, c], &[v, c], &[b, v]]),
        ),
        ("V3-bandwidth-4-flows-intra", same(4)),
        (
            "V3-bandwidth-4-flows-inter",
            mixes(&[
                &[c, v, v, v],
                &[c, b, b, b],
                &[v, c, c, c],
                &[b, c, c, c],
                &[b, v, v, v],
                &[v, b, b, b],
            ]),
        ),
        ("V4-rtt-2-flows", same(2)),
        ("V4-rtt-4-flows", same(4)),
        ("V5-square-wave", v5),
        ("example-end-to-end", vec!["(no sweep)".to_string()]),
    ])
}

#[test]
fn coco_beholders_study_lists_the_thesiss_grid_and_runs_its_quick_forms() {
    let Some(_machine) = start() else { return };
    let study = repository().join("experiments/coco-beholder");
    for (name, expected) in coco_beholders_grid() {
        let listed = Command::new(env!("CARGO_BIN_EXE_emu"))
            .arg("run")
            .arg(study.join(format!("{name}.toml")))
            .arg("--list-cells")
            .output()
            .unwrap();
        let cells = text(&listed.stdout);
        assert!(listed.status.success(), "{name}: {}", text(&listed.stderr));
        let got: Vec<&str> = cells
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_once('\t').map_or(l, |(_, cell)| cell))
            .collect();
        assert_eq!(got, expected, "{name}");
    }

    let out = support::temp_dir("coco-quick");
    support::experiment::emu_run_quick(&study, &out);
    // Every flow of every quick cell ran to its end and carried data.
    let mut cells_per_file = BTreeMap::new();
    for path in results(&out) {
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for flow in result["flows"].as_array().unwrap() {
            assert_ne!(flow["ended"], "failed", "{}", path.display());
            let delivered = flow["path"]["delivered_bytes"].as_u64().unwrap_or(0);
            assert!(
                delivered > 0,
                "{}: {} delivered nothing",
                path.display(),
                flow["name"]
            );
        }
        let file = path.strip_prefix(&out).unwrap().iter().nth(1).unwrap();
        *cells_per_file
            .entry(file.to_string_lossy().into_owned())
            .or_insert(0) += 1;
    }
    let quick: BTreeMap<String, i32> = [
        ("V1-pantheon-form-quick", 1),
        ("V1-point-to-point-quick", 2),
        ("V2-high-bandwidth-quick", 1),
        ("V3-bandwidth-2-flows-quick", 1),
        ("V3-bandwidth-4-flows-inter-quick", 1),
        ("V3-bandwidth-4-flows-intra-quick", 1),
        ("V4-rtt-2-flows-quick", 1),
        ("V4-rtt-4-flows-quick", 1),
        ("V5-square-wave-quick", 9),
        ("example-end-to-end-quick", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(cells_per_file, quick);
    let _ = std::fs::remove_dir_all(&out);
}
