//! The Mahimahi drop-in through real shells: a Pantheon scheme runs in
//! Pantheon's local mode through mm-delay and mm-link, and mm-link refuses
//! bad traces as Mahimahi does.
//!
//! They need root; see [`support`] for how they run.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::*;

/// PATH with emu's mm-* binaries first, as a Mahimahi user would set it.
fn mahimahi_path() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_mm-link")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A congestion-control scheme in Pantheon's wrapper interface, built on
/// the kernel's cubic through iperf3.
const PANTHEON_WRAPPER: &str = r#"#!/usr/bin/env python3
import subprocess, sys

def main():
    command = sys.argv[1]
    if command == 'deps':
        print('iperf3')
    elif command in ('setup', 'setup_after_reboot'):
        pass
    elif command == 'run_first':
        print('receiver')
    elif command == 'receiver':
        subprocess.check_call(['iperf3', '-s', '-1', '-p', sys.argv[2]],
                              stdout=subprocess.DEVNULL)
    elif command == 'sender':
        subprocess.check_call(['iperf3', '-c', sys.argv[2], '-p', sys.argv[3],
                               '-t', '5', '-C', 'cubic'], stdout=subprocess.DEVNULL)

if __name__ == '__main__':
    main()
"#;

/// Pantheon's local mode, exactly: the side that runs first listens on the
/// host, the other runs inside `mm-delay 10 mm-link 12mbps.trace ...` and
/// reaches it at $MAHIMAHI_BASE. The Mahimahi-format logs then give, by
/// Pantheon's definitions, the link's 12 Mbit/s and a 95th-percentile
/// delay set by the 100-packet drop-tail queue (1 ms per packet).
#[test]
fn a_pantheon_scheme_runs_through_mm_delay_and_mm_link() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("pantheon");
    let wrapper = dir.join("cubic.py");
    std::fs::write(&wrapper, PANTHEON_WRAPPER).unwrap();
    let trace = dir.join("12mbps.trace");
    std::fs::write(&trace, "1\n").unwrap(); // one 1500-byte opportunity per ms
    let python = |args: &[&str]| {
        Command::new("python3")
            .arg(&wrapper)
            .args(args)
            .output()
            .expect("python3")
    };
    let first = text(&python(&["run_first"]).stdout);
    assert_eq!(first.trim(), "receiver");
    let port = "5941";
    let mut receiver = Command::new("python3")
        .arg(&wrapper)
        .args(["receiver", port])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (up, down) = (dir.join("up.log"), dir.join("down.log"));
    let out = Command::new("mm-delay")
        .env("PATH", mahimahi_path())
        .current_dir(&dir)
        .args(["10", "mm-link", "12mbps.trace", "12mbps.trace"])
        .arg(format!("--uplink-log={}", up.display()))
        .arg(format!("--downlink-log={}", down.display()))
        .args([
            "--uplink-queue=droptail",
            "--uplink-queue-args=packets=100",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!(
            "python3 {} sender $MAHIMAHI_BASE {port}",
            wrapper.display()
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(&up).unwrap();
    assert!(
        log.starts_with("# mahimahi mm-link (Uplink) [12mbps.trace]"),
        "{}",
        &log[..200]
    );
    assert!(log.contains("# queue: droptail packets 100\n"));
    assert!(log.contains("# mahimahi config: [delay 10 ms] \n"));
    let runs = report::load(&up, &report::Options::default()).unwrap();
    assert!(
        runs[0].summary.errors.is_empty(),
        "{:?}",
        runs[0].summary.errors
    );
    let figures = runs[0].summary.directions[0].pantheon.clone();
    eprintln!("pantheon figures from the uplink log: {figures:?}");
    let throughput = figures.throughput_mbps.unwrap();
    let delay_p95 = figures.delay_p95_ms.unwrap();
    let loss = figures.loss.unwrap();
    assert!(
        (throughput - 12.0).abs() < 0.05 * 12.0,
        "throughput {throughput} Mbit/s"
    );
    assert!(
        (50.0..=101.0).contains(&delay_p95),
        "p95 delay {delay_p95} ms: the queue holds at most 100 packets of 1 ms"
    );
    assert!(loss > 0.0 && loss < 0.05, "loss {loss}");
    let down_log = std::fs::read_to_string(&down).unwrap();
    assert!(
        down_log.lines().any(|l| l.contains(" - ")),
        "the ACKs crossed the downlink"
    );
}

/// Runs `mm-link ARGS -- true`: its process id (what it would have left
/// behind is named after it) and its output.
fn mm_link_true(args: &[String]) -> (u32, std::process::Output) {
    let child = Command::new(env!("CARGO_BIN_EXE_mm-link"))
        .args(args)
        .args(["--", "true"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

/// A text log mm-link cannot write stops it with status 1, and leaves
/// nothing behind: not the log it did open, not its scratch directory
/// (whether the log fails to open, or fails as it is written after the
/// run).
#[test]
fn mm_link_leaves_nothing_when_a_log_cannot_be_written() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("mmlogs");
    let trace = dir.join("1.trace");
    std::fs::write(&trace, "1\n").unwrap();
    let ok = dir.join("ok.log");
    for logs in [
        vec![
            format!("--uplink-log={}", ok.display()),
            format!("--downlink-log={}", dir.join("none/d.log").display()),
        ],
        vec!["--uplink-log=/dev/full".to_string()],
    ] {
        let traces = [trace.display().to_string(), trace.display().to_string()];
        let (pid, out) = mm_link_true(&[&traces[..], &logs].concat());
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{logs:?}: {stderr}");
        assert!(leftovers(pid, "mm-link").is_empty(), "{logs:?}");
        let scratch = std::env::temp_dir().join(format!("emu-mm-link-{pid}"));
        assert!(!scratch.exists(), "{logs:?}: {} left", scratch.display());
        assert!(!ok.exists(), "{logs:?}: the log it opened was left");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Mahimahi's trace errors, named with the file, exit status 1, nothing
/// left behind.
#[test]
fn mm_link_refuses_bad_traces_as_mahimahi_does() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("mmtrace");
    for (name, body, message) in [
        ("empty-line.trace", "1\n\n2\n", "empty line"),
        ("decreasing.trace", "5\n3\n", "nondecreasing"),
        ("zero.trace", "0\n0\n", "nonzero"),
        ("none.trace", "", "no timestamps found"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let path = path.display().to_string();
        let (pid, out) = mm_link_true(&[path.clone(), path]);
        let stderr = text(&out.stderr);
        assert!(leftovers(pid, "mm-link").is_empty(), "{name}");
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.to_lowercase().contains(message),
            "{name}: {stderr}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_mm-link"))
        .args(["only-one.trace"])
        .output()
        .unwrap();
    assert!(text(&out.stderr).starts_with("Usage: mm-link UPLINK-TRACE DOWNLINK-TRACE"));
    assert_eq!(out.status.code(), Some(1));
}
