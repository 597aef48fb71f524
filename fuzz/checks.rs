//! The properties every fuzz target checks, shared by the cargo-fuzz
//! targets (`fuzz/fuzz_targets/`) and the plain test that replays the
//! committed corpus in `cargo test` (`tests/fuzz_corpus.rs`).
//!
//! Each check takes arbitrary bytes and must not panic, must not allocate
//! without bound, and must turn every rejection into an error that names
//! the input (its path, line or byte offset). Where an independent parser
//! exists (pnet for packets) the checks cross-check against it.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;

/// The targets, by name: the fuzz target, its corpus directory and the
/// replay test all use these names.
/// A check run on one input: panics on a failed property.
pub type Check = fn(&[u8]);

pub const TARGETS: [(&str, Check); 8] = [
    ("trace", trace),
    ("queue_spec", queue_spec),
    ("mahimahi_queue", mahimahi_queue),
    ("emu_log", emu_log),
    ("mahimahi_log", mahimahi_log),
    ("packet", packet),
    ("offload", offload),
    ("experiment", experiment),
];

/// A trace file (Mahimahi's or emu's format): parses or says which line is
/// wrong; what parses prints back to the same trace.
pub fn trace(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match emu_core::trace::Trace::parse(text) {
        Ok(trace) => {
            assert!(trace.period() > 0 && !trace.is_empty());
            let again =
                emu_core::trace::Trace::parse(&trace.to_emu_text()).expect("emu text reads back");
            assert_eq!(again, trace);
        }
        Err((line, message)) => {
            assert!(!message.is_empty());
            if let Some(line) = line {
                assert!(line >= 1 && line <= text.split('\n').count());
            }
        }
    }
}

/// Packets offered to a queue built from fuzzed text, to reach the
/// constructors' and the disciplines' arithmetic with extreme parameters.
fn exercise(queue: &mut dyn aqm::Queue) {
    let mut outcome = aqm::Outcome::default();
    let mut now = 0;
    for i in 0..64u64 {
        let size = [60, 1500, 40, 9000][(i % 4) as usize];
        let data = emu_core::packet::build::ipv4_udp(
            [10, 0, 0, (i % 3) as u8],
            [10, 0, 1, 1],
            1000 + (i % 5) as u16,
            80,
            (i % 4) as u8,
            size,
        );
        now += 100_000 * (i % 7);
        queue.enqueue(emu_core::Packet::new(data, now), now, &mut outcome);
        if i % 3 == 0 {
            let at = queue.next_ready().unwrap_or(now).max(now);
            queue.dequeue(at, &mut outcome);
        }
    }
    while queue.dequeue(now, &mut outcome).is_some() {
        now += 1_000_000;
    }
}

/// A queue specification in tc's syntax.
pub fn queue_spec(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match aqm::QueueSpec::parse(text) {
        Ok(spec) => exercise(spec.build().as_mut()),
        Err(e) => assert!(!e.0.is_empty()),
    }
}

/// Mahimahi's queue type and arguments: the first line is the type, the
/// rest the `NAME=NUMBER, ...` arguments.
pub fn mahimahi_queue(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (kind, args) = match text.split_once('\n') {
        Some((kind, args)) => (Some(kind), Some(args)),
        None => (Some(text), None),
    };
    match aqm::spec::mahimahi::parse(kind, args) {
        Ok(queue) => {
            assert_eq!(aqm::QueueSpec::parse(&queue.emu_text).unwrap(), queue.spec);
            exercise(queue.spec.build().as_mut());
        }
        Err(e) => assert!(!e.0.is_empty()),
    }
}

/// A scratch file for the readers that take a path, in memory-backed
/// /dev/shm when it exists; one per process, so parallel fuzzing jobs do
/// not share it.
fn scratch(data: &[u8], name: &str) -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("emu-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(data))
        .unwrap();
    path
}

/// An emu binary log: the reader, `emu log dump` and `emu report`'s loader
/// all read it or fail naming the file and the byte.
pub fn emu_log(data: &[u8]) {
    let path = scratch(data, "fuzz.emulog");
    let shown = path.display().to_string();
    match emu_core::log::LogReader::open(&path) {
        Ok(reader) => {
            let body = data.len() as u64;
            for record in reader {
                if let Err(e) = record {
                    assert!(e.offset <= body);
                    assert!(e.to_string().contains(&shown), "{e}");
                    break;
                }
            }
            let reader = emu_core::log::LogReader::open(&path).unwrap();
            let _ = emu_core::log::text::dump(
                reader,
                emu_core::log::text::DumpFormat::JsonLines,
                &mut std::io::sink(),
            );
        }
        Err(e) => assert!(e.to_string().contains(&shown), "{e}"),
    }
    match report::load(&path, &bounded_report_options()) {
        Ok(runs) => {
            for run in runs {
                for error in &run.summary.errors {
                    assert!(error.contains(&shown), "{error}");
                }
            }
        }
        Err(e) => assert!(e.contains(&shown), "{e}"),
    }
    let _ = std::fs::remove_file(&path);
}

/// The report's options for a fuzzed log: every record is read and
/// checked as `emu report` would, but the time series stop after
/// [`FUZZ_BINS`] bins. A report allows up to `report::analysis::direction::MAX_BINS`
/// (2^20) bins per series and flow, so two records a day apart would have
/// one input allocate and fill millions of bins, and the fuzzer time out on
/// work that says nothing new about the parser; the horizon itself has its
/// own test (crates/report/tests/hostile_logs.rs).
fn bounded_report_options() -> report::Options {
    let options = report::Options::default();
    report::Options {
        to: Some(options.bin * FUZZ_BINS),
        ..options
    }
}

/// Bins per series in a fuzzed report: filling the queue's series bin by
/// bin was most of a fuzzed log's cost at 4096 bins (575 inputs a second,
/// 2544 at 256), and 256 bins of 10 ms still span the inputs' times.
const FUZZ_BINS: u64 = 256;

/// A Mahimahi link log, read as `emu report` reads it (a file that is not
/// an emu log is taken as Mahimahi's).
pub fn mahimahi_log(data: &[u8]) {
    if data.starts_with(b"EMULOG") {
        return; // that is the emu_log target's input
    }
    let path = scratch(data, "fuzz-mahimahi.log");
    let shown = path.display().to_string();
    match report::load(&path, &bounded_report_options()) {
        Ok(runs) => {
            for run in runs {
                for error in &run.summary.errors {
                    assert!(error.contains(&shown), "{error}");
                }
            }
        }
        Err(e) => assert!(e.contains(&shown), "{e}"),
    }
    let _ = std::fs::remove_file(&path);
}

/// The transport header as an independent reading with pnet's views finds
/// it: walks IPv4's header length and IPv6's extension chain (hop-by-hop,
/// routing, fragment, destination options, AH; RFC 8200 §4 and RFC 4302).
fn pnet_transport(data: &[u8]) -> Option<(u8, usize)> {
    use pnet_packet::ipv4::Ipv4Packet;
    use pnet_packet::ipv6::{ExtensionPacket, FragmentPacket, Ipv6Packet};
    match data.first()? >> 4 {
        4 => {
            let ip = Ipv4Packet::new(data)?;
            let ihl = ip.get_header_length() as usize * 4;
            (ihl >= 20 && ihl <= data.len() && ip.get_fragment_offset() == 0)
                .then_some((ip.get_next_level_protocol().0, ihl))
        }
        6 => {
            let ip = Ipv6Packet::new(data)?;
            let mut next = ip.get_next_header().0;
            let mut offset = 40;
            for _ in 0..8 {
                let rest = data.get(offset..).unwrap_or(&[]);
                match next {
                    0 | 43 | 60 => {
                        let ext = ExtensionPacket::new(rest)?;
                        let len = (ext.get_hdr_ext_len() as usize + 1) * 8;
                        (rest.len() >= len).then_some(())?;
                        next = ext.get_next_header().0;
                        offset += len;
                    }
                    44 => {
                        let fragment = FragmentPacket::new(rest)?;
                        next = fragment.get_next_header().0;
                        offset += 8;
                    }
                    51 => {
                        // pnet has no AH view; its layout is the extension
                        // header's with the length in 4-octet units, minus 2.
                        let ext = ExtensionPacket::new(rest)?;
                        let len = (ext.get_hdr_ext_len() as usize + 2) * 4;
                        (rest.len() >= len).then_some(())?;
                        next = ext.get_next_header().0;
                        offset += len;
                    }
                    _ => return Some((next, offset)),
                }
            }
            None
        }
        _ => None,
    }
}

/// The packet views on arbitrary bytes, cross-checked against pnet.
pub fn packet(data: &[u8]) {
    use emu_core::packet as p;
    use pnet_packet::ipv4::{self, Ipv4Packet};
    use pnet_packet::ipv6::Ipv6Packet;
    use pnet_packet::tcp::TcpPacket;

    let version = p::ip_version(data);
    let transport = p::transport(data);
    let _ = (
        p::flow_hash(data),
        p::host_hashes(data),
        p::fingerprint(data),
    );
    assert_eq!(p::fingerprint(data), p::fingerprint(data));
    match version {
        Some(4) => {
            let ip = Ipv4Packet::new(data).expect("pnet reads 20 bytes as IPv4");
            assert_eq!(ip.get_version(), 4);
            assert_eq!(p::ecn(data).map(|e| e as u8), Some(ip.get_ecn()));
            assert_eq!(p::dscp(data), Some(ip.get_dscp()));
        }
        Some(6) => {
            let ip = Ipv6Packet::new(data).expect("pnet reads 40 bytes as IPv6");
            assert_eq!(ip.get_version(), 6);
            let tc = ip.get_traffic_class();
            assert_eq!(p::ecn(data).map(|e| e as u8), Some(tc & 3));
            assert_eq!(p::dscp(data), Some(tc >> 2));
        }
        Some(other) => panic!("version {other}"),
        None => {
            assert!(p::ecn(data).is_none() && p::dscp(data).is_none());
            assert!(transport.is_none());
        }
    }
    if version.is_some() {
        assert_eq!(transport, pnet_transport(data), "transport of {data:02x?}");
    }
    if let Some((offset, length)) = p::tcp_header(data) {
        let tcp = TcpPacket::new(&data[offset..]).expect("pnet reads the TCP header");
        assert_eq!(tcp.get_data_offset() as usize * 4, length);
        assert!(offset + length <= data.len());
    }
    // Rewriting ECN and DSCP: only IP packets change; for IPv4 a valid
    // header checksum stays valid (RFC 1624), as pnet recomputes it.
    let mut copy = data.to_vec();
    let checksum_valid = version == Some(4) && {
        let ip = Ipv4Packet::new(data).unwrap();
        let ihl = ip.get_header_length() as usize * 4;
        ihl >= 20 && ihl <= data.len() && ipv4::checksum(&ip) == ip.get_checksum()
    };
    let changed = p::set_ecn(&mut copy, emu_core::Ecn::Ce);
    assert_eq!(changed, version.is_some());
    let changed = p::set_dscp(&mut copy, 0x2e);
    assert_eq!(changed, version.is_some());
    if version.is_some() {
        assert_eq!(p::ecn(&copy), Some(emu_core::Ecn::Ce));
        assert_eq!(p::dscp(&copy), Some(0x2e));
        assert_eq!(p::transport(&copy), transport, "the rewrite moved nothing");
    } else {
        assert_eq!(copy, data, "a packet that is not IP is left alone");
    }
    if checksum_valid {
        let ip = Ipv4Packet::new(&copy).unwrap();
        assert_eq!(
            ipv4::checksum(&ip),
            ip.get_checksum(),
            "incremental checksum of {data:02x?}"
        );
    }
}

/// One offload read (virtio-net header and packet): cut into packets that
/// each fit an IP length field, or refused with a reason; runs that the
/// merger accepts merge and cut back into the same packets.
pub fn offload(data: &[u8]) {
    use emu_core::offload::{continues_run, merge_run, segment};
    let mut out = Vec::new();
    if segment(data, &mut out).is_err() {
        assert!(out.is_empty(), "nothing is half-delivered");
        return;
    }
    let total: usize = out.iter().map(Vec::len).sum();
    // Headers repeat per segment: at most 60 + 60 bytes each, and no more
    // segments than payload bytes (one at least).
    assert!(
        total <= data.len() + out.len() * 120,
        "{total} from {}",
        data.len()
    );
    for packet in &out {
        packet_quiet(packet);
    }
    // Merge the longest run from the first packet and cut it again.
    let mut end = 1;
    while end < out.len() && continues_run(&out[0], &out[end - 1], &out[end]) {
        end += 1;
    }
    if end >= 2 {
        let mut merged = Vec::new();
        merge_run(out[..end].iter().map(Vec::as_slice), &mut merged);
        let mut again = Vec::new();
        segment(&merged, &mut again).expect("a merged run cuts again");
        assert_eq!(again.len(), end);
        for (a, b) in again.iter().zip(&out[..end]) {
            // Same headers but for checksums and IDs, same payload.
            assert_eq!(a.len(), b.len());
        }
    }
}

/// The views on a segment, without the cross-checks' assertions on
/// rewriting (already covered by the packet target).
fn packet_quiet(data: &[u8]) {
    use emu_core::packet as p;
    let _ = (p::transport(data), p::flow_hash(data), p::fingerprint(data));
    let _ = p::tcp_header(data);
}

/// An experiment file (TOML, with sweeps): every cell of its grid is read
/// and planned (against a fixed list of congestion controls, so the check
/// does not depend on the kernel), or the file is refused with an error
/// that names it. A grid is bounded, so no input plans without end.
pub fn experiment(data: &[u8]) {
    use experiment::file::{self, CongestionControls, Source};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = "fuzz.toml";
    let named = |e: &experiment::file::ExperimentError| {
        let message = e.to_string();
        assert!(
            message.contains(file) || message.contains("--set"),
            "an error that names no input: {message}"
        );
    };
    let grid = match experiment::file::sweep::Grid::new(file, text, &[]) {
        Ok(grid) => grid,
        Err(e) => return named(&e),
    };
    let controls = CongestionControls {
        available: vec!["reno".into(), "cubic".into(), "bbr".into()],
        allowed: vec!["reno".into(), "cubic".into()],
    };
    // The first cells: planning every cell of a large grid adds nothing
    // the first few do not reach.
    for index in 0..grid.len().min(4) {
        let cell = grid.cell(index);
        let source = Source {
            file,
            text: &cell.text,
        };
        match file::parse(&source) {
            Ok(experiment) => {
                // Trace and wrapper paths resolve under a directory that
                // does not exist, so a fuzzed path reads nothing real.
                let base = std::path::Path::new("/nonexistent-emu-fuzz");
                let run_first = experiment::run::wrappers::run_first;
                if let Err(e) =
                    file::plan(&experiment, &source, "fuzz", base, &controls, &run_first)
                {
                    named(&e);
                }
            }
            Err(e) => named(&e),
        }
    }
}
