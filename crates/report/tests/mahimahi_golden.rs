//! A small run of the link model in virtual time, logged in Mahimahi's
//! format, gives exactly the text Mahimahi's rules give (worked out by
//! hand below), and that text read back gives Mahimahi's figures.

use emu_core::log::{Direction, LogSink};
use emu_core::packet::build::ipv4_udp;
use emu_core::trace::Trace;
use emu_core::{Nanos, Packet};
use link::{Link, LinkConfig, Server};
use report::logs::mahimahi_writer::{write_log, Header};
use std::sync::Arc;

const MS: Nanos = 1_000_000;

#[test]
fn a_virtual_time_run_logs_exactly_what_mahimahi_would() {
    // Opportunities at 1, 1 and 3 ms, repeating every 3 ms.
    let trace = Arc::new(Trace::parse("1\n1\n3\n").unwrap());
    let (sink, mut records) = LogSink::in_memory(1024);
    let mut link = Link::new(
        LinkConfig {
            shell: 0,
            direction: Direction::Uplink,
            delay: 0,
            server: Server::Trace {
                trace: trace.clone(),
                repeat: true,
            },
            queue: aqm::build_queue("droptail packets 2").unwrap(),
            loss: None,
            max_packet: 1500,
            overhead: 0,
            dynamics: Default::default(),
        },
        0,
        sink,
    );
    let packet = |size: usize, at: Nanos| {
        Packet::new(
            ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], at as u16, 9, 0, size),
            at,
        )
    };
    let mut arrivals = vec![
        packet(1500, MS / 5),
        packet(1500, 3 * MS / 10),
        packet(1500, 4 * MS / 10), // the queue holds two: dropped
        packet(100, 5 * MS / 2),
    ]
    .into_iter()
    .peekable();
    let end = 7 * MS;
    loop {
        let next = match (arrivals.peek().map(|p| p.arrival), link.next_event()) {
            (Some(a), Some(e)) => a.min(e),
            (a, e) => match a.or(e) {
                Some(t) if t <= end => t,
                _ => break,
            },
        };
        if arrivals.peek().is_some_and(|p| p.arrival == next) {
            link.arrive(arrivals.next().unwrap());
        } else {
            link.advance(next);
        }
        while link.pop_due(next).is_some() {}
    }
    let mut logged = Vec::new();
    while let Ok(r) = records.pop() {
        logged.push(r);
    }
    let opportunities = trace.opportunities(0, true);
    let header = Header {
        link_name: "Uplink".into(),
        trace_path: "t.trace".into(),
        log_path: "up.log".into(),
        command_line: "mm-link t.trace t.trace --uplink-log=up.log".into(),
        queue: "droptail packets 2".into(),
        init_timestamp_ms: 1_000,
        base_timestamp_ms: 0,
        prefix: None,
    };
    let mut out = Vec::new();
    write_log(&mut out, &header, 0, logged, opportunities, end).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "# mahimahi mm-link (Uplink) [t.trace] > up.log\n\
         # command line: mm-link t.trace t.trace --uplink-log=up.log\n\
         # queue: droptail packets 2\n\
         # init timestamp: 1000\n\
         # base timestamp: 0\n\
         0 + 1504\n\
         0 + 1504\n\
         0 + 1504\n\
         0 d 1 1504\n\
         1 # 1504\n\
         1 - 1504 1\n\
         1 # 1504\n\
         1 - 1504 1\n\
         2 + 104\n\
         3 # 1504\n\
         3 - 104 1\n\
         4 # 1504\n\
         4 # 1504\n\
         6 # 1504\n\
         7 # 1504\n\
         7 # 1504\n"
    );

    // Read back, the text gives Mahimahi's own figures: 7 ms from the
    // first event to the last, 8 opportunities, 3112 bytes delivered,
    // delays [1, 1, 1], and signal delays 1 (sent at 0 ms), 2 (1 ms,
    // filled from the next) and 1 (2 ms): sorted [1, 1, 2], index 2.
    let (_, analysis, queued, end, error) =
        report::logs::mahimahi_reader::analyze(text.as_bytes(), report::Options::default());
    assert!(error.is_none());
    assert_eq!(queued, 0);
    let unmatched = report::analysis::events::Unmatched {
        in_flight: queued,
        entered_mid_path: 0,
    };
    let (summary, _) = analysis.finish(end, unmatched);
    assert_eq!((summary.path.arrivals, summary.path.delivered), (4, 3));
    assert_eq!(summary.path.drops.get("tail"), Some(&1));
    let m = summary.shells[0].mahimahi.clone().unwrap();
    assert_eq!(m.duration_s, 0.007);
    assert!((m.average_capacity_mbps - 8.0 * 1504.0 * 8.0 / 0.007 / 1e6).abs() < 1e-9);
    assert!((m.average_throughput_mbps - 3112.0 * 8.0 / 0.007 / 1e6).abs() < 1e-9);
    assert_eq!((m.queueing_delay_p95_ms, m.signal_delay_p95_ms), (1, 2));
}
