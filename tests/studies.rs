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
#[test]
fn coco_beholders_v1_lists_its_grid_and_runs_its_quick_form() {
    let Some(_machine) = start() else { return };
    let study = repository().join("experiments/coco-beholder");
    let listed = Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("run")
        .arg(&study)
        .arg("--list-cells")
        .output()
        .unwrap();
    let cells = text(&listed.stdout);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert_eq!(
        cells.lines().filter(|l| !l.starts_with('#')).count(),
        56,
        "{cells}"
    );
    assert!(
        cells.contains("bottleneck.delay=18ms flows.0.cc=yeah"),
        "{cells}"
    );

    let out = support::temp_dir("coco-quick");
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
    assert!(run.status.success(), "emu run --quick failed:\n{stderr}");
    nothing_left();
    let mut ran = Vec::new();
    for path in results(&out) {
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let flow = &result["flows"][0];
        assert_eq!(flow["ended"], "exit 0", "{}", path.display());
        let goodput = flow["goodput_bps"].as_f64().unwrap_or(0.0);
        assert!(
            goodput > 50e6,
            "{}: goodput {goodput} bit/s",
            path.display()
        );
        ran.push(
            flow["congestion_control"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        );
    }
    ran.sort();
    assert_eq!(ran, ["cubic", "htcp"]);
    let _ = std::fs::remove_dir_all(&out);
}
