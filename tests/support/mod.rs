//! Integration tests through real shells: namespaces, TUN devices, NAT and
//! the pumps, driven by the `emu` binary as a user would run it.
//!
//! They need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iputils-ping,
//! iperf3 and iptables. Without privileges they fail, unless
//! EMU_SKIP_PRIVILEGED=1 is set (CI never sets it). Every test holds one
//! lock, so runs do not share the machine's two cores and timing-sensitive
//! ones measure emu, not their neighbours.
//!
//! The helpers every file of them shares: running emu, taking the
//! machine's lock, reading ping's figures, finding what a run left behind.

// Each test file uses some of the helpers, never all of them.
#![allow(dead_code)]

pub mod experiment;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn emu() -> Command {
    Command::new(env!("CARGO_BIN_EXE_emu"))
}

/// Returns false (after saying so) only when the opt-out is set.
pub fn privileged() -> bool {
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

pub fn nix_geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every test's first line: checks privileges (or the opt-out) and takes
/// the machine for itself; None means skip.
pub fn start() -> Option<std::sync::MutexGuard<'static, ()>> {
    if !privileged() {
        return None;
    }
    experiment::note_first_bpf_ids();
    Some(serial())
}

/// How long a test lets a disturbance of the machine pass before it makes
/// a disturbed run again: this VM's host holds its CPUs in stretches of
/// seconds to minutes, and a run made at once meets the same stretch.
pub const LET_PASS: Duration = Duration::from_secs(15);

pub fn run(args: &[&str]) -> Output {
    emu()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running emu")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// (min, avg, max) in ms from ping's summary line.
pub fn ping_rtts(output: &str) -> (f64, f64, f64) {
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
pub fn ping_through(emu_args: &[&str], command: &str) -> ((f64, f64, f64), String) {
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

/// A reply later than this past the expected RTT says the machine, not
/// the path, held a packet: quiet runs here stay within 1 ms of it, and a
/// shared VM's stalls (a vCPU descheduled, real-time throttling) hold one
/// for 10 ms and more.
const STALL_MS: f64 = 5.0;

/// Makes `attempt` (given its number, from 1) until `disturbed` finds
/// nothing to say of what it made, up to three times in all and
/// [`LET_PASS`] apart, and returns the last made whatever was said. Each
/// reason is printed with `label`. For runs the machine can disturb: a
/// path that is wrong every time still fails its test, as does one
/// disturbed three times.
pub fn undisturbed<T>(
    label: &str,
    mut attempt: impl FnMut(u32) -> T,
    disturbed: impl Fn(&T) -> Option<String>,
) -> T {
    const ATTEMPTS: u32 = 3;
    let mut n = 1;
    loop {
        let made = attempt(n);
        match disturbed(&made) {
            Some(why) if n < ATTEMPTS => {
                eprintln!("{label} (attempt {n}): {why}: once more");
                std::thread::sleep(LET_PASS);
                n += 1;
            }
            _ => return made,
        }
    }
}

/// [`ping_through`], made again while a reply comes back more than
/// [`STALL_MS`] after `expected_ms` (see [`undisturbed`]): one stall
/// moves a 30-ping mean by 0.4 ms, which is the error the timing tests
/// bound.
pub fn ping_through_unstalled(
    emu_args: &[&str],
    command: &str,
    expected_ms: f64,
) -> ((f64, f64, f64), String) {
    undisturbed(
        &format!("{emu_args:?}"),
        |_| ping_through(emu_args, command),
        |((_, _, max), _)| {
            (max - expected_ms > STALL_MS).then(|| {
                format!("a reply took {max:.3} ms against {expected_ms} ms: the machine stalled")
            })
        },
    )
}

/// What a run left behind that carries emu process `pid`'s mark.
pub fn leftovers(pid: u32, marker: &str) -> Vec<String> {
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
    // The whole comment: `emu:123` is not a rule of emu 1234's.
    let owner = format!("emu:{pid}");
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
                .filter(|l| l.split([' ', '"']).any(|w| w == owner))
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

pub fn wait_until_clean(pid: u32, marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = leftovers(pid, marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fresh directory named for a test, `emu-it-NAME-PID` in the temp
/// directory. It is removed when the test binary exits, with every other
/// one it made, unless a test failed: then they are all kept, for a look,
/// and the exit says where. Without that a run of the suite left about
/// half a gigabyte behind.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    scratch::remember(&dir);
    dir
}

/// The test binary's scratch directories, removed at its exit unless a
/// test panicked.
mod scratch {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, Once};

    static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    static PANICKED: AtomicBool = AtomicBool::new(false);

    pub fn remember(dir: &Path) {
        static HOOKS: Once = Once::new();
        HOOKS.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                PANICKED.store(true, Ordering::SeqCst);
                previous(info);
            }));
            // SAFETY: registers a plain function to run at exit.
            unsafe { libc::atexit(remove_at_exit) };
        });
        let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
        if !made.iter().any(|d| d == dir) {
            made.push(dir.to_path_buf());
        }
    }

    extern "C" fn remove_at_exit() {
        let made = MADE.lock().unwrap_or_else(|e| e.into_inner());
        if PANICKED.load(Ordering::SeqCst) {
            eprintln!("a test failed: its scratch directories are kept:");
            for dir in made.iter().filter(|d| d.exists()) {
                eprintln!("  {}", dir.display());
            }
            return;
        }
        for dir in made.iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

pub fn wait_for_device(pid: u32) {
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

/// A one-off iperf3 server on the host (`iperf3 -s -1 -p PORT`), given a
/// moment to listen.
pub fn iperf3_server(port: &str) -> std::process::Child {
    let server = Command::new("iperf3")
        .args(["-s", "-1", "-p", port])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("iperf3 is needed: apt-get install iperf3");
    std::thread::sleep(std::time::Duration::from_millis(300));
    server
}

/// One direction of a shell, as a run's summary and log give it.
pub struct BalancedDirection {
    pub shell: usize,
    pub direction: emu_core::log::Direction,
    pub read: u64,
    /// The direction's records in the shell's log.
    pub records: Vec<emu_core::log::Record>,
}

/// read = delivered + dropped + queued for every shell and direction of
/// the summary in `dir` (shell N's log is `N-<kinds[N]>.emulog`), and the
/// log's arrivals, departures and drops agree with those counts. Returns
/// each direction, for checks of its own.
pub fn assert_accounting_balances(dir: &std::path::Path, kinds: &[&str]) -> Vec<BalancedDirection> {
    use emu_core::log::{Direction, Event, LogReader};
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary-0.json")).unwrap())
            .unwrap();
    assert_eq!(summary["log_records_lost"], 0, "{summary}");
    let mut directions = Vec::new();
    for entry in summary["directions"].as_array().unwrap() {
        let shell = entry["shell"].as_u64().unwrap() as usize;
        let direction = if entry["direction"] == "uplink" {
            Direction::Uplink
        } else {
            Direction::Downlink
        };
        let dropped: u64 = entry["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let read = entry["read"].as_u64().unwrap();
        let delivered = entry["delivered"].as_u64().unwrap();
        assert_eq!(
            read,
            delivered + dropped + entry["queued_at_exit"].as_u64().unwrap(),
            "{entry}"
        );
        let records: Vec<_> =
            LogReader::open(&dir.join(format!("{shell}-{}.emulog", kinds[shell])))
                .unwrap()
                .map(|r| r.unwrap())
                .filter(|r| r.direction == direction)
                .collect();
        let count = |event| records.iter().filter(|r| r.event == event).count() as u64;
        assert_eq!(count(Event::Arrive), read, "{entry}");
        assert_eq!(count(Event::Depart), delivered, "{entry}");
        assert_eq!(count(Event::Drop), dropped, "{entry}");
        directions.push(BalancedDirection {
            shell,
            direction,
            read,
            records,
        });
    }
    directions
}

/// Runs emu with `args` as an unprivileged user (nobody, no capabilities).
pub fn emu_as_nobody(args: &[&str]) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ])
        .arg(env!("CARGO_BIN_EXE_emu"))
        .args(args)
        .output()
        .expect("setpriv (util-linux) is needed")
}
