//! `--pcap`: the capture files read back by tshark agree with emu's own
//! packet log, packet by packet: counts, nanosecond timestamps, lengths,
//! the cut at the snap length, and the comments (sojourn, drop reason, the
//! ECN mark this shell made).
//!
//! Needs root, tshark and python3 (scripts/install-deps); run it under the
//! machine's network-test lock:
//! `flock /tmp/emu-nettest.lock cargo test --release --test pcap`.

use emu_core::log::{Direction, Event, LogReader, Record};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One packet as tshark shows it.
#[derive(Debug)]
struct Shown {
    epoch_ns: u128,
    len: u32,
    cap_len: u32,
    comment: String,
}

fn tshark(path: &Path) -> Vec<Shown> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-T", "fields", "-E", "separator=|"])
        .args([
            "-e",
            "frame.time_epoch",
            "-e",
            "frame.len",
            "-e",
            "frame.cap_len",
        ])
        .args(["-e", "frame.comment"])
        .output()
        .expect("running tshark (apt-get install tshark; scripts/install-deps does)");
    assert!(out.status.success(), "tshark: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('|').collect();
            let (seconds, fraction) = fields[0].split_once('.').expect("a decimal time");
            assert_eq!(fraction.len(), 9, "nanosecond timestamps: {line}");
            Shown {
                epoch_ns: seconds.parse::<u128>().unwrap() * 1_000_000_000
                    + fraction.parse::<u128>().unwrap(),
                len: fields[1].parse().unwrap(),
                cap_len: fields[2].parse().unwrap(),
                comment: fields[3].to_string(),
            }
        })
        .collect()
}

fn sojourn_text(ns: u64) -> String {
    format!("sojourn {}.{:06} ms", ns / 1_000_000, ns % 1_000_000)
}

/// A burst of ECN-capable UDP packets into a CoDel queue with ECN and a
/// short limit: the burst overflows it (tail drops) and the standing queue
/// gets CE marks.
#[test]
fn captures_agree_with_the_log_in_counts_times_and_comments() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        if std::env::var("EMU_SKIP_PRIVILEGED").as_deref() == Ok("1") {
            return;
        }
        panic!("this test needs root (network namespaces, TUN devices); run it with sudo, or set EMU_SKIP_PRIVILEGED=1 to skip it");
    }
    let dir = std::env::temp_dir().join(format!("emu-it-pcap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let scratch = Scratch(dir.clone());
    let pcap = dir.join("pcap");
    let logs = dir.join("logs");
    // 300 datagrams of 1000 bytes, ECT(0), sent at once to a port nobody
    // listens on (the host's ICMP answers are rate-limited and few).
    let burst = "import os, socket\n\
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)\n\
for i in range(300):\n    s.sendto(b'x' * 1000, (os.environ['EMU_BASE'], 9))\n";
    let out = Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("--pcap")
        .arg(&pcap)
        .arg("--pcap-drops")
        .arg("--log")
        .arg(&logs)
        .args(["link", "2mbit", "--queue", "codel ecn limit 60"])
        .args(["--", "sh", "-c"])
        .arg(format!("python3 -c \"{burst}\" && sleep 1.2"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "emu: {}", text(&out.stderr));

    let reader = LogReader::open(&logs.join("0-link.emulog")).unwrap();
    let header = reader.header.clone();
    let records: Vec<Record> = reader
        .map(|r| r.unwrap())
        .filter(|r| r.direction == Direction::Uplink)
        .collect();
    let wall =
        |r: &Record| (r.time - header.monotonic_origin_ns + header.realtime_origin_ns) as u128;
    let departures: Vec<&Record> = records
        .iter()
        .filter(|r| r.event == Event::Depart)
        .collect();
    let drops: Vec<&Record> = records.iter().filter(|r| r.event == Event::Drop).collect();
    let marks = records.iter().filter(|r| r.event == Event::Mark).count();
    assert!(departures.len() >= 60, "departures {}", departures.len());
    assert!(!drops.is_empty(), "the burst should overflow the queue");
    assert!(marks > 0, "CoDel should have marked the standing queue");

    let shown = tshark(&pcap.join("0-link-uplink.pcapng"));
    assert_eq!(
        shown.len(),
        departures.len(),
        "one captured packet per departure"
    );
    let mut marked = 0;
    for (packet, record) in shown.iter().zip(&departures) {
        assert_eq!(
            packet.epoch_ns,
            wall(record),
            "departure time to the nanosecond"
        );
        assert_eq!(packet.len, record.bytes);
        assert_eq!(
            packet.cap_len,
            record.bytes.min(128),
            "headers only by default"
        );
        assert!(
            packet
                .comment
                .starts_with(&format!("departed; {}", sojourn_text(record.sojourn))),
            "{packet:?} vs {record:?}"
        );
        if packet.comment.ends_with("; marked CE here") {
            assert_eq!(record.ecn, 3, "a packet marked here leaves with CE");
            marked += 1;
        }
    }
    assert_eq!(
        marked, marks,
        "every CE mark the log records is on a captured departure"
    );

    let shown = tshark(&pcap.join("0-link-uplink-drops.pcapng"));
    assert_eq!(shown.len(), drops.len(), "one captured packet per drop");
    for (packet, record) in shown.iter().zip(&drops) {
        assert_eq!(packet.epoch_ns, wall(record));
        assert_eq!(
            packet.comment,
            format!(
                "dropped: {}; {}",
                record.detail_name(),
                sojourn_text(record.sojourn)
            )
        );
    }
    // The other direction has its files too (the host's few answers).
    assert!(pcap.join("0-link-downlink.pcapng").exists());
    assert!(pcap.join("0-link-downlink-drops.pcapng").exists());
    drop(scratch);
}
