//! Integration tests through real shells: namespaces, TUN devices, NAT and
//! the pumps, driven by the `emu` binary as a user would run it.
//!
//! They need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iputils-ping,
//! iperf3 and iptables. Without privileges they fail, unless
//! EMU_SKIP_PRIVILEGED=1 is set (CI never sets it). Every test holds one
//! lock, so runs do not share the machine's two cores and timing-sensitive
//! ones measure emu, not their neighbours.

use emu_core::log::{Direction, Event, LogReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn emu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_emu"))
}

/// Returns false (after saying so) only when the opt-out is set.
fn privileged() -> bool {
    let root = nix_geteuid() == 0;
    if root {
        return true;
    }
    if std::env::var("EMU_SKIP_PRIVILEGED").as_deref() == Ok("1") {
        eprintln!("skipped: not root and EMU_SKIP_PRIVILEGED=1");
        return false;
    }
    panic!("these tests need root (network namespaces, TUN devices, NAT); run them with sudo, or set EMU_SKIP_PRIVILEGED=1 to skip them");
}

fn nix_geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every test's first line: checks privileges (or the opt-out) and takes
/// the machine for itself; None means skip.
fn start() -> Option<std::sync::MutexGuard<'static, ()>> {
    privileged().then(serial)
}

fn run(args: &[&str]) -> Output {
    emu()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running emu")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (min, avg, max) in ms from ping's summary line.
fn ping_rtts(output: &str) -> (f64, f64, f64) {
    let line = output
        .lines()
        .find(|l| l.contains("min/avg/max"))
        .unwrap_or_else(|| panic!("no ping summary in:\n{output}"));
    let numbers: Vec<f64> = line
        .split('=')
        .nth(1)
        .unwrap()
        .trim()
        .split(' ')
        .next()
        .unwrap()
        .split('/')
        .map(|n| n.parse().unwrap())
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

/// Runs `command` (a ping, through `sh -c` so `$EMU_BASE` expands) inside
/// the shells `emu_args` describe; returns ping's (min, avg, max) RTT in ms
/// and everything the command printed.
fn ping_through(emu_args: &[&str], command: &str) -> ((f64, f64, f64), String) {
    let mut args = emu_args.to_vec();
    args.extend(["--", "sh", "-c", command]);
    let out = run(&args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{emu_args:?}: {stdout}{}",
        text(&out.stderr)
    );
    (ping_rtts(&stdout), stdout)
}

/// What a run left behind that carries emu process `pid`'s mark.
fn leftovers(pid: u32, marker: &str) -> Vec<String> {
    let mut left = Vec::new();
    let links = text(
        &Command::new("ip")
            .args(["-o", "link", "show"])
            .output()
            .unwrap()
            .stdout,
    );
    left.extend(
        links
            .lines()
            .filter(|l| l.contains(&format!("-{pid}:")) || l.contains(&format!("-{pid}@")))
            .map(String::from),
    );
    for program in ["iptables", "ip6tables"] {
        let rules = text(
            &Command::new(program)
                .args(["-t", "nat", "-S"])
                .output()
                .unwrap()
                .stdout,
        );
        left.extend(
            rules
                .lines()
                .filter(|l| l.contains(&format!("emu:{pid}")))
                .map(String::from),
        );
    }
    let processes = text(
        &Command::new("ps")
            .args(["-eo", "pid,args"])
            .output()
            .unwrap()
            .stdout,
    );
    left.extend(
        processes
            .lines()
            .filter(|l| l.contains(marker) && !l.contains("ps -eo"))
            .map(String::from),
    );
    if std::path::Path::new(&format!("/proc/{pid}")).exists() {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        if !status.contains("State:\tZ") {
            left.push(format!("emu process {pid} itself"));
        }
    }
    left
}

fn wait_until_clean(pid: u32, marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = leftovers(pid, marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn ping_rtt_through_delay_20_is_40_ms() {
    let Some(_serial) = start() else { return };
    let ((min, avg, max), _) = ping_through(&["delay", "20"], "ping -c 30 -i 0.05 -q $EMU_BASE");
    eprintln!(
        "delay 20: ping RTT min {min:.3} avg {avg:.3} max {max:.3} ms; error of the mean {:+.3} ms",
        avg - 40.0
    );
    assert!(min >= 40.0, "a packet came back early: min RTT {min} ms");
    assert!(
        avg - 40.0 < 0.5,
        "mean RTT {avg} ms is more than 0.5 ms over 40 ms"
    );
}

#[test]
fn nested_shells_add_their_delays() {
    let Some(_serial) = start() else { return };
    let ((min, avg, _), stdout) = ping_through(
        &["delay", "5", "--", "delay", "10"],
        "ping -c 20 -i 0.05 -q $EMU_BASE; echo \"prefix=$EMU_SHELL_PREFIX\"",
    );
    eprintln!("delay 5 + delay 10: ping RTT min {min:.3} avg {avg:.3} ms (expected 30)");
    assert!(min >= 30.0 && avg < 30.8, "min {min} avg {avg}");
    assert!(
        stdout.contains("prefix=[delay 5 ms] [delay 10 ms] "),
        "{stdout}"
    );
}

#[test]
fn ipv6_crosses_the_shell_too() {
    let Some(_serial) = start() else { return };
    let ((min, _, _), _) = ping_through(&["delay", "3"], "ping -6 -c 5 -i 0.05 -q $EMU_BASE6");
    assert!(min >= 6.0, "{min}");
}

/// Goodput of one TCP flow through `link 10mbit`, against the rate net of
/// IP and TCP headers (20 + 20 + 12 bytes of timestamp option per 1500).
#[test]
fn tcp_goodput_through_link_10mbit_is_within_3_percent() {
    let Some(_serial) = start() else { return };
    let port = "5911";
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-p", port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 is needed: apt-get install iperf3");
    std::thread::sleep(Duration::from_millis(300));
    let out = run(&[
        "link",
        "10mbit",
        "--",
        "sh",
        "-c",
        &format!("iperf3 -c $EMU_BASE -p {port} -t 8 -O 2 -J"),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("iperf3 JSON");
    let goodput = report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    let ceiling = 10e6 * 1448.0 / 1500.0;
    let error = goodput / ceiling - 1.0;
    eprintln!(
        "link 10mbit: TCP goodput {:.3} Mbit/s vs {:.3} Mbit/s net of headers ({:+.2}%)",
        goodput / 1e6,
        ceiling / 1e6,
        error * 100.0
    );
    assert!(
        error.abs() < 0.03,
        "goodput {goodput} is {:.2}% off",
        error * 100.0
    );
}

#[test]
fn exit_status_propagates() {
    let Some(_serial) = start() else { return };
    assert_eq!(
        run(&["delay", "1", "--", "sh", "-c", "exit 7"])
            .status
            .code(),
        Some(7)
    );
    assert_eq!(run(&["delay", "1", "--", "true"]).status.code(), Some(0));
    // Killed by a signal: 128 + signal number, as a shell reports it.
    assert_eq!(
        run(&["delay", "1", "--", "sh", "-c", "kill -9 $$"])
            .status
            .code(),
        Some(137)
    );
    let out = run(&["delay", "1", "--", "no-such-command-xyz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("'no-such-command-xyz' was not found"));
}

#[test]
fn bad_arguments_and_malformed_traces_give_one_clear_error_and_leave_nothing() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("badtrace");
    let cases: Vec<(Vec<String>, &str)> = {
        let decreasing = dir.join("decreasing.trace");
        std::fs::write(&decreasing, "5\n7\n3\n").unwrap();
        let empty_line = dir.join("empty-line.trace");
        std::fs::write(&empty_line, "1\n\n2\n").unwrap();
        let zero = dir.join("zero.trace");
        std::fs::write(&zero, "0\n").unwrap();
        let s = |p: &Path| p.display().to_string();
        vec![
            (vec!["delay".into(), "forty".into()], "'forty' is not valid"),
            (
                vec!["link".into(), "10 mbit".into()],
                "'10 mbit' is not valid",
            ),
            (
                vec![
                    "link".into(),
                    "10mbit".into(),
                    "--queue".into(),
                    "droptail flows 3".into(),
                ],
                "unknown option 'flows'",
            ),
            (
                vec![
                    "link".into(),
                    "--uplink-trace".into(),
                    s(&decreasing),
                    "--downlink".into(),
                    "1mbit".into(),
                ],
                "decreasing.trace:3: timestamps must be nondecreasing",
            ),
            (
                vec![
                    "link".into(),
                    "--uplink-trace".into(),
                    s(&empty_line),
                    "--downlink".into(),
                    "1mbit".into(),
                ],
                "empty-line.trace:2: empty line",
            ),
            (
                vec![
                    "link".into(),
                    "--uplink-trace".into(),
                    s(&zero),
                    "--downlink".into(),
                    "1mbit".into(),
                ],
                "nonzero",
            ),
            (vec!["loss".into(), "2".into()], "'2' is not a probability"),
            (
                vec!["--bogus".into(), "delay".into(), "1".into()],
                "unknown option '--bogus'",
            ),
            (vec!["tunnel".into(), "1".into()], "'tunnel' is not a shell"),
        ]
    };
    for (args, expected) in cases {
        let child = emu()
            .args(&args)
            .arg("--")
            .arg("true")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{args:?}: expected '{expected}' in: {stderr}"
        );
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{args:?}: not one line: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(leftovers(pid, "no-marker-needed-here").is_empty());
    }
}

#[test]
fn missing_privilege_is_named_with_the_fix() {
    let Some(_serial) = start() else { return };
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_emu"))
        .args(["delay", "10", "--", "true"])
        .output()
        .expect("setpriv (util-linux) is needed");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("CAP_SYS_ADMIN")
            && stderr.contains("CAP_NET_ADMIN")
            && stderr.contains("sudo"),
        "{stderr}"
    );
}

#[test]
fn the_command_runs_as_the_user_who_called_sudo() {
    let Some(_serial) = start() else { return };
    let out = emu()
        .env("SUDO_UID", "65534")
        .args(["delay", "1", "--", "id", "-u"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "65534");
}

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

fn wait_for_device(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let links = text(
            &Command::new("ip")
                .args(["-o", "link", "show"])
                .output()
                .unwrap()
                .stdout,
        );
        if links.contains(&format!("-{pid}:")) {
            std::thread::sleep(Duration::from_millis(300));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("emu {pid} never created its device");
}

#[test]
fn nothing_is_left_after_kill_9() {
    let Some(_serial) = start() else { return };
    let marker = "27.1828";
    let mut child = emu()
        .args([
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
    let mut child = emu()
        .args(["delay", "1", "--", "sleep", "30"])
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_for_device(pid);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(wait_until_clean(pid, "sleep 30").is_empty());
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

/// The per-packet log agrees with the counters: for every shell and
/// direction, arrivals, departures and drops in the log match the summary,
/// and read = delivered + dropped + queued.
#[test]
fn the_log_agrees_with_the_counters() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("log");
    let d = dir.display().to_string();
    let out = run(&[
        "--log",
        &d,
        "--stats",
        "delay",
        "2",
        "--",
        "loss",
        "0.2",
        "--seed",
        "9",
        "--",
        "link",
        "2mbit",
        "--queue",
        "droptail packets 5",
        "--",
        "sh",
        "-c",
        "ping -c 60 -i 0.01 -s 1400 -q $EMU_BASE; exit 0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary-0.json")).unwrap())
            .unwrap();
    assert_eq!(summary["log_records_lost"], 0);
    let directions = summary["directions"].as_array().unwrap();
    assert_eq!(directions.len(), 6);
    let mut total_drops = 0;
    for entry in directions {
        let shell = entry["shell"].as_u64().unwrap() as u8;
        let direction = if entry["direction"] == "uplink" {
            Direction::Uplink
        } else {
            Direction::Downlink
        };
        let kind = ["delay", "loss", "link"][shell as usize];
        let reader = LogReader::open(&dir.join(format!("{shell}-{kind}.emulog"))).unwrap();
        let (mut arrive, mut depart, mut drop) = (0u64, 0u64, 0u64);
        for record in reader {
            let r = record.unwrap();
            if r.direction != direction {
                continue;
            }
            match r.event {
                Event::Arrive => arrive += 1,
                Event::Depart => depart += 1,
                Event::Drop => drop += 1,
                _ => {}
            }
        }
        let dropped: u64 = entry["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let read = entry["read"].as_u64().unwrap();
        assert_eq!(arrive, read, "{entry}");
        assert_eq!(depart, entry["delivered"].as_u64().unwrap(), "{entry}");
        assert_eq!(drop, dropped, "{entry}");
        assert_eq!(
            read,
            entry["delivered"].as_u64().unwrap()
                + dropped
                + entry["queued_at_exit"].as_u64().unwrap(),
            "{entry}"
        );
        total_drops += dropped;
    }
    assert!(total_drops > 0, "the run should have lost packets");
    assert!(
        text(&out.stderr).contains("read "),
        "--stats prints the accounting"
    );
    let dump = emu()
        .args(["log", "dump", &format!("{d}/2-link.emulog")])
        .output()
        .unwrap();
    assert!(text(&dump.stdout).starts_with("time_ns,shell,direction,event"));
}

/// Bytes arrive intact in both directions, over IPv4 and IPv6, through a
/// lossy, rate-limited path: segmentation offload (cutting super-packets,
/// merging due segments) must not corrupt or stall anything.
#[test]
fn tcp_data_arrives_intact_both_ways_over_ipv4_and_ipv6() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("integrity");
    // The host side: accepts one connection, sends 20 MB derived from a seed,
    // and hashes what it receives back.
    let server = dir.join("server.py");
    std::fs::write(
        &server,
        r#"
import hashlib, socket, sys, threading
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
s.settimeout(60)
print("ready", flush=True)
c, _ = s.accept()
c.settimeout(60)
def send():
    for i in range(320):
        c.sendall(hashlib.sha256(b"down%d" % i).digest() * 2048)
t = threading.Thread(target=send); t.start()
h = hashlib.sha256()
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b)
t.join()
# Close our side only once the whole upload is in: the client waits for
# this end of stream, so it cannot exit (and end the shell) with upload
# bytes still in its socket's send buffer.
c.shutdown(socket.SHUT_WR)
print(h.hexdigest(), flush=True)
"#,
    )
    .unwrap();
    let client = dir.join("client.py");
    std::fs::write(
        &client,
        r#"
import hashlib, socket, sys, threading
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
def send():
    for i in range(320):
        c.sendall(hashlib.sha256(b"up%d" % i).digest() * 2048)
    c.shutdown(socket.SHUT_WR)
t = threading.Thread(target=send); t.start()
h = hashlib.sha256()
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b)
t.join()
print(h.hexdigest())
"#,
    )
    .unwrap();
    let expected = |tag: &str| {
        let out = Command::new("python3")
            .args(["-c", &format!("import hashlib\nh=hashlib.sha256()\nfor i in range(320): h.update(hashlib.sha256(b'{tag}%d' % i).digest() * 2048)\nprint(h.hexdigest())")])
            .output()
            .unwrap();
        text(&out.stdout).trim().to_string()
    };
    for (port, base, listen) in [
        ("5921", "$EMU_BASE", "0.0.0.0"),
        ("5922", "$EMU_BASE6", "::"),
    ] {
        let mut host = Command::new("python3")
            .arg(&server)
            .args([listen, port])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = [0u8; 6];
        use std::io::Read;
        host.stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut ready)
            .unwrap();
        let out = run(&[
            "loss",
            "0.01",
            "--seed",
            "3",
            "--",
            "link",
            "200mbit",
            "--",
            "sh",
            "-c",
            &format!("python3 {} {base} {port}", client.display()),
        ]);
        if !out.status.success() {
            let _ = host.kill();
        }
        let host_out = host.wait_with_output().unwrap();
        assert!(out.status.success(), "{base}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout).trim(),
            expected("down"),
            "{base}: downloaded bytes differ"
        );
        assert_eq!(
            text(&host_out.stdout).trim(),
            expected("up"),
            "{base}: uploaded bytes differ"
        );
    }
}

/// Busy polling changes how the threads wait, not what the path does.
#[test]
fn busy_poll_keeps_the_path_exact() {
    let Some(_serial) = start() else { return };
    let ((min, avg, _), _) = ping_through(
        &["--busy-poll", "delay", "5"],
        "ping -c 20 -i 0.02 -q $EMU_BASE",
    );
    eprintln!("busy-poll delay 5: ping RTT min {min:.3} avg {avg:.3} ms");
    // Never early; the upper bound only catches a delay applied twice.
    assert!(min >= 10.0 && avg < 15.0, "min {min} avg {avg}");
}

/// Three seconds of an ECN-enabled TCP flow from inside `link 20mbit`
/// with `queue` on the uplink, logged to `dir`.
fn ecn_flow_through(dir: &Path, port: &str, queue: &str) {
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-p", port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let out = run(&[
        "--log",
        &dir.display().to_string(),
        "link",
        "20mbit",
        "--uplink-queue",
        queue,
        "--",
        "sh",
        "-c",
        &format!("sysctl -qw net.ipv4.tcp_ecn=1 && iperf3 -c $EMU_BASE -p {port} -t 3 >/dev/null"),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A TCP flow with ECN through `link --queue "codel … ecn"`: CoDel marks
/// its packets CE instead of dropping them, and the per-packet log shows it.
#[test]
fn codel_ce_marks_an_ecn_tcp_flow_and_the_log_records_it() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("ecn");
    ecn_flow_through(&dir, "5931", "codel target 1ms interval 10ms ecn");
    let (mut ce_marks, mut aqm_drops, mut ect_departures) = (0, 0, 0);
    for record in LogReader::open(&dir.join("0-link.emulog")).unwrap() {
        let r = record.unwrap();
        if r.direction != Direction::Uplink {
            continue;
        }
        match r.event {
            Event::Mark if r.detail == emu_core::log::Mark::Ce as u8 => ce_marks += 1,
            // Not-ECT packets (pure ACKs, SYNs) are still dropped, as they must be.
            Event::Drop
                if r.drop_reason() == Some(emu_core::log::DropReason::Aqm) && r.ecn != 0 =>
            {
                eprintln!("ECN-capable packet dropped by the AQM: {r:?}");
                aqm_drops += 1
            }
            Event::Depart if r.ecn != 0 => ect_departures += 1,
            _ => {}
        }
    }
    eprintln!("codel ecn: {ce_marks} CE marks, {aqm_drops} AQM drops of ECN-capable packets, {ect_departures} ECN-capable departures");
    assert!(ect_departures > 1000, "the flow negotiated ECN");
    assert!(ce_marks > 0, "CoDel marked the flow");
    assert_eq!(aqm_drops, 0, "ECN-capable packets are marked, not dropped");
    let summary = std::fs::read_to_string(dir.join("summary-0.json")).unwrap();
    assert!(
        summary.contains(&format!("\"marked_ce\":{ce_marks}")),
        "{summary}"
    );
}

/// A TCP flow with ECN through cake with SCE marking: the ramp turns
/// ECT(0) packets into ECT(1) (never touching Not-ECT or CE), and the log
/// and summary record each such mark.
#[test]
fn cake_sce_ramp_marks_an_ecn_tcp_flow_ect1_in_the_log() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("sce");
    ecn_flow_through(&dir, "5932", "cake besteffort sce");
    let (mut ect1_marks, mut ect1_departures, mut ect0_departures) = (0, 0, 0);
    for record in LogReader::open(&dir.join("0-link.emulog")).unwrap() {
        let r = record.unwrap();
        if r.direction != Direction::Uplink {
            continue;
        }
        match r.event {
            Event::Mark if r.detail == emu_core::log::Mark::Ect1 as u8 => {
                assert_eq!(r.ecn, 0b01, "a mark leaves the packet ECT(1): {r:?}");
                ect1_marks += 1
            }
            Event::Depart if r.ecn == 0b01 => ect1_departures += 1,
            Event::Depart if r.ecn == 0b10 => ect0_departures += 1,
            _ => {}
        }
    }
    eprintln!("cake sce: {ect1_marks} ECT(1) marks, {ect1_departures} ECT(1) and {ect0_departures} ECT(0) departures");
    assert!(ect0_departures > 100, "the flow negotiated ECN");
    assert!(ect1_marks > 0, "the SCE ramp marked the flow");
    // The sender only sends ECT(0), so every ECT(1) packet that left was
    // one the ramp marked (in flight at exit is the only difference).
    assert!(ect1_departures <= ect1_marks && ect1_marks - ect1_departures < 200);
    let summary = std::fs::read_to_string(dir.join("summary-0.json")).unwrap();
    assert!(
        summary.contains(&format!("\"marked_ect1\":{ect1_marks}")),
        "{summary}"
    );
}

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
        let child = Command::new(env!("CARGO_BIN_EXE_mm-link"))
            .arg(&path)
            .arg(&path)
            .args(["--", "true"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
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

#[test]
fn the_report_follows_packets_across_shells_and_reads_capacity_from_the_trace() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("report");
    let trace = dir.join("12mbps.trace");
    std::fs::write(&trace, "1\n").unwrap();
    let logs = dir.join("logs");
    let t = trace.display().to_string();
    let out = run(&[
        "--log",
        &logs.display().to_string(),
        "delay",
        "15",
        "--",
        "link",
        "--uplink-trace",
        &t,
        "--downlink-trace",
        &t,
        "--",
        "sh",
        "-c",
        "ping -c 20 -i 0.05 -q $EMU_BASE",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The trace travels with the logs.
    assert!(logs.join("1-uplink.trace").exists());
    let report_dir = dir.join("report");
    let out = run(&[
        "report",
        &logs.display().to_string(),
        "--json",
        "--out",
        &report_dir.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let directions = summary["runs"][0]["directions"].as_array().unwrap();
    assert_eq!(directions.len(), 2);
    for d in directions {
        let path = &d["path"];
        // Echo requests go up (link first), replies come down (delay first).
        let ends = (path["entry_shell"].as_u64(), path["exit_shell"].as_u64());
        match d["direction"].as_str() {
            Some("uplink") => assert_eq!(ends, (Some(1), Some(0))),
            _ => assert_eq!(ends, (Some(0), Some(1))),
        }
        assert!(path["delivered"].as_u64().unwrap() >= 20, "{path}");
        assert_eq!(path["arrivals"], path["delivered"], "{path}");
        // 15 ms of delay plus up to 1 ms waiting for the trace.
        let delay = &path["one_way_delay"];
        let (min, max) = (
            delay["min_ms"].as_f64().unwrap(),
            delay["max_ms"].as_f64().unwrap(),
        );
        assert!(min >= 15.0 && max < 17.0, "one-way delay {min}..{max} ms");
        let capacity = path["capacity_mbps"].as_f64().unwrap();
        assert!((capacity - 12.0).abs() < 0.12, "capacity {capacity} Mbit/s");
        assert_eq!(d["bottleneck_shell"], 1);
    }
    let page = std::fs::read_to_string(report_dir.join("index.html")).unwrap();
    assert!(page.matches("<svg").count() >= 8);

    // Bad input: one message naming it, a nonzero status.
    let out = run(&["report", &dir.join("nothing").display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nothing: cannot open"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["report", &logs.display().to_string(), "--bin", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--bin"), "{}", text(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `link --queue "cake bandwidth 4mbit"` with no rate: cake's shaper alone
/// is the bottleneck. The report takes its capacity from the shaper, says
/// so, and names the iperf3 flow by its port.
#[test]
fn a_shaping_queue_alone_is_the_bottleneck_and_the_report_names_the_flow() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("shaper");
    let logs = dir.join("logs");
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-p", "5934"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let out = run(&[
        "--log",
        &logs.display().to_string(),
        "link",
        "--queue",
        "cake bandwidth 4mbit besteffort",
        "--",
        "sh",
        "-c",
        "iperf3 -c $EMU_BASE -p 5934 -t 2 >/dev/null",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(&[
        "report",
        &logs.display().to_string(),
        "--json",
        "--flows",
        "port:5934",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let directions = summary["runs"][0]["directions"].as_array().unwrap();
    let up = directions
        .iter()
        .find(|d| d["direction"] == "uplink")
        .unwrap();
    let path = &up["path"];
    let capacity = path["capacity_mbps"].as_f64().unwrap();
    assert!((capacity - 4.0).abs() < 0.01, "capacity {capacity} Mbit/s");
    assert_eq!(path["capacity_source"], "queue shaper", "{path}");
    assert_eq!(up["bottleneck_shell"], 0);
    // iperf3's two connections to the port (control, then data, the
    // bigger), selected by it and named by it.
    let flows = up["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "{flows:?}");
    for flow in flows {
        let name = flow["name"].as_str().unwrap();
        assert!(
            name.starts_with("tcp ") && name.ends_with(":5934"),
            "flow named {name}"
        );
        assert_eq!(flow["tuple"]["destination_port"], 5934);
    }
    // Cake paces it to its bandwidth (IP bytes; cake charges no MAC header
    // here), and the shaped flow fills most of it.
    let own_span = flows[0]["throughput_mbps"].as_f64().unwrap();
    assert!(
        own_span > 3.0 && own_span < 4.0 * 1.01,
        "throughput {own_span} Mbit/s through a 4 Mbit/s shaper"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
