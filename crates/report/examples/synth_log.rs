//! Writes a synthetic emu log for measuring the report at scale:
//!
//!     cargo run --release -p report --example synth_log -- DIR RECORDS [FLOWS]
//!
//! One link shell at 1 Gbit/s carrying FLOWS bulk flows (default 100) of
//! 1500-byte packets, each packet logged as arrive, enqueue and depart
//! (RECORDS / 3 packets), with a queue whose delay swings between 0 and
//! 20 ms and one CE mark in a hundred packets: about 400 s of traffic per
//! 10^8 records.

use emu_core::log::{write_header, Direction, Event, LogHeader, Record, RECORD_SIZE};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(records)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: synth_log DIR RECORDS [FLOWS]");
        std::process::exit(2);
    };
    let flows: u64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(100);
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("creating the directory");
    let header = LogHeader {
        shell: 0,
        description: "link 1gbit".into(),
        monotonic_origin_ns: 0,
        realtime_origin_ns: 0,
        rate_bps: Some([Some(1_000_000_000), Some(1_000_000_000)]),
        command_line: "synth_log".into(),
        traces: None,
        ..LogHeader::default()
    };
    let file = std::fs::File::create(dir.join("0-link.emulog")).expect("creating the log");
    let mut out = BufWriter::with_capacity(1 << 22, file);
    write_header(&mut out, &header).expect("writing");
    // 1500 bytes at 1 Gbit/s: one packet every 12 us. Departures lag
    // arrivals by a delay that ramps up and down over 2 s; records are
    // written in time order through a small reorder window.
    let gap = 12_000u64;
    let packets = records / 3;
    let mut pending: std::collections::VecDeque<Record> = std::collections::VecDeque::new();
    let mut buffer = [0u8; RECORD_SIZE];
    let mut emit = |r: &Record, out: &mut BufWriter<std::fs::File>| {
        r.encode(&mut buffer);
        out.write_all(&buffer).expect("writing");
    };
    for k in 0..packets {
        let t = k * gap;
        let phase = (t / 1_000_000) % 2000;
        let delay = if phase < 1000 { phase } else { 2000 - phase } * 20_000;
        let flow = (k % flows) as u32;
        let record = |time, event, detail| Record {
            time,
            sojourn: delay,
            flow,
            fingerprint: k as u32,
            bytes: 1500,
            queue_bytes: (delay / gap * 1500) as u32,
            queue_packets: (delay / gap) as u32,
            shell: 0,
            direction: Direction::Uplink,
            event,
            detail,
            ecn: 2,
        };
        while pending.front().is_some_and(|r| r.time <= t) {
            emit(&pending.pop_front().unwrap(), &mut out);
        }
        emit(&record(t, Event::Arrive, 0), &mut out);
        emit(&record(t, Event::Enqueue, 0), &mut out);
        let depart = record(t + delay, Event::Depart, 0);
        // Departures leave in order: the delay changes by at most 20 ns a
        // packet, slower than the 12 us between packets.
        pending.push_back(depart);
        if k % 100 == 0 {
            emit(&record(t, Event::Mark, 16), &mut out);
        }
    }
    for r in pending {
        emit(&r, &mut out);
    }
    out.flush().expect("writing");
}
