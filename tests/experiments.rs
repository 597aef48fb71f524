//! Integration tests of `emu run`: experiments on real namespaces, carried
//! by emu's fabric, driven by the `emu` binary as a user would run it.
//!
//! They need root and iperf3 and ping, as the shells' tests do (and share
//! their helpers and opt-out, EMU_SKIP_PRIVILEGED=1, which CI never sets).
//! Each runs a few seconds of traffic.

mod support;

use emu_core::log::{Direction, Event, LogReader};
use emu_core::Nanos;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};
use support::experiment::{
    emu_run, experiment_file, flow, foreign_processes, nothing_left, run_experiment, spawn_emu_run,
};
use support::{start, temp_dir, text};

/// Two flows through one bottleneck whose senders' side links differ by
/// 50 ms each way: their smoothed RTTs differ by 100 ms.
#[test]
fn side_links_50_ms_apart_give_srtts_100_ms_apart() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("rtt");
    let result = run_experiment(
        &dir,
        "rtt",
        r#"
[run]
duration = "4s"
[hosts.near]
side = "left"
delay = "5ms"
[hosts.far]
side = "left"
delay = "55ms"
[hosts.sink]
side = "right"
delay = "5ms"
[bottleneck]
rate = "40mbit"
queue = "droptail packets 10"
[[flows]]
name = "near"
from = "near"
to = "sink"
[[flows]]
name = "far"
from = "far"
to = "sink"
"#,
    );
    let srtt = |name: &str| flow(&result, name)["srtt_ms"]["mean"].as_f64().unwrap();
    let min_rtt = |name: &str| flow(&result, name)["min_rtt_ms"].as_f64().unwrap();
    let (near, far) = (srtt("near"), srtt("far"));
    eprintln!(
        "srtt near {near:.2} ms, far {far:.2} ms; min_rtt near {:.2}, far {:.2}",
        min_rtt("near"),
        min_rtt("far")
    );
    assert!((far - near - 100.0).abs() <= 2.0, "srtt {near} vs {far}");
    assert!(
        (min_rtt("far") - min_rtt("near") - 100.0).abs() <= 2.0,
        "min_rtt {} vs {}",
        min_rtt("near"),
        min_rtt("far")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A flow between two hosts of one side runs while a flow across the
/// bottleneck does: its packets leave the lane that reads their sender
/// for the lane that writes into their receiver (see `fabric::lanes`),
/// its RTT is the two side links', and every packet is accounted for.
#[test]
fn a_flow_between_hosts_of_one_side_crosses_the_fabric_lanes() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("same-side");
    let result = run_experiment(
        &dir,
        "same-side",
        r#"
[run]
duration = "3s"
[hosts.a]
side = "left"
delay = "5ms"
[hosts.b]
side = "left"
delay = "10ms"
[hosts.c]
side = "right"
delay = "5ms"
[bottleneck]
rate = "20mbit"
queue = "droptail packets 20"
[[flows]]
name = "beside"
from = "a"
to = "b"
[[flows]]
name = "across"
from = "a"
to = "c"
"#,
    );
    let beside = flow(&result, "beside");
    let (goodput, min_rtt) = (
        beside["goodput_bps"].as_f64().unwrap(),
        beside["min_rtt_ms"].as_f64().unwrap(),
    );
    eprintln!("beside: {goodput} bit/s, min_rtt {min_rtt} ms");
    assert!(
        goodput > 1e6,
        "goodput {goodput} between two hosts of one side"
    );
    // 5 + 10 ms out, 10 + 5 back; a hand-over adds microseconds.
    assert!((30.0..31.0).contains(&min_rtt), "min_rtt {min_rtt} ms");
    assert!(flow(&result, "across")["goodput_bps"].as_f64().unwrap() > 1e6);
    assert_eq!(result["accounting_ok"], true, "{result:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Cake with triple-isolate shares the bottleneck equally between two
/// senders' flows (with ECN, so COBALT marks rather than drops; their
/// start-up is left out). Each flow's share swings with its sawtooth
/// (after a cut its queue drains and the other takes the surplus), so
/// the shares are compared over 18 s: over 6 s they came out 0–2.05%
/// apart from run to run, over 10 s 0.2–1.6% and over 18 s 0.5–1.4%.
#[test]
fn cake_triple_isolate_gives_two_flows_equal_goodput() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("cake");
    let result = run_experiment(
        &dir,
        "cake",
        r#"
[run]
duration = "20s"
[hosts.a]
tcp_ecn = 1
side = "left"
delay = "5ms"
cc = "cubic"
[hosts.b]
tcp_ecn = 1
side = "left"
delay = "5ms"
cc = "cubic"
[hosts.c]
tcp_ecn = 1
side = "right"
delay = "5ms"
[hosts.d]
tcp_ecn = 1
side = "right"
delay = "5ms"
[bottleneck]
queue = "cake bandwidth 20mbit triple-isolate"
[[flows]]
name = "one"
from = "a"
to = "c"
omit = "2s"
[[flows]]
name = "two"
from = "b"
to = "d"
omit = "2s"
"#,
    );
    let goodput = |name: &str| flow(&result, name)["goodput_bps"].as_f64().unwrap();
    let (one, two) = (goodput("one"), goodput("two"));
    eprintln!("cake triple-isolate: {one:.0} bit/s and {two:.0} bit/s");
    assert!(one > 5e6 && two > 5e6, "both flows run: {one} {two}");
    assert!(
        (one - two).abs() / one.max(two) <= 0.02,
        "goodputs differ by more than 2%: {one} vs {two}"
    );
    // The hosts' congestion control reached the flows.
    assert_eq!(flow(&result, "one")["congestion_control"], "cubic");
    assert_eq!(flow(&result, "two")["congestion_control"], "cubic");
    assert!(result["jain_index"].as_f64().unwrap() > 0.999);
    // Every CE mark the links made is one flow's, counted once: the
    // flows' counts add up to the links' own.
    let links = dir.join("out/cake/cell-0/run-0/links.json");
    let links: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(links).unwrap()).unwrap();
    let marked: u64 = links["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["marked_ce"].as_u64().unwrap())
        .sum();
    let marks = |name: &str| flow(&result, name)["ce_marks"].as_u64().unwrap();
    eprintln!(
        "CE marks: {} and {} of {marked}",
        marks("one"),
        marks("two")
    );
    assert!(marked > 0, "cake marked nothing: {links:#}");
    assert_eq!(marks("one") + marks("two"), marked);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The smallest time each link held a packet of `direction`, from its
/// log (arrival to departure, matched by fingerprint in order).
fn min_link_delay(log: &Path, direction: Direction) -> Nanos {
    let mut waiting: HashMap<u32, VecDeque<Nanos>> = HashMap::new();
    let mut min = Nanos::MAX;
    for record in LogReader::open(log).unwrap() {
        let record = record.unwrap();
        if record.direction != direction {
            continue;
        }
        match record.event {
            Event::Arrive => waiting
                .entry(record.fingerprint)
                .or_default()
                .push_back(record.time),
            Event::Depart => {
                if let Some(at) = waiting
                    .get_mut(&record.fingerprint)
                    .and_then(VecDeque::pop_front)
                {
                    min = min.min(record.time - at);
                }
            }
            _ => {}
        }
    }
    min
}

/// The kernel's RTT of a flow agrees with the delays emu's link logs
/// show along the way out and back, and each link's log holds its
/// configured delay.
#[test]
fn sampled_rtt_agrees_with_the_link_logs() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("logs");
    let result = run_experiment(
        &dir,
        "logs",
        r#"
[run]
duration = "3s"
sample_interval = "20ms"
[hosts.a]
side = "left"
delay = "7ms"
[hosts.b]
side = "right"
up = { delay = "3ms" }
down = { delay = "11ms" }
[bottleneck]
rate = "30mbit"
delay = "4ms"
queue = "droptail packets 30"
[[flows]]
name = "f"
from = "a"
to = "b"
"#,
    );
    let run = dir.join("out/logs/cell-0/run-0");
    let log = |link: &str| run.join("links").join(link).join("0-link.emulog");
    // Out: a's uplink, the bottleneck forward, b's downlink; back: b's
    // uplink, the bottleneck in reverse, a's downlink.
    let out = min_link_delay(&log("side-a"), Direction::Uplink)
        + min_link_delay(&log("bottleneck-0"), Direction::Uplink)
        + min_link_delay(&log("side-b"), Direction::Downlink);
    let back = min_link_delay(&log("side-b"), Direction::Uplink)
        + min_link_delay(&log("bottleneck-0"), Direction::Downlink)
        + min_link_delay(&log("side-a"), Direction::Downlink);
    let logs_ms = (out + back) as f64 / 1e6;
    let f = flow(&result, "f");
    let min_rtt = f["min_rtt_ms"].as_f64().unwrap();
    eprintln!("logs: out {out} ns + back {back} ns = {logs_ms:.3} ms; kernel min_rtt {min_rtt:.3} ms, srtt {}", f["srtt_ms"]);
    // 7 + 4 + 11 out, 3 + 4 + 7 back, plus the bottleneck's serialization.
    assert!((logs_ms - 36.0).abs() < 0.5, "{logs_ms}");
    assert!(
        (min_rtt - logs_ms).abs() <= 2.0,
        "kernel {min_rtt} ms vs logs {logs_ms} ms"
    );
    let srtt = f["srtt_ms"]["min"].as_f64().unwrap();
    assert!(
        srtt >= logs_ms - 1.0,
        "srtt {srtt} below the path's {logs_ms}"
    );
    let samples = std::fs::read_to_string(run.join("tcp/f.csv")).unwrap();
    assert!(samples.lines().count() > 50, "sampled every 20 ms for 3 s");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `offload = true` the hosts hand the fabric TCP super-packets: the
/// links still see every packet of the wire (none larger than the MTU),
/// and the accounting holds from the hosts' reads to their deliveries.
#[test]
fn with_offload_the_links_see_wire_packets() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("offload");
    let result = run_experiment(
        &dir,
        "offload",
        r#"
[run]
duration = "3s"
offload = true
[hosts.a]
side = "left"
[hosts.b]
side = "right"
[bottleneck]
rate = "200mbit"
queue = "droptail packets 300"
[[flows]]
name = "f"
from = "a"
to = "b"
omit = "1s"
"#,
    );
    let goodput = flow(&result, "f")["goodput_bps"].as_f64().unwrap();
    assert!(goodput > 150e6, "goodput {goodput} through 200 Mbit/s");
    let run = dir.join("out/offload/cell-0/run-0");
    let (mut packets, mut largest) = (0u64, 0u32);
    for record in LogReader::open(&run.join("links/side-a/0-link.emulog")).unwrap() {
        let record = record.unwrap();
        if record.direction == Direction::Uplink && record.event == Event::Arrive {
            packets += 1;
            largest = largest.max(record.bytes);
        }
    }
    assert!(packets > 10_000, "{packets} packets");
    assert!(largest <= 1500, "a {largest}-byte packet on the wire");
    assert!(largest >= 1400, "no full-sized segment: {largest}");
    let _ = std::fs::remove_dir_all(&dir);
}

const TWO_HOSTS: &str = r#"
[run]
duration = "2s"

[hosts.a]
side = "left"

[hosts.b]
side = "right"
"#;

#[test]
fn an_unavailable_congestion_control_fails_before_anything_starts() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "cc",
        "cc",
        format!("{TWO_HOSTS}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\ncc = \"vegas-nonexistent\"\n"),
    );
    let output = emu_run(&file, &dir.join("out"), &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("vegas-nonexistent"), "{stderr}");
    assert!(stderr.contains("line 14"), "{stderr}");
    let available =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    for cc in available.split_whitespace() {
        assert!(stderr.contains(cc), "lists {cc}: {stderr}");
    }
    assert!(!dir.join("out").exists(), "nothing was created");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A flow whose program fails is named on stderr with how it ended (the
/// table only shows a dash); one that succeeds is not.
#[test]
fn a_failed_flow_is_said() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "failed",
        "failed",
        format!(
            "{TWO_HOSTS}\n[[flows]]\nname = \"fails\"\nkind = \"command\"\nfrom = \"a\"\ncommand = \"exit 3\"\n[[flows]]\nname = \"fine\"\nkind = \"command\"\nfrom = \"a\"\ncommand = \"true\"\n"
        ),
    );
    let output = emu_run(&file, &dir.join("out"), &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("ended with"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("flow fails ended with exit 3"),
        "{stderr}"
    );
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A key `--set` misspelt is named, and the line the message counts is
/// said to be of the file as `--set` changed it.
#[test]
fn a_bad_set_key_says_its_lines_are_the_changed_files() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "badset",
        "badset",
        format!(
            "{TWO_HOSTS}\n[bottleneck]\nrate = \"10mbit\"\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n"
        ),
    );
    let output = emu_run(&file, &dir.join("out"), &["--set", "bottleneck.rat=5mbit"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`rat`"), "{stderr}");
    assert!(
        stderr.contains("with --set bottleneck.rat=5mbit applied"),
        "{stderr}"
    );
    assert!(!dir.join("out").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_malformed_file_is_reported_with_its_line_and_key() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "malformed",
        "bad",
        TWO_HOSTS.replace("side = \"right\"", "side = \"right\"\nrtae = \"10mbit\""),
    );
    let output = emu_run(&file, &dir.join("out"), &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("line 10"), "{stderr}");
    assert!(stderr.contains("rtae"), "{stderr}");
    assert!(stderr.contains("bad.toml"), "{stderr}");
    // Bad syntax too.
    std::fs::write(&file, "[hosts.a\nside = 1\n").unwrap();
    let output = emu_run(&file, &dir.join("out"), &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("line 1"), "{stderr}");
    assert!(!dir.join("out").exists(), "nothing was created");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sweep lists its cells; --cell runs one; its UDP flow carries the
/// chosen ECN codepoint (the bottleneck's log sees ECT(1)).
#[test]
fn a_sweep_lists_its_cells_and_runs_one_of_them() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "sweep",
        "sweep",
        r#"
[run]
duration = "2s"
[hosts.a]
side = "left"
[hosts.b]
side = "right"
[bottleneck]
rate = ["5mbit", "10mbit"]
delay = ["1ms", "2ms"]
[[flows]]
kind = "udp"
from = "a"
to = "b"
rate = "2mbit"
ecn = "ect1"
"#,
    );
    let out = dir.join("out");
    let list = emu_run(&file, &out, &["--list-cells"]);
    let cells: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(cells.as_array().unwrap().len(), 4);
    assert_eq!(cells[3]["values"]["bottleneck.rate"], "10mbit");
    assert_eq!(cells[3]["values"]["bottleneck.delay"], "2ms");
    let output = emu_run(&file, &out, &["--cell", "2", "--set", "run.seed=5"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("sweep/cell-2/run-0/result.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(result["seed"], 5);
    let goodput = result["flows"][0]["goodput_bps"].as_f64().unwrap();
    assert!((goodput - 2e6).abs() < 0.1e6, "{goodput}");
    // Each host's receiving sockets are accounted: a 2 Mbit/s receiver
    // keeps up, and drops nothing the fabric delivered.
    let links: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("sweep/cell-2/run-0/links.json")).unwrap(),
    )
    .unwrap();
    let receivers = links["receivers"].as_array().unwrap();
    let hosts: Vec<_> = receivers.iter().map(|r| r["host"].clone()).collect();
    assert_eq!(hosts, ["a", "b"], "{links:#}");
    assert!(
        receivers.iter().all(|r| r["udp_buffer_drops"] == 0),
        "{links:#}"
    );
    assert!(!out.join("sweep/cell-0").exists(), "only cell 2 ran");
    let log = out.join("sweep/cell-2/run-0/links/bottleneck-0/0-link.emulog");
    let ect1 = LogReader::open(&log)
        .unwrap()
        .map(|r| r.unwrap())
        .filter(|r| r.event == Event::Arrive && r.direction == Direction::Uplink && r.ecn == 1)
        .count();
    assert!(ect1 > 300, "ECT(1) datagrams on the bottleneck: {ect1}");
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--resume` after `emu run` was stopped mid-cell (SIGINT in cell 1 of
/// 2): cell 0's finished run is kept, not run again, cell 1 runs, and
/// nothing is left behind.
#[test]
fn resume_keeps_the_finished_cells_and_runs_the_rest() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "resume",
        "resume",
        format!(
            "{}\n[bottleneck]\ndelay = [\"1ms\", \"2ms\"]\n[[flows]]\nkind = \"ping\"\nfrom = \"a\"\nto = \"b\"\n",
            TWO_HOSTS
        ),
    );
    let out = dir.join("out");
    let mut child = spawn_emu_run(&file, &out);
    let first = out.join("resume/cell-0/run-0/result.json");
    let second = out.join("resume/cell-1/run-0");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(first.exists() && second.exists()) {
        assert!(Instant::now() < deadline, "cell 1 did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted");
    assert!(!second.join("result.json").exists(), "stopped mid-cell");
    let kept = std::fs::metadata(&first).unwrap().modified().unwrap();
    let output = emu_run(&file, &out, &["--resume"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("cell 0: 1 of 1 runs kept"),
        "{}",
        text(&output.stderr)
    );
    let after = std::fs::metadata(&first).unwrap().modified().unwrap();
    assert_eq!(kept, after, "cell 0 was not run again");
    assert!(second.join("result.json").exists(), "cell 1 ran");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("resume/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["cells"].as_array().unwrap().len(), 2);
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kill -9` of `emu run` leaves no process in the hosts (the guardian
/// kills them) and no device (they go with the namespaces).
#[test]
fn nothing_is_left_after_kill_9() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "kill",
        "kill",
        format!(
            "{}\n[[flows]]\nfrom = \"a\"\nto = \"b\"\n[[flows]]\nkind = \"command\"\nfrom = \"b\"\ncommand = \"sleep 60\"\n",
            TWO_HOSTS.replace("\"2s\"", "\"30s\"")
        ),
    );
    let out = dir.join("out");
    let mut child = spawn_emu_run(&file, &out);
    let samples = out.join("kill/cell-0/run-0/tcp/0-tcp-a-b.csv");
    let deadline = Instant::now() + Duration::from_secs(10);
    let running = loop {
        let running: Vec<(i32, String)> = foreign_processes()
            .into_iter()
            .filter(|(_, n)| n == "iperf3" || n == "sleep")
            .collect();
        let sampled = std::fs::read_to_string(&samples).map_or(0, |s| s.lines().count());
        if running.len() >= 3 && sampled > 3 {
            break running;
        }
        assert!(
            Instant::now() < deadline,
            "the flows did not start: {running:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<&(i32, String)> = running
            .iter()
            .filter(|(pid, _)| Path::new(&format!("/proc/{pid}")).exists())
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still running after kill -9: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped Pantheon example, shortened: the wrapper's receiver (it
/// runs first) and sender run in their hosts' namespaces, its TCP (Reno,
/// set by the wrapper) is sampled and gives its goodput, cubic joins
/// later, and both sides are stopped at the flow's end with nothing left.
#[test]
fn a_pantheon_wrapper_runs_against_cubic() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("pantheon");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/pantheon-vs-cubic.toml");
    let out = dir.join("out");
    let output = emu_run(
        &file,
        &out,
        &[
            "--runs",
            "1",
            "--set",
            "run.duration=5s",
            "--set",
            "flows.1.start=2s",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let run = out.join("pantheon-vs-cubic/cell-0/run-0");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["accounting_ok"], true, "{result:#}");
    let scheme = flow(&result, "scheme");
    assert_eq!(scheme["kind"], "pantheon");
    assert_eq!(scheme["ended"], "stopped at its end", "{scheme:#}");
    assert_eq!(scheme["congestion_control"], "reno", "{scheme:#}");
    let cubic = flow(&result, "cubic");
    assert_eq!(cubic["congestion_control"], "cubic");
    let (scheme_bps, cubic_bps) = (
        scheme["goodput_bps"].as_f64().unwrap(),
        cubic["goodput_bps"].as_f64().unwrap(),
    );
    eprintln!("pantheon scheme {scheme_bps:.0} bit/s, cubic {cubic_bps:.0} bit/s");
    assert!(scheme_bps > 5e6 && scheme_bps < 25e6, "{scheme_bps}");
    assert!(cubic_bps > 2e6, "{cubic_bps}");
    // The receiver ran first, on the receiving host's address and port.
    let samples = std::fs::read_to_string(run.join("tcp/scheme.csv")).unwrap();
    assert!(
        samples
            .lines()
            .skip(1)
            .any(|l| l.contains(",10.0.0.3,5201,")),
        "the sender connected to the receiver's host: {}",
        &samples[..samples.len().min(400)]
    );
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}
