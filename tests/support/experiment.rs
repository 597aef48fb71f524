//! Running `emu run` as a user would, and what a run must leave behind
//! (nothing): shared by the experiment and endpoint tests.

use super::{temp_dir, text};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn emu_run(file: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("running emu")
}

/// Runs a study's quick forms (`emu run DIR --quick`) into a fresh
/// directory named after `label`, checks the run went well and left
/// nothing behind, and returns that directory, the results' root in it,
/// and every flow of every result, labelled with its result's path. Each
/// flow must have ended well and moved more than 0.1 Mbit/s over its
/// whole life, less than `max_bps`.
#[allow(dead_code)] // not every test binary runs a study
pub fn run_quick_forms(
    study: &Path,
    label: &str,
    max_bps: f64,
) -> (PathBuf, PathBuf, Vec<(String, serde_json::Value)>) {
    let out = temp_dir(label);
    let run = Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("run")
        .arg(study)
        .arg("--quick")
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("running emu");
    let stderr = text(&run.stderr);
    assert!(run.status.success(), "emu run --quick failed:\n{stderr}");
    nothing_left();
    let name = study.file_name().unwrap().to_string_lossy();
    let root = out.join(format!("{name}-quick"));
    let mut flows = Vec::new();
    for result in report::experiments::results_dir::find_results(&root) {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
        for flow in json["flows"].as_array().unwrap() {
            let label = format!("{} flow {}", result.display(), flow["name"]);
            assert_eq!(flow["ended"], "exit 0", "{label}");
            let whole = &flow["whole_flow"];
            let throughput = whole["throughput_bps"].as_f64().unwrap_or(0.0);
            assert!(
                throughput > 0.1e6 && throughput < max_bps,
                "{label}: {whole}"
            );
            flows.push((label, flow.clone()));
        }
    }
    (out, root, flows)
}

/// The swept values of each cell of an experiment file, as `emu run FILE
/// --list-cells --json` lists them.
#[allow(dead_code)] // not every test binary lists cells
pub fn swept_values(file: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("run")
        .arg(file)
        .args(["--list-cells", "--json"])
        .output()
        .expect("running emu");
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        text(&out.stderr)
    );
    let cells: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    cells
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["values"].clone())
        .collect()
}

/// `emu run FILE --out OUT` as a user types it: its table on stdout.
pub fn emu_run_plain(file: &Path, out: &Path) -> Output {
    emu_run_plain_with(file, out, &[])
}

/// `emu run STUDY --quick --out OUT`, which must succeed and leave
/// nothing behind.
pub fn emu_run_quick(study: &Path, out: &Path) {
    let run = emu_run_plain_with(study, out, &["--quick"]);
    assert!(
        run.status.success(),
        "emu run --quick failed:\n{}",
        text(&run.stderr)
    );
    nothing_left();
}

fn emu_run_plain_with(file: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("run")
        .arg(file)
        .args(extra)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .expect("running emu")
}

/// Starts `emu run FILE --out OUT` in the background, its output
/// discarded (for a test that kills it).
pub fn spawn_emu_run(file: &Path, out: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// A fresh directory named for a test, with `toml` written in it as
/// `name.toml`.
pub fn experiment_file(dir: &str, name: &str, toml: impl AsRef<[u8]>) -> (PathBuf, PathBuf) {
    let dir = temp_dir(dir);
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, toml).unwrap();
    (dir, file)
}

/// Writes `toml` as `name.toml` in `dir`, runs it and returns the result
/// of its only run.
pub fn run_experiment(dir: &Path, name: &str, toml: &str) -> serde_json::Value {
    run_experiment_in(dir, name, toml).result
}

/// One run of an experiment: its result, its directory and what emu said.
pub struct Ran {
    pub result: serde_json::Value,
    pub dir: PathBuf,
    pub stderr: String,
}

/// [`run_experiment`], with the run's directory and emu's stderr: the run
/// went well, its accounting holds and nothing of it is left.
pub fn run_experiment_in(dir: &Path, name: &str, toml: &str) -> Ran {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, toml).unwrap();
    let out = dir.join("out");
    let output = emu_run(&file, &out, &[]);
    assert!(
        output.status.success(),
        "emu run failed: {}\n{}",
        text(&output.stderr),
        text(&output.stdout)
    );
    let run = out.join(name).join("cell-0/run-0");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["accounting_ok"], true, "{result:#}");
    nothing_left();
    Ran {
        result,
        dir: run,
        stderr: text(&output.stderr),
    }
}

pub fn flow<'a>(result: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    result["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flow {name} in {result:#}"))
}

pub fn our_namespace() -> (u64, u64) {
    let meta = std::fs::metadata("/proc/self/ns/net").unwrap();
    (meta.dev(), meta.ino())
}

/// Processes in some other network namespace than ours, with their
/// command names.
pub fn foreign_processes() -> Vec<(i32, String)> {
    let ours = our_namespace();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        if (meta.dev(), meta.ino()) != ours {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            found.push((pid, name.trim().to_string()));
        }
    }
    found
}

/// No process of an experiment (iperf3, ping, sh) is left in a namespace
/// of its own, and no TUN device of ours is left here.
pub fn nothing_left() {
    // A congestion control's programs go an RCU grace period after its
    // last socket, which a loaded machine can stretch to seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<(i32, String)> = foreign_processes()
            .into_iter()
            .filter(|(_, name)| {
                [
                    "iperf3",
                    "ping",
                    "sleep",
                    "emu",
                    "reno_stream.py",
                    "python3",
                ]
                .contains(&name.as_str())
            })
            .collect();
        let bpf = emus_bpf_objects();
        if left.is_empty() && bpf.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left behind: {left:?} {bpf:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let tun = Command::new("ip")
        .args(["-o", "link", "show", "type", "tun"])
        .output()
        .unwrap();
    assert!(
        !text(&tun.stdout).contains("emu0"),
        "a host device is left: {}",
        text(&tun.stdout)
    );
}

/// The highest BPF program and map ids when this test process began:
/// objects older than that are not its runs' (a machine may still hold
/// some of an earlier process's, kept by connections closing in a
/// namespace that is gone).
static FIRST_IDS: std::sync::OnceLock<[u64; 2]> = std::sync::OnceLock::new();

/// Notes [`FIRST_IDS`]; every test's `start` calls it before anything runs.
pub fn note_first_bpf_ids() {
    FIRST_IDS.get_or_init(|| {
        ["prog", "map"].map(|kind| {
            bpf_objects(kind)
                .iter()
                .map(|(id, _)| *id)
                .max()
                .unwrap_or(0)
        })
    });
}

/// (id, name) of every BPF object of a kind, as bpftool lists them.
fn bpf_objects(kind: &str) -> Vec<(u64, String)> {
    let listed = Command::new("bpftool")
        .args(["-j", kind, "list"])
        .output()
        .expect("running bpftool (scripts/install-deps installs it)");
    let objects: Vec<serde_json::Value> =
        serde_json::from_slice(&listed.stdout).unwrap_or_default();
    objects
        .iter()
        .filter_map(|o| Some((o["id"].as_u64()?, o["name"].as_str()?.to_string())))
        .collect()
}

/// emu's BPF programs and maps this process's runs left in the kernel
/// (congestion controls, their helpers, the map they share: every name
/// emu gives its objects starts with `emu_`), and emu's congestion
/// controls still registered.
pub fn emus_bpf_objects() -> Vec<String> {
    let first = FIRST_IDS.get().copied().unwrap_or([0, 0]);
    let mut found = Vec::new();
    for (kind, first) in ["prog", "map"].into_iter().zip(first) {
        found.extend(
            bpf_objects(kind)
                .into_iter()
                .filter(|(id, name)| *id > first && name.starts_with("emu_"))
                .map(|(id, name)| format!("{kind} {id} {name}")),
        );
    }
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    found.extend(
        available
            .split_whitespace()
            .filter(|cc| {
                ["prague", "reno_sce", "cubic_sce", "dctcp_sce", "relentless"].contains(cc)
            })
            .map(|cc| format!("congestion control {cc}")),
    );
    found
}
