//! Changes asked of a running link from outside, in virtual time: each
//! takes effect at its instant, all settings of one change together, each
//! logged as a change record there; a change the link cannot make is
//! refused before anything moves.

mod support;

use aqm::QueueSpec;
use emu_core::log::{Change, DropReason, LogSink, Record};
use emu_core::{Nanos, Rate};
use link::{Link, Server, Setting};
use support::{id, packet, TestLink};

const MS: Nanos = 1_000_000;

fn link(server: Server, queue: &str, log: LogSink) -> Link {
    TestLink {
        server,
        delay: 10 * MS,
        queue,
        loss: None,
        max_packet: 1500,
        dynamics: Default::default(),
        log,
    }
    .build()
}

/// Offers one 1500-byte packet every `every` ns for `count` packets from
/// `from`, running the model as a pump would; the departures' due times.
fn drive(link: &mut Link, from: Nanos, every: Nanos, count: u64) -> Vec<Nanos> {
    departures(link, from, every, count)
        .into_iter()
        .map(|d| d.1)
        .collect()
}

/// As [`drive`], each departure with the packet's number.
fn departures(link: &mut Link, from: Nanos, every: Nanos, count: u64) -> Vec<(u16, Nanos)> {
    let mut out = Vec::new();
    for k in 0..count {
        let at = from + k * every;
        while let Some(t) = link.next_event().filter(|t| *t < at) {
            link.advance(t);
            out.extend(std::iter::from_fn(|| link.pop_due(t)).map(|(p, due)| (id(&p), due)));
        }
        link.arrive(packet(1500, at, k as u16));
    }
    while let Some(t) = link.next_event() {
        link.advance(t);
        out.extend(std::iter::from_fn(|| link.pop_due(t)).map(|(p, due)| (id(&p), due)));
    }
    out
}

#[test]
fn rate_and_delay_change_together_at_the_instant_asked() {
    let (sink, mut records) = LogSink::in_memory(1 << 16);
    let mut link = link(
        Server::Rate(Rate::parse("12mbit").unwrap()),
        "droptail packets 100",
        sink,
    );
    let settings = vec![
        Setting::Rate(Rate::parse("6mbit").unwrap()),
        Setting::Delay(30 * MS),
    ];
    link.check_settings(100 * MS, &settings).unwrap();
    assert_eq!(link.steer(100 * MS, settings), 100 * MS);
    // One packet every 10 ms: before 100 ms each takes 1 ms and 10 ms of
    // delay; after, 2 ms and 30 ms.
    let due = drive(&mut link, 0, 10 * MS, 20);
    assert_eq!(due[0], 11 * MS);
    assert_eq!(due[9], 90 * MS + 11 * MS);
    assert_eq!(due[10], 100 * MS + 32 * MS);
    assert_eq!(due[19], 190 * MS + 32 * MS);
    let changes: Vec<(Nanos, Change, u64)> = std::iter::from_fn(|| records.pop().ok())
        .filter_map(|r: Record| r.change_kind().map(|c| (r.time, c, r.value())))
        .collect();
    assert_eq!(
        changes,
        [
            (100 * MS, Change::Rate, 6_000_000),
            (100 * MS, Change::Delay, 30 * MS)
        ]
    );
    let now = link.settings();
    assert_eq!(
        (now.rate_bps, now.delay_ns),
        (Some(6_000_000), Some(30 * MS))
    );
}

#[test]
fn a_lower_delay_never_lets_later_packets_overtake() {
    let mut link = link(
        Server::Rate(Rate::parse("12mbit").unwrap()),
        "droptail packets 100",
        LogSink::disabled(),
    );
    link.steer(5 * MS, vec![Setting::Delay(MS)]);
    let (order, due): (Vec<u16>, Vec<Nanos>) = departures(&mut link, 0, MS, 10).into_iter().unzip();
    assert_eq!(order, (0..10).collect::<Vec<u16>>());
    // The packet of 4 ms leaves the server at 5 ms with 10 ms to go: the
    // later ones, 1 ms from the line's end, wait for it.
    assert_eq!(due[4], 15 * MS);
    assert_eq!(due[5..], [15 * MS; 5]);
}

#[test]
fn a_queue_replaced_drops_what_it_held_and_one_changed_keeps_it() {
    let (sink, mut records) = LogSink::in_memory(1 << 16);
    let mut link = link(
        Server::Rate(Rate::parse("1mbit").unwrap()),
        "droptail packets 100",
        sink,
    );
    // 12 ms per packet; 20 arrive at once, so the queue holds 19.
    for k in 0..20 {
        link.arrive(packet(1500, 0, k));
    }
    let limit = QueueSpec::parse("droptail packets 5").unwrap();
    link.check_settings(MS, &[Setting::QueueParameters(limit.clone())])
        .unwrap();
    link.steer(MS, vec![Setting::QueueParameters(limit)]);
    link.advance(MS);
    assert_eq!(
        link.queue_occupancy().0,
        19,
        "kept, as pfifo's change keeps them"
    );
    assert_eq!(link.settings().queue, "droptail packets 5");
    link.steer(
        2 * MS,
        vec![Setting::QueueReplaced(QueueSpec::parse("pie").unwrap())],
    );
    link.advance(2 * MS);
    assert_eq!(link.queue_occupancy().0, 0);
    assert_eq!(link.counters().dropped_by(DropReason::Replaced), 19);
    assert!(link.accounting_holds());
    let changes: Vec<(Change, u64)> = std::iter::from_fn(|| records.pop().ok())
        .filter_map(|r: Record| r.change_kind().map(|c| (c, r.value())))
        .collect();
    assert_eq!(changes, [(Change::QueueParameters, 1), (Change::Queue, 1)]);
}

#[test]
fn a_change_the_link_cannot_make_is_refused_in_one_line() {
    let link = link(
        Server::Rate(Rate::parse("1mbit").unwrap()),
        "fq_codel",
        LogSink::disabled(),
    );
    let refused = link
        .check_settings(
            0,
            &[
                Setting::Rate(Rate::parse("2mbit").unwrap()),
                Setting::QueueParameters(QueueSpec::parse("fq_codel flows 16").unwrap()),
            ],
        )
        .unwrap_err();
    assert!(refused.contains("replace the queue"), "{refused}");
    assert!(!refused.contains('\n'));
    let refused = link.check_settings(0, &[Setting::Loss(1.5)]).unwrap_err();
    assert!(refused.contains("probability"), "{refused}");
    let trace = emu_core::trace::Trace::parse("1\n").unwrap();
    let traced = self::link(
        Server::Trace {
            trace: std::sync::Arc::new(trace),
            repeat: true,
        },
        "droptail packets 5",
        LogSink::disabled(),
    );
    let refused = traced
        .check_settings(0, &[Setting::Rate(Rate::parse("2mbit").unwrap())])
        .unwrap_err();
    assert!(refused.contains("trace"), "{refused}");
}

#[test]
fn loss_and_jitter_are_added_to_a_link_that_had_none() {
    let (sink, mut records) = LogSink::in_memory(1 << 16);
    let mut link = link(Server::Unlimited, "droptail packets 1000", sink);
    link.steer(
        0,
        vec![
            Setting::Loss(0.5),
            Setting::Jitter(2 * MS),
            Setting::Rate(Rate::parse("100mbit").unwrap()),
        ],
    );
    let due = drive(&mut link, 0, MS, 1000);
    let lost = link.counters().dropped_by(DropReason::Loss);
    assert!((400..600).contains(&lost), "{lost}");
    assert_eq!(due.len() as u64 + lost, 1000);
    let now = link.settings();
    assert_eq!(
        (now.loss, now.jitter_ns, now.rate_bps),
        (Some(0.5), 2 * MS, Some(100_000_000))
    );
    let kinds: Vec<Change> = std::iter::from_fn(|| records.pop().ok())
        .filter_map(|r: Record| r.change_kind())
        .collect();
    assert_eq!(kinds, [Change::Loss, Change::Jitter, Change::Rate]);
}

#[test]
fn a_queue_change_is_checked_against_the_queue_it_will_meet() {
    let mut link = link(
        Server::Rate(Rate::parse("1mbit").unwrap()),
        "droptail packets 100",
        LogSink::disabled(),
    );
    let codel = |text: &str| QueueSpec::parse(text).unwrap();
    let retune = [Setting::QueueParameters(codel("codel target 10ms"))];
    link.steer(10 * MS, vec![Setting::QueueReplaced(codel("codel"))]);
    assert!(
        link.check_settings(5 * MS, &retune).is_err(),
        "still droptail at 5 ms"
    );
    link.check_settings(20 * MS, &retune).unwrap();
    // Or replaced earlier in the same change.
    let both = [Setting::QueueReplaced(codel("codel")), retune[0].clone()];
    link.check_settings(0, &both).unwrap();
}
