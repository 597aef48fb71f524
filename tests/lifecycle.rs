//! How a run ends and what it leaves: nothing after a normal exit (even a
//! background child) or kill -9, signals reach the command, and `--once`
//! stops it at the end of its trace.
//!
//! They need root; see [`support`] for how they run.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

#[test]
fn nothing_is_left_after_a_run_even_a_background_child() {
    let Some(_serial) = start() else { return };
    let marker = "31.4159";
    let child = emu()
        .args([
            "delay",
            "1",
            "--",
            "link",
            "10mbit",
            "--",
            "sh",
            "-c",
            &format!("sleep {marker} & echo started"),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let left = wait_until_clean(pid, marker);
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn nothing_is_left_after_kill_9() {
    let Some(_serial) = start() else { return };
    let marker = "27.1828";
    // An outside program (on the host, with a background child of its
    // own) goes too.
    let outside = format!("sleep {marker} & sleep {marker}");
    let mut child = emu()
        .args([
            "--outside",
            &outside,
            "delay",
            "1",
            "--",
            "link",
            "10mbit",
            "--",
            "sh",
            "-c",
            &format!("sleep {marker} & sleep {marker}"),
        ])
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_for_device(pid);
    assert!(
        !leftovers(pid, marker).is_empty(),
        "the run should be visible before the kill"
    );
    // SAFETY: killing our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let _ = child.wait();
    let left = wait_until_clean(pid, marker);
    assert!(left.is_empty(), "left behind after kill -9: {left:?}");
}

#[test]
fn sigterm_reaches_the_command_and_its_status_is_emus() {
    let Some(_serial) = start() else { return };
    // A duration only this run uses: the check for processes left behind
    // looks at the whole machine, where a plain `sleep 30` (someone's wait,
    // a bench, this test run from another clone) is no leftover of ours.
    let seconds = format!("30.{}", std::process::id());
    let mut child = emu()
        .args(["delay", "1", "--", "sleep", &seconds])
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_for_device(pid);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    let left = wait_until_clean(pid, &format!("sleep {seconds}"));
    assert!(left.is_empty(), "left behind after SIGTERM: {left:?}");
}

/// `kill -INT emu` is a Ctrl-C: it reaches what the command runs in the
/// foreground, not the command alone (a shell waiting for its sleep never
/// saw it, and the run went on).
#[test]
fn sigint_reaches_what_the_command_waits_for() {
    let Some(_serial) = start() else { return };
    let seconds = format!("31.{}", std::process::id());
    let mut command = emu();
    command
        .args(["delay", "1", "--", "sh", "-c"])
        .arg(format!("sleep {seconds}; echo after"))
        .stdout(std::process::Stdio::piped());
    // A test run started in the background by a script has SIGINT ignored,
    // and emu would inherit that: give it the default, as a terminal would.
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let pid = child.id();
    wait_for_device(pid);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("emu still runs 10 s after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(128 + libc::SIGINT));
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert!(
        !out.contains("after"),
        "the shell went on after its sleep: {out}"
    );
    let left = wait_until_clean(pid, &format!("sleep {seconds}"));
    assert!(left.is_empty(), "left behind after SIGINT: {left:?}");
}

#[test]
fn once_stops_the_command_at_the_end_of_the_trace() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("once");
    let trace = dir.join("short.trace");
    std::fs::write(
        &trace,
        (1..=500).map(|t| format!("{t}\n")).collect::<String>(),
    )
    .unwrap();
    let t = trace.display().to_string();
    let start = Instant::now();
    let out = run(&[
        "link",
        "--uplink-trace",
        &t,
        "--downlink-trace",
        &t,
        "--once",
        "--",
        "sh",
        "-c",
        // Ignores SIGTERM, so only the SIGKILL that follows can stop it;
        // the sleep it leaves behind must go with the namespace.
        "trap '' TERM; sleep 20.5",
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the command was not stopped"
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("the trace ended (--once)"));
    let processes = text(
        &Command::new("ps")
            .args(["-eo", "args"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(
        !processes.lines().any(|l| l.starts_with("sleep 20.5")),
        "the command's child was left behind"
    );
}
