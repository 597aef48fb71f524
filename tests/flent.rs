//! Flent inside emu, as docs/guide.md runs it: a short tcp_1up through
//! `delay 20 -- link 50mbit --queue dualpi2` with netserver on the host
//! (`--outside`), and Flent's data file checked against emu's link log.
//!
//! Needs Flent and irtt (Debian's `flent`, `irtt`) and netperf built with
//! `--enable-demo`, found in PATH or in /opt/netperf/bin, where
//! scripts/install-deps builds it in CI; without them the test says it
//! skipped.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::text;

/// Where docs/guide.md builds netperf, which Debian does not package.
const NETPERF_PREFIX: &str = "/opt/netperf";

/// PATH with netperf's prefix last, and the programs the test needs found
/// there (or the first one missing).
fn path_with_tools() -> Result<String, &'static str> {
    let path = format!(
        "{}:{NETPERF_PREFIX}/bin",
        std::env::var("PATH").unwrap_or_default()
    );
    let found = |program: &str| std::env::split_paths(&path).any(|d| d.join(program).is_file());
    match ["flent", "irtt", "netperf", "netserver", "ping"]
        .into_iter()
        .find(|p| !found(p))
    {
        Some(missing) => Err(missing),
        None => Ok(path),
    }
}

/// What Flent's data file (gzipped JSON) says of its netperf flow: the
/// bytes the receiver read, the segments TCP retransmitted, and its MSS.
struct NetperfCount {
    bytes_received: u64,
    retransmits: u64,
    mss: u64,
}

fn flent_count(data_file: &Path) -> NetperfCount {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(data_file)
        .output()
        .expect("gzip");
    let data: serde_json::Value = serde_json::from_slice(&out.stdout).expect("Flent's JSON");
    let meta = &data["metadata"]["SERIES_META"]["TCP upload"];
    let number = |key: &str| {
        meta[key]
            .as_u64()
            .or_else(|| meta[key].as_str().and_then(|s| s.parse().ok()))
            .unwrap_or_else(|| panic!("no {key} in Flent's series metadata: {meta:#}"))
    };
    NetperfCount {
        bytes_received: number("BYTES_RECVD"),
        retransmits: number("TCP_RETRANSMIT"),
        mss: number("TCP_MSS"),
    }
}

/// What the link's log saw of the data connection's uplink: the TCP
/// payload that left the link, and the segments the link dropped.
struct LinkCount {
    payload_departed: u64,
    dropped: u64,
}

/// IPv4 and TCP headers of a data segment from Linux with timestamps on
/// (its default): 20 + 20 + 12. A SYN (60 bytes, its options) and pure
/// ACKs (52) carry no payload.
const HEADERS: u64 = 52;
const SYN: u64 = 60;

fn link_count(log: &Path) -> LinkCount {
    let out = support::emu()
        .args(["log", "dump"])
        .arg(log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dump = text(&out.stdout);
    let rows: Vec<Vec<&str>> = dump
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    // The data connection: netperf's, not its control connection (12865).
    let data_flow = rows
        .iter()
        .find(|r| {
            r[2] == "uplink"
                && r[3] == "flow"
                && r[13].starts_with("tcp ")
                && !r[13].ends_with(":12865")
        })
        .map(|r| r[6].to_string())
        .unwrap_or_else(|| panic!("no data connection in the link's log:\n{dump:.2000}"));
    let data_flow = data_flow.as_str();
    let of_flow = |event: &'static str| {
        rows.iter()
            .filter(move |r| r[2] == "uplink" && r[3] == event && r[6] == data_flow)
            .map(|r| r[5].parse::<u64>().unwrap())
    };
    LinkCount {
        payload_departed: of_flow("depart")
            .filter(|b| *b > SYN)
            .map(|b| b - HEADERS)
            .sum(),
        dropped: of_flow("drop").count() as u64,
    }
}

fn data_file(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".flent.gz"))
        .unwrap_or_else(|| panic!("Flent wrote no data file in {}", dir.display()))
}

/// The bytes netperf's receiver read equal the payload the link passed,
/// but for retransmissions the link did not cause: each segment the link
/// dropped departs once, as its retransmission; a retransmission of a
/// segment that had left (a spurious one, or a tail-loss probe) departs
/// twice. So the log's payload is at least netperf's count, and above it
/// by at most those retransmissions' segments. (Measured: equal to the
/// byte, 106 retransmissions for 106 drops.)
#[test]
fn flents_byte_count_matches_the_link_log() {
    let Some(_serial) = support::start() else {
        return;
    };
    let path = match path_with_tools() {
        Ok(path) => path,
        Err(missing) => {
            eprintln!(
                "skipped: {missing} is not installed (Flent and irtt from Debian, netperf \
                 with --enable-demo in PATH or {NETPERF_PREFIX}/bin; see docs/guide.md)"
            );
            return;
        }
    };
    let dir = support::temp_dir("flent");
    let out = support::emu()
        .current_dir(&dir)
        .env("PATH", &path)
        .env_remove("EMU_BASE")
        .args(["--log", "log", "--outside", "netserver -D"])
        .args([
            "delay", "20", "--", "link", "50mbit", "--queue", "dualpi2", "--",
        ])
        .args(["flent", "tcp_1up", "-l", "3", "-H", "$EMU_BASE"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", text(&out.stdout));
    let flent = flent_count(&data_file(&dir));
    let link = link_count(&dir.join("log/1-link.emulog"));
    assert!(flent.bytes_received > 1_000_000, "{}", flent.bytes_received);
    eprintln!(
        "netperf received {} bytes; the link passed {} of payload; {} retransmissions, {} drops",
        flent.bytes_received, link.payload_departed, flent.retransmits, link.dropped
    );
    let spurious = flent.retransmits.saturating_sub(link.dropped);
    assert!(
        link.payload_departed >= flent.bytes_received
            && link.payload_departed - flent.bytes_received <= spurious * flent.mss,
        "the link passed {} bytes of payload, netperf received {} ({} retransmissions, {} drops at the link)",
        link.payload_departed,
        flent.bytes_received,
        flent.retransmits,
        link.dropped
    );
}
