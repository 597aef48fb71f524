//! Runs that go wrong around emu: emu itself stopped (SIGSTOP) and resumed
//! in the middle of a TCP transfer, a command that misbehaves in every way
//! it can at exit, and emus side by side and one inside another.
//!
//! They need root; see [`support`] for how they run.

mod support;

use emu_core::log::{Direction, Event, LogReader, Record};
use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// Waits up to `limit` for `child` to exit; kills it (and fails) if not.
fn wait_or_kill(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: emu did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: sending a signal to a child of this test.
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0);
}

/// The records of one direction of a log file.
fn records(path: &std::path::Path, direction: Direction) -> Vec<Record> {
    LogReader::open(path)
        .unwrap()
        .map(|r| r.unwrap())
        .filter(|r| r.direction == direction)
        .collect()
}

/// emu stopped for a second in the middle of a TCP transfer, then resumed:
/// the transfer completes, the accounting balances, and the packets that
/// were in the delay line while emu stood still are logged as leaving late
/// (when they really left), none of them early.
#[test]
fn a_stopped_emu_resumes_and_logs_late_packets_as_late() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("sigstop");
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    const BYTES: usize = 4_000_000;
    let sender = format!(
        "import os, socket\n\
s = socket.create_connection((os.environ['EMU_BASE'], {port}))\n\
s.sendall(b'x' * {BYTES})\n\
s.shutdown(socket.SHUT_WR)\n\
assert s.recv(1) == b'k'\n"
    );
    let mut child = emu()
        .arg("--log")
        .arg(&dir)
        .args(["delay", "5", "--", "link", "16mbit", "--", "python3", "-c"])
        .arg(&sender)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    listener.set_nonblocking(false).unwrap();
    let (mut connection, _) = listener.accept().unwrap();
    connection
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut received = 0;
    let mut buffer = vec![0u8; 1 << 16];
    let mut stopped = false;
    loop {
        let n = connection.read(&mut buffer).expect("the transfer stalled");
        if n == 0 {
            break;
        }
        received += n;
        if !stopped && received > BYTES / 4 {
            stopped = true;
            signal(pid, libc::SIGSTOP);
            std::thread::sleep(Duration::from_secs(1));
            signal(pid, libc::SIGCONT);
        }
    }
    // Told the sender all came; it waits for this before it exits, or
    // emu would end the path with data still on its way.
    std::io::Write::write_all(&mut connection, b"k").unwrap();
    let status = wait_or_kill(&mut child, Duration::from_secs(60), "after SIGCONT");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{stderr}");
    assert_eq!(received, BYTES, "the path did not resume: {stderr}");
    assert_accounting_balances(&dir, &["delay", "link"]);

    // The delay shell is first in, first out in each direction: its i-th
    // departure is its i-th arrival, 5 ms later or more, never sooner.
    let mut latest = 0;
    for direction in Direction::BOTH {
        let log = records(&dir.join("0-delay.emulog"), direction);
        let arrivals: Vec<u64> = log
            .iter()
            .filter(|r| r.event == Event::Arrive)
            .map(|r| r.time)
            .collect();
        let departures: Vec<u64> = log
            .iter()
            .filter(|r| r.event == Event::Depart)
            .map(|r| r.time)
            .collect();
        assert!(departures.len() > 100 && departures.len() <= arrivals.len());
        for (i, (arrived, departed)) in arrivals.iter().zip(&departures).enumerate() {
            assert!(
                departed >= &(arrived + 5_000_000),
                "{direction:?} packet {i} logged leaving {} ns after it arrived, before its delay",
                departed.saturating_sub(*arrived)
            );
            latest = latest.max(departed - arrived);
        }
    }
    assert!(
        latest >= 500_000_000,
        "no packet shows the second emu stood still: the longest stay was {latest} ns"
    );
    let left = wait_until_clean(pid, "no-marker-for-this-test");
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command that forks a thousand children, ignores SIGTERM (and so do
/// they), leaves a daemon in its own session, and closes its stdio: emu,
/// told to stop, ends all of it and cleans up.
#[test]
fn a_misbehaving_command_is_ended_and_cleaned_up() {
    let Some(_serial) = start() else { return };
    let marker = "314.15926";
    let dir = temp_dir("misbehave");
    let ready = dir.join("ready");
    let script = format!(
        "trap '' TERM\n\
         setsid sh -c 'exec sleep {marker}' </dev/null >/dev/null 2>&1 &\n\
         i=0\n\
         while [ $i -lt 1000 ]; do sleep {marker} & i=$((i+1)); done\n\
         exec <&- >&- 2>&-\n\
         touch {ready}\n\
         exec sleep {marker}\n",
        ready = ready.display()
    );
    let mut child = emu()
        .args(["delay", "1", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready.exists() {
        assert!(Instant::now() < deadline, "the command never got ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let running = leftovers(pid, marker)
        .iter()
        .filter(|l| l.contains(marker))
        .count();
    assert!(
        running > 1000,
        "only {running} of the command's processes run"
    );
    signal(pid, libc::SIGTERM);
    let status = wait_or_kill(&mut child, Duration::from_secs(30), "after SIGTERM");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let left = wait_until_clean(pid, marker);
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rules in the host's NAT table that belong to emu `pid`.
fn nat_rules(pid: u32) -> Vec<String> {
    let mut rules = Vec::new();
    for program in ["iptables", "ip6tables"] {
        let out = Command::new(program)
            .args(["-t", "nat", "-S"])
            .output()
            .unwrap();
        rules.extend(
            text(&out.stdout)
                .lines()
                .filter(|l| {
                    l.contains(&format!("emu:{pid}\"")) || l.contains(&format!("emu:{pid} "))
                })
                .map(String::from),
        );
    }
    rules
}

/// The host's devices of emu `pid`.
fn devices(pid: u32) -> Vec<String> {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains(&format!("-{pid}:")) || l.contains(&format!("-{pid}@")))
        .map(|l| l.split(':').nth(1).unwrap_or_default().trim().to_string())
        .collect()
}

/// Two emus at once, one of them running a third inside its shell: all
/// three reach their host, and the one that ends first takes none of the
/// other's namespaces, devices or NAT rules with it.
#[test]
fn two_emus_at_once_and_an_emu_inside_an_emu() {
    let Some(_serial) = start() else { return };
    // The long one: pings its host for 4 s, with no loss allowed.
    let mut long = emu()
        .args([
            "delay",
            "3",
            "--",
            "sh",
            "-c",
            "ping -c 40 -i 0.1 -W 1 $EMU_BASE",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let long_pid = long.id();
    wait_for_device(long_pid);
    let long_devices = devices(long_pid);
    let long_rules = nat_rules(long_pid);
    assert!(!long_devices.is_empty());
    assert!(!long_rules.is_empty(), "no NAT rule to watch");

    // The short one, nested: an emu inside an emu, pinging through both.
    let inner = format!(
        "{} delay 4 -- sh -c 'ping -c 5 -i 0.2 -W 1 $EMU_BASE'",
        env!("CARGO_BIN_EXE_emu")
    );
    let nested = emu()
        .args(["delay", "2", "--", "sh", "-c", &inner])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let nested_pid = nested.id();
    let nested = nested.wait_with_output().unwrap();
    let nested_out = text(&nested.stdout);
    assert!(
        nested.status.success(),
        "{nested_out}{}",
        text(&nested.stderr)
    );
    let (min, _, _) = ping_rtts(&nested_out);
    assert!(
        min >= 2.0 * (4.0 + 2.0),
        "a delay of the nested emus is missing: {min} ms"
    );
    let left = wait_until_clean(nested_pid, "no-marker-for-this-test");
    assert!(left.is_empty(), "the nested emus left behind: {left:?}");

    // The long one lost nothing to the other's start or cleanup.
    assert_eq!(devices(long_pid), long_devices);
    assert_eq!(nat_rules(long_pid), long_rules);
    let status = wait_or_kill(&mut long, Duration::from_secs(30), "the long emu");
    let mut out = String::new();
    long.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "{out}");
    assert!(out.contains("40 received"), "{out}");
    let (min, _, _) = ping_rtts(&out);
    assert!(min >= 2.0 * 3.0, "{out}");
    let left = wait_until_clean(long_pid, "no-marker-for-this-test");
    assert!(left.is_empty(), "left behind: {left:?}");
}
