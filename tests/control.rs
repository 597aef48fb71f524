//! A running path steered through its control socket (`--control`): a
//! change of rate, delay and queue under iperf3, seen in what the links
//! delivered and queued before and after it; bad requests refused without
//! changing anything; a controller that goes away mid-stream; a socket
//! path that exists; a recorded `control.jsonl` replayed as a schedule
//! giving the same change records; and nothing left after a run.

mod support;

use emu_core::log::{Change, Direction, DropReason, Event, LogReader, Record};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::{emu, start, temp_dir, text, wait_until_clean};

const MS: u64 = 1_000_000;

/// A controller's connection, past the greeting.
struct Controller {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    greeting: Value,
}

impl Controller {
    /// Connects once the socket is there (emu builds its shells first).
    fn connect(path: &Path, emu: &mut Child) -> Controller {
        let deadline = Instant::now() + Duration::from_secs(15);
        let stream = loop {
            if let Ok(stream) = UnixStream::connect(path) {
                break stream;
            }
            assert!(
                emu.try_wait().unwrap().is_none(),
                "emu ended before its socket was there"
            );
            assert!(
                Instant::now() < deadline,
                "no control socket at {}",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut controller = Controller {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
            greeting: Value::Null,
        };
        controller.greeting = controller.line();
        controller
    }

    fn line(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        assert!(line.ends_with('\n'), "a reply is one whole line: {line:?}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    fn send(&mut self, line: &str) -> Value {
        writeln!(self.writer, "{line}").unwrap();
        self.line()
    }
}

/// A process of the test's, killed if the test fails before it ends: a
/// server left behind would hold the machine's lock its test ran under.
struct Running(Option<Child>);

impl Running {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("running")
    }

    fn finish(mut self) -> std::process::Output {
        self.0.take().expect("running").wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// emu with a control socket and a log directory around `args`.
fn spawn(socket: &Path, log: &Path, args: &[&str]) -> Running {
    let mut command = emu();
    command
        .args([
            "--control",
            socket.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Running(Some(command.spawn().unwrap()))
}

fn records(log: &Path) -> (u64, Vec<Record>) {
    let reader = LogReader::open(log).unwrap();
    let origin = reader.header.monotonic_origin_ns;
    (origin, reader.map(|r| r.unwrap()).collect())
}

/// Bits per second the uplink delivered between two times.
fn delivered_rate(records: &[Record], from: u64, to: u64) -> f64 {
    let bytes: u64 = records
        .iter()
        .filter(|r| r.direction == Direction::Uplink && r.event == Event::Depart)
        .filter(|r| (from..to).contains(&r.time))
        .map(|r| r.bytes as u64)
        .sum();
    bytes as f64 * 8.0 / ((to - from) as f64 / 1e9)
}

fn most_queued(records: &[Record], from: u64, to: u64) -> u32 {
    records
        .iter()
        .filter(|r| r.direction == Direction::Uplink && (from..to).contains(&r.time))
        .filter(|r| r.event != Event::Change)
        .map(|r| r.queue_packets)
        .max()
        .unwrap_or(0)
}

#[test]
fn a_running_links_rate_delay_and_queue_change_at_one_instant_under_iperf3() {
    let Some(_guard) = start() else { return };
    let dir = temp_dir("control-change");
    let (socket, log) = (dir.join("emu.sock"), dir.join("log"));
    let server = Running(Some(support::iperf3_server("5291")));
    let mut emu = spawn(
        &socket,
        &log,
        &[
            "--cc",
            "reno",
            "delay",
            "10",
            "--",
            "link",
            "20mbit",
            "--",
            "iperf3",
            "-c",
            "$EMU_BASE",
            "-p",
            "5291",
            "-t",
            "9",
        ],
    );
    let pid = emu.child().id();
    let mut controller = Controller::connect(&socket, emu.child());
    assert_eq!(controller.greeting["emu_control"], json!(1));
    assert_eq!(
        controller.greeting["elements"],
        json!(["0.uplink", "0.downlink", "1.uplink", "1.downlink"])
    );
    // Rate and queue of the link's uplink and the delay shell's uplink
    // delay, together, at run time 3.5 s.
    let reply = controller.send(
        r#"{"v":1,"id":1,"op":"set","at":"3500ms","set":{"1.uplink.rate":"5mbit","1.uplink.queue_replace":"droptail packets 20","0.uplink.delay":"30ms"}}"#,
    );
    assert_eq!(reply["ok"], json!(true), "{reply}");
    assert_eq!(reply["id"], json!(1));
    assert_eq!(reply["at_ns"], json!(3500 * MS));
    let status = emu.finish();
    drop(server);
    assert!(status.status.success(), "{}", text(&status.stderr));
    assert!(!socket.exists(), "the socket is removed at exit");

    let (origin, link) = records(&log.join("1-link.emulog"));
    let (delay_origin, delay) = records(&log.join("0-delay.emulog"));
    let change = |records: &[Record], kind: Change| -> Vec<(u64, u64)> {
        records
            .iter()
            .filter(|r| r.change_kind() == Some(kind) && r.direction == Direction::Uplink)
            .map(|r| (r.time, r.value()))
            .collect()
    };
    // The control socket's run time counts from the innermost shell's start.
    let at = origin + 3500 * MS;
    assert_eq!(change(&link, Change::Rate), [(at, 5_000_000)]);
    assert_eq!(change(&link, Change::Queue), [(at, 1)]);
    assert_eq!(change(&delay, Change::Delay), [(at, 30 * MS)]);
    assert!(
        origin >= delay_origin,
        "the link's shell is built after the delay's"
    );
    // What the link delivered and queued, a second clear of the change
    // on each side.
    let before = delivered_rate(&link, at - 2500 * MS, at - 500 * MS);
    // reno recovers from the replaced queue's drops first.
    let after = delivered_rate(&link, at + 1500 * MS, at + 4000 * MS);
    assert!((16e6..=20.5e6).contains(&before), "{before} bit/s before");
    assert!((3.5e6..=5.2e6).contains(&after), "{after} bit/s after");
    let (queued_before, queued_after) = (
        most_queued(&link, at - 2500 * MS, at),
        most_queued(&link, at + 1, at + 4000 * MS),
    );
    assert!(
        queued_before > 40,
        "reno filled the 1000-packet queue: {queued_before}"
    );
    assert!(
        queued_after <= 20,
        "{queued_after} packets in a 20-packet queue"
    );
    let replaced = link
        .iter()
        .filter(|r| r.drop_reason() == Some(DropReason::Replaced))
        .map(|r| r.time)
        .collect::<Vec<_>>();
    assert!(
        !replaced.is_empty() && replaced.iter().all(|t| *t == at),
        "{replaced:?}"
    );
    // The delay shell's uplink: 10 ms before, 30 ms after, packet by packet.
    let mut arrived = std::collections::HashMap::new();
    let mut delays = (Vec::new(), Vec::new());
    for r in delay.iter().filter(|r| r.direction == Direction::Uplink) {
        match r.event {
            Event::Arrive => {
                arrived.insert(r.fingerprint, r.time);
            }
            Event::Depart => {
                if let Some(a) = arrived.remove(&r.fingerprint) {
                    if a + 100 * MS < at {
                        delays.0.push(r.time - a);
                    } else if a > at {
                        delays.1.push(r.time - a);
                    }
                }
            }
            _ => {}
        }
    }
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    assert!((10 * MS..11 * MS).contains(&median(&mut delays.0)));
    assert!((30 * MS..31 * MS).contains(&median(&mut delays.1)));
    let recorded = std::fs::read_to_string(log.join("control.jsonl")).unwrap();
    let line: Value = serde_json::from_str(recorded.trim()).unwrap();
    assert_eq!(line["t_ns"], json!(3500 * MS));
    assert_eq!(line["set"]["1.uplink.rate"], json!("5mbit"));
    let left = wait_until_clean(pid, "-p 5291 -t 9");
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bad_requests_change_nothing_and_a_controller_leaving_mid_stream_harms_no_other() {
    let Some(_guard) = start() else { return };
    let dir = temp_dir("control-refusals");
    let (socket, log) = (dir.join("emu.sock"), dir.join("log"));
    let mut emu = spawn(&socket, &log, &["link", "10mbit", "--", "sleep", "3.21"]);
    let pid = emu.child().id();
    // A subscriber that reads two readings and goes.
    let mut leaving = Controller::connect(&socket, emu.child());
    let reply = leaving.send(r#"{"op":"watch","every":"10ms","elements":["0.uplink"]}"#);
    assert_eq!(reply["ok"], json!(true), "{reply}");
    for _ in 0..2 {
        let reading = leaving.line();
        assert_eq!(reading["event"], json!("telemetry"));
        assert_eq!(
            reading["elements"]["0.uplink"]["rate_bps"],
            json!(10_000_000)
        );
    }
    drop(leaving);
    let mut controller = Controller::connect(&socket, emu.child());
    for (request, says) in [
        ("not json", "not a JSON object"),
        (
            r#"{"op":"set","set":{"5.uplink.rate":"1mbit"}}"#,
            "unknown element '5.uplink'",
        ),
        (
            r#"{"op":"set","set":{"0.uplink.rate":"1mbit","0.downlink.queue":"pie"}}"#,
            "replace the queue",
        ),
        (r#"{"op":"set","set":{"0.uplink.rate":"quick"}}"#, "'quick'"),
        (
            r#"{"op":"set","set":{"0.uplink.rate":"1mbit"},"at":"0s"}"#,
            "has passed",
        ),
        (r#"{"v":9,"op":"get"}"#, "version 1"),
        (r#"{"op":"watch","every":"1ms"}"#, "10ms"),
    ] {
        let reply = controller.send(request);
        assert_eq!(reply["ok"], json!(false), "{request}: {reply}");
        let error = reply["error"].as_str().unwrap();
        assert!(error.contains(says), "{request}: {error}");
    }
    // Nothing changed: the uplink's rate is still 10 Mbit/s.
    let reading = controller.send(r#"{"op":"get","elements":["0.uplink"]}"#);
    assert_eq!(
        reading["elements"]["0.uplink"]["rate_bps"],
        json!(10_000_000)
    );
    assert_eq!(
        reading["elements"]["0.uplink"]["queue"],
        json!("droptail packets 1000")
    );
    let reply = controller.send(r#"{"op":"set","set":{"0.downlink.loss":"1%"}}"#);
    assert_eq!(reply["ok"], json!(true), "{reply}");
    // A controller that goes away with half a request written.
    let mut half = Controller::connect(&socket, emu.child());
    write!(half.writer, r#"{{"op":"set","set":{{"0.uplink.rate":"#).unwrap();
    drop(half);
    // And one that subscribes and never reads: its socket fills, and the
    // run's end does not wait on it.
    let mut deaf = Controller::connect(&socket, emu.child());
    writeln!(deaf.writer, r#"{{"op":"watch","every":"10ms"}}"#).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while emu.child().try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "emu did not end beside a controller that reads nothing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(deaf);
    let output = emu.finish();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!socket.exists());
    let recorded = std::fs::read_to_string(log.join("control.jsonl")).unwrap();
    assert_eq!(
        recorded.lines().count(),
        1,
        "only the change made: {recorded}"
    );
    assert!(recorded.contains("0.downlink.loss"));
    let left = wait_until_clean(pid, "sleep 3.21");
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_socket_path_that_exists_is_refused_and_left_as_it_was() {
    let Some(_guard) = start() else { return };
    let dir = temp_dir("control-taken");
    let socket = dir.join("taken.sock");
    std::fs::write(&socket, "someone else's").unwrap();
    let output = emu()
        .args([
            "--control",
            socket.to_str().unwrap(),
            "delay",
            "1",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the path exists") && stderr.contains("remove it"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "someone else's");
}

#[test]
fn a_recorded_control_file_replayed_gives_the_same_change_records() {
    let Some(_guard) = start() else { return };
    let dir = temp_dir("control-replay");
    let (socket, first) = (dir.join("emu.sock"), dir.join("first"));
    let args = ["delay", "5", "--", "link", "10mbit", "--", "sleep", "2.5"];
    let mut first_run = spawn(&socket, &first, &args);
    let mut controller = Controller::connect(&socket, first_run.child());
    for request in [
        r#"{"op":"set","set":{"1.uplink.rate":"4mbit","0.downlink.delay":"25ms"}}"#,
        r#"{"op":"set","after":"200ms","set":{"1.downlink.queue_replace":"codel","1.uplink.jitter":"1ms"}}"#,
        r#"{"op":"set","at":"1800ms","set":{"1.downlink.queue":"codel target 10ms","0.uplink.loss":"2%"}}"#,
    ] {
        let reply = controller.send(request);
        assert_eq!(reply["ok"], json!(true), "{request}: {reply}");
    }
    let output = first_run.finish();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let second = dir.join("second");
    let output = emu()
        .args(["--log", second.to_str().unwrap(), "--control-replay"])
        .arg(first.join("control.jsonl"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    // Change records by run time (from the innermost shell's start).
    let changes = |log: &Path| -> Vec<(u64, u8, Direction, Change, u64)> {
        let (origin, _) = records(&log.join("1-link.emulog"));
        let mut all = Vec::new();
        for file in ["0-delay.emulog", "1-link.emulog"] {
            let (_, records) = records(&log.join(file));
            all.extend(records.iter().filter_map(|r| {
                r.change_kind()
                    .map(|c| (r.time - origin, r.shell, r.direction, c, r.value()))
            }));
        }
        all.sort_by_key(|c| (c.0, c.1, c.2 as u8, c.3 as u8));
        all
    };
    let (recorded, replayed) = (changes(&first), changes(&second));
    assert_eq!(recorded.len(), 6, "{recorded:?}");
    assert_eq!(recorded, replayed);
    assert_eq!(
        std::fs::read_to_string(first.join("control.jsonl")).unwrap(),
        std::fs::read_to_string(second.join("control.jsonl")).unwrap(),
        "the replay records the same changes again"
    );
}
