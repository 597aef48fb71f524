//! Every Pantheon scheme the peers build, run unchanged from a real
//! Pantheon checkout (Python 2 wrappers and helpers) through one `emu
//! run` comparison: each moves data and is named on the page, the
//! checkout is left as it was, and so are the machine's sysctls that
//! Pantheon's `kernel_ctl` touches. The peers (../shared/peers) are built
//! into a scratch prefix under the target directory (idempotent: a
//! second build takes seconds); without them the test says it skipped.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::experiment::emu_run_plain;
use support::{start, temp_dir, text};

/// The thirteen schemes that build on a current Debian, by wrapper.
const SCHEMES: [&str; 13] = [
    "copa",
    "taova",
    "ledbat",
    "scream",
    "pcc",
    "pcc_experimental",
    "sprout",
    "fillp",
    "fillp_sheep",
    "vivace",
    "cubic",
    "bbr",
    "vegas",
];

/// The machine's sysctls that Pantheon's `kernel_ctl` (and the sysctls
/// its `utils.get_sys_info` reports) can change.
const SYSCTLS: [&str; 12] = [
    "net/core/default_qdisc",
    "net/ipv4/tcp_allowed_congestion_control",
    "net/ipv4/tcp_congestion_control",
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/rp_filter",
    "net/core/rmem_default",
    "net/core/rmem_max",
    "net/core/wmem_default",
    "net/core/wmem_max",
    "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem",
    "net/ipv4/tcp_available_congestion_control",
];

fn sysctls() -> Vec<(&'static str, String)> {
    SYSCTLS
        .iter()
        .map(|key| {
            let value = std::fs::read_to_string(Path::new("/proc/sys").join(key));
            (*key, value.unwrap_or_else(|e| format!("unreadable: {e}")))
        })
        .collect()
}

/// Every path under `root`, sorted.
fn listing(root: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path.clone());
            }
            all.push(path);
        }
    }
    all.sort();
    all
}

/// The peers' Pantheon, built into a prefix of the target directory's;
/// None (said) when the peers are not beside the checkout.
fn built_pantheon() -> Option<PathBuf> {
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/peers");
    let build = peers.join("build-pantheon");
    if !build.is_file() {
        eprintln!(
            "skipped: {} is missing, so Pantheon's schemes cannot be built",
            build.display()
        );
        return None;
    }
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pantheon-peers");
    let output = Command::new(&build)
        .arg(&prefix)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "build-pantheon failed: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    Some(prefix)
}

/// A comparison of `schemes` (wrappers of `prefix`), `seconds` each,
/// through 12 Mbit/s and 40 ms each way.
fn comparison(prefix: &Path, schemes: &[&str], seconds: u32) -> String {
    let list: Vec<String> = schemes
        .iter()
        .map(|s| {
            format!(
                "\"{}\"",
                prefix.join(format!("src/wrappers/{s}.py")).display()
            )
        })
        .collect();
    format!(
        "[run]\nduration = \"{seconds}s\"\nruns = 1\n\n\
         [hosts.sender]\nside = \"left\"\ndelay = \"20ms\"\n\
         [hosts.receiver]\nside = \"right\"\ndelay = \"20ms\"\n\n\
         [bottleneck]\nrate = \"12mbit\"\n\n\
         [[flows]]\nname = \"scheme\"\nscheme = [{}]\n\
         from = \"sender\"\nto = \"receiver\"\nsetup_time = \"1s\"\n",
        list.join(", ")
    )
}

/// The kernel congestion control a wrapper's `setup_after_reboot` needs
/// (bbr and vegas load their module), if it is one.
fn kernel_cc(scheme: &str) -> Option<&str> {
    matches!(scheme, "bbr" | "vegas").then_some(scheme)
}

/// Those of them emu provides as BPF congestion controls where the kernel
/// lacks them (`emu cc` lists them).
const EMU_PROVIDES: [&str; 1] = ["vegas"];

#[test]
fn every_scheme_that_builds_runs_unchanged_in_one_comparison() {
    let Some(_serial) = start() else { return };
    let Some(prefix) = built_pantheon() else {
        return;
    };
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    let (runnable, lacking): (Vec<&str>, Vec<&str>) = SCHEMES.iter().partition(|s| {
        kernel_cc(s).is_none_or(|cc| {
            EMU_PROVIDES.contains(&cc) || available.split_whitespace().any(|a| a == cc)
        })
    });
    // Those emu registers its own of for the run (the kernel has none).
    let from_emu: Vec<&str> = runnable
        .iter()
        .filter_map(|s| kernel_cc(s))
        .filter(|cc| !available.split_whitespace().any(|a| a == *cc))
        .collect();
    let dir = temp_dir("pantheon-peers");
    let before = (sysctls(), listing(&prefix.join("src")), listing(&prefix));

    // A scheme whose kernel module neither this kernel nor emu provides
    // is refused before any cell starts, naming the module.
    for scheme in &lacking {
        eprintln!("{scheme}: tcp_{scheme} is not in this kernel (modules cannot be loaded here): checked refused, not run");
        let file = dir.join(format!("{scheme}.toml"));
        std::fs::write(&file, comparison(&prefix, &["cubic", scheme], 3)).unwrap();
        let output = emu_run_plain(&file, &dir.join("refused"));
        let said = text(&output.stderr);
        assert!(!output.status.success(), "{said}");
        assert!(
            said.contains(&format!("{scheme} needs tcp_{scheme}")),
            "{said}"
        );
        assert!(!dir.join("refused").exists(), "a refused comparison ran");
    }

    let file = dir.join("schemes.toml");
    std::fs::write(&file, comparison(&prefix, &runnable, 5)).unwrap();
    let output = emu_run_plain(&file, &dir.join("out"));
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}\n{stdout}");
    for cc in &from_emu {
        assert!(
            stderr.contains(&format!("{cc}: emu's BPF program, registered for this run")),
            "{cc} is not in this kernel, so emu registers its own: {stderr}"
        );
    }
    let root = dir.join("out/schemes");
    let page = std::fs::read_to_string(root.join("schemes.html")).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("schemes.json")).unwrap()).unwrap();
    for scheme in &runnable {
        assert!(
            page.contains(&format!(">{scheme}<")),
            "{scheme} not on the page"
        );
        let entry = json["schemes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == *scheme)
            .unwrap_or_else(|| panic!("{scheme} not in schemes.json"));
        let mbps = entry["runs"][0]["throughput_mbps"].as_f64().unwrap_or(0.0);
        eprintln!("{scheme}: {mbps:.2} Mbit/s");
        assert!(mbps > 0.05, "{scheme} moved no data: {entry:#}");
    }
    let after = (sysctls(), listing(&prefix.join("src")), listing(&prefix));
    assert_eq!(before.0, after.0, "the machine's sysctls changed");
    assert_eq!(before.1, after.1, "the run wrote into the checkout's src");
    assert_eq!(before.2, after.2, "the run wrote into the checkout");
    let _ = std::fs::remove_dir_all(&dir);
}
