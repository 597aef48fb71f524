//! Linux 4.19's congestion controls that emu ships as BPF programs
//! (crates/endpoints/src/linux_ccs.rs) through a real shell: one emu
//! registers all ten (and htcp again under its A/B name, htcp_emu), a
//! client runs each for two seconds through a 50 Mbit/s, 20 ms path,
//! both ends of its connection run it, it moves data, and nothing of them
//! is left loaded afterwards.
//!
//! Needs root, iperf3 and bpftool, as tests/endpoints.rs does (and shares
//! its opt-out, EMU_SKIP_PRIVILEGED=1); hold /tmp/emu-net.lock while it
//! runs. About 25 s.

mod support;

use support::experiment::nothing_left;
use support::{start, text};

/// The ten, and one under its A/B name, which runs beside the other.
const NAMES: [&str; 11] = [
    "scalable",
    "highspeed",
    "hybla",
    "westwood",
    "veno",
    "bic",
    "htcp",
    "illinois",
    "yeah",
    "nv",
    "htcp-emu",
];

/// Runs `script` in a shell behind 10 ms and 50 Mbit/s, with `servers`
/// on the host and `ccs` given to emu (`--cc`, each with its settings).
fn through_the_path(ccs: &[&str], servers: &str, script: &str) -> std::process::Output {
    let mut args = Vec::new();
    for cc in ccs {
        args.extend(["--cc", cc]);
    }
    args.extend([
        "--outside",
        servers,
        "delay",
        "10",
        "--",
        "link",
        "50mbit",
        "--",
        "sh",
        "-c",
        script,
    ]);
    support::run(&args)
}

/// The name sockets choose it by (`htcp-emu` is `htcp_emu`).
fn kernel_name(name: &str) -> String {
    name.replace('-', "_")
}

fn available() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Each is registered for the run (or is the kernel's own, where the
/// kernel has the module), is what the connection's two sockets report
/// (TCP_CONGESTION, read by iperf3 beside its TCP_INFO figures), drives a
/// window (TCP_INFO's snd_cwnd) and carries data; after the run none is
/// registered and none of emu's programs or maps is left.
#[test]
fn each_runs_through_a_shell_moves_data_and_leaves_nothing() {
    let Some(_serial) = start() else { return };
    let kernels = available();
    let dir = support::temp_dir("linux-ccs");
    // A one-off server per control, each on its own port: back-to-back
    // tests against one iperf3 server were refused now and then
    // ("Connection reset by peer" on the control connection).
    let ports: Vec<String> = (0..NAMES.len()).map(|i| (5301 + i).to_string()).collect();
    let servers = format!(
        "for p in {}; do iperf3 -s -1 -p $p >/dev/null & done; wait",
        ports.join(" ")
    );
    let clients: Vec<String> = NAMES
        .iter()
        .zip(&ports)
        .map(|(name, port)| {
            format!(
                "iperf3 -c $EMU_BASE -p {port} -t 2 -C {} --json > {}/{name}.json || exit 1",
                kernel_name(name),
                dir.display()
            )
        })
        .collect();
    let script = format!("sleep 0.5; {}", clients.join("; "));
    let output = through_the_path(&NAMES, &servers, &script);
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "{stderr}\n{}",
        text(&output.stdout)
    );
    for name in NAMES {
        let kernel = kernel_name(name);
        let origin = if kernels.contains(&kernel) {
            "the kernel's own"
        } else {
            "emu's BPF program, registered for this run"
        };
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("emu: {name}")) && l.ends_with(origin)),
            "{name}: {stderr}"
        );
        let report = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
        let iperf: serde_json::Value = serde_json::from_str(&report).unwrap();
        let end = &iperf["end"];
        assert_eq!(end["sender_tcp_congestion"], kernel.as_str(), "{report}");
        assert_eq!(end["receiver_tcp_congestion"], kernel.as_str(), "{report}");
        let received = end["sum_received"]["bytes"].as_f64().unwrap();
        let rate = end["sum_received"]["bits_per_second"].as_f64().unwrap();
        let windows: Vec<u64> = iperf["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["streams"][0]["snd_cwnd"].as_u64())
            .collect();
        eprintln!(
            "{name}: {:.1} Mbit/s, snd_cwnd {windows:?} bytes",
            rate / 1e6
        );
        assert!(received > 1e6, "{name}: {received} bytes");
        assert!(
            windows.iter().all(|w| *w > 0) && !windows.is_empty(),
            "{name}: {windows:?}"
        );
    }
    nothing_left();
    let left: Vec<String> = available()
        .into_iter()
        .filter(|a| NAMES.map(kernel_name).contains(a) && !kernels.contains(a))
        .collect();
    assert!(left.is_empty(), "still registered: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A flow's settings reach its connection: BIC's `initial_ssthresh=10`
/// ends slow start at 10 segments and `max_increment=1` leaves only the
/// growth BIC keeps before its first loss, 5% a round trip, so after the
/// first second the window is under 200 segments (about 120 here at 20
/// ms), where slow start reaches over 1 MB by default and
/// `initial_ssthresh=10` alone about 450 kB (16 segments a round trip).
#[test]
fn a_setting_reaches_the_connection() {
    let Some(_serial) = start() else { return };
    let dir = support::temp_dir("linux-ccs-setting");
    let report = dir.join("bic.json");
    let client = format!(
        "sleep 0.5; iperf3 -c $EMU_BASE -p 5321 -t 2 -C bic --json > {}",
        report.display()
    );
    let output = through_the_path(
        &["bic initial_ssthresh=10 max_increment=1"],
        "iperf3 -s -1 -p 5321 >/dev/null",
        &client,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let iperf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let first = iperf["intervals"][0]["streams"][0]["snd_cwnd"]
        .as_u64()
        .unwrap();
    let received = iperf["end"]["sum_received"]["bytes"].as_f64().unwrap();
    eprintln!("bic with settings: snd_cwnd {first} bytes after 1 s, {received} bytes");
    assert!(
        first < 300_000,
        "{first} bytes after 1 s: the settings did not apply"
    );
    assert!(received > 1e5, "{received}");
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}
