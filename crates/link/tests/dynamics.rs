//! Path dynamics through the whole link model, in virtual time: delay
//! schedules switching at the exact nanosecond, FIFO order under jitter,
//! rate steps and outages in the service, duplication and corruption in the
//! accounting, and change records in the log.

mod support;

use emu_core::log::{Change, Event, LogSink, Record};
use emu_core::{Nanos, Packet, Rate};
use link::{
    DelayDynamics, Distribution, Dynamics, JitterSpec, Link, Loss, Outages, Pattern, Schedule,
    Server,
};
use support::{id, packet, TestLink};

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

fn make(
    server: Server,
    delay: Nanos,
    queue: &str,
    loss: Option<Loss>,
    dynamics: Dynamics,
    log: LogSink,
) -> Link {
    TestLink {
        server,
        delay,
        queue,
        loss,
        max_packet: 1500,
        dynamics,
        log,
    }
    .build()
}

fn delay_schedule(schedule: Schedule) -> Dynamics {
    Dynamics {
        delay: DelayDynamics {
            schedule: Some(schedule),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Runs the model like a pump that wakes exactly on time, checking the
/// accounting at every step; returns (departure time, id) of every packet.
fn run(link: &mut Link, arrivals: Vec<Packet>) -> Vec<(Nanos, u16)> {
    let mut out = Vec::new();
    let mut arrivals = arrivals.into_iter().peekable();
    loop {
        let now = match (arrivals.peek().map(|p| p.arrival), link.next_event()) {
            (Some(a), Some(e)) => a.min(e),
            (a, e) => match a.or(e) {
                Some(t) => t,
                None => break,
            },
        };
        link.advance(now);
        while let Some((p, due)) = link.pop_due(now) {
            out.push((due, id(&p)));
        }
        while arrivals.peek().is_some_and(|p| p.arrival == now) {
            link.arrive(arrivals.next().unwrap());
        }
        while let Some((p, due)) = link.pop_due(now) {
            out.push((due, id(&p)));
        }
        let c = link.counters();
        assert_eq!(
            c.arrived + c.duplicated,
            c.delivered + c.dropped_total() + link.packets_inside(),
            "read + duplicated = delivered + dropped + queued"
        );
        assert!(link.accounting_holds(), "the link's own statement agrees");
    }
    out
}

#[test]
fn a_square_wave_delay_switches_at_the_exact_nanosecond() {
    let square = Schedule::square(40 * MS, 190 * MS, 2 * S, 0.5);
    let mut link = make(
        Server::Unlimited,
        0,
        "infinite",
        None,
        delay_schedule(square.clone()),
        LogSink::disabled(),
    );
    let sent = [
        S - 1,
        S,
        2 * S - 1,
        2 * S,
        2 * S + 200 * MS,
        3 * S - 1,
        3 * S,
    ];
    let arrivals = sent
        .iter()
        .enumerate()
        .map(|(i, &t)| packet(100, t, i as u16))
        .collect();
    let out = run(&mut link, arrivals);
    assert_eq!(
        out,
        vec![
            (S - 1 + 40 * MS, 0),
            (S + 190 * MS, 1),
            (2 * S - 1 + 190 * MS, 2),
            // The delay fell to 40 ms at 2 s, but this packet may not
            // overtake the one sent 1 ns earlier: it leaves right after it.
            (2 * S - 1 + 190 * MS, 3),
            (2 * S + 240 * MS, 4),
            (3 * S - 1 + 40 * MS, 5),
            (3 * S + 190 * MS, 6),
        ]
    );
    // With reordering allowed, the packet sent at the fall overtakes.
    let mut link = make(
        Server::Unlimited,
        0,
        "infinite",
        None,
        Dynamics {
            delay: DelayDynamics {
                schedule: Some(square),
                reorder: true,
                ..Default::default()
            },
            ..Default::default()
        },
        LogSink::disabled(),
    );
    let out = run(
        &mut link,
        vec![packet(100, 2 * S - 1, 0), packet(100, 2 * S, 1)],
    );
    assert_eq!(out, vec![(2 * S + 40 * MS, 1), (2 * S - 1 + 190 * MS, 0)]);
}

#[test]
fn jitter_keeps_fifo_order_unless_reordering_is_asked() {
    for reorder in [false, true] {
        let dynamics = Dynamics {
            delay: DelayDynamics {
                jitter: Some(JitterSpec {
                    sigma: 5 * MS,
                    correlation: 0.25,
                    distribution: Distribution::Normal,
                }),
                reorder,
                ..Default::default()
            },
            seed: 7,
            ..Default::default()
        };
        let mut link = make(
            Server::Rate(Rate::parse("100mbit").unwrap()),
            40 * MS,
            "infinite",
            None,
            dynamics,
            LogSink::disabled(),
        );
        let arrivals = (0..5000)
            .map(|i| packet(1000, i * 200 * US, i as u16))
            .collect();
        let out = run(&mut link, arrivals);
        assert_eq!(out.len(), 5000);
        let ids_in_order = out.windows(2).all(|w| w[0].1 < w[1].1);
        assert!(
            out.windows(2).all(|w| w[0].0 <= w[1].0),
            "leave in due order"
        );
        assert_eq!(ids_in_order, !reorder, "reordered only when asked");
        // Delays spread around 40 ms (+ 80 µs of serialization) when they
        // may cross; in FIFO order a packet waits for any slower one ahead,
        // which lengthens the mean.
        let mean = out
            .iter()
            .map(|&(due, i)| (due - i as Nanos * 200 * US) as f64)
            .sum::<f64>()
            / 5000.0;
        if reorder {
            assert!((mean - 40.08e6).abs() < 0.3e6, "{mean}");
        } else {
            assert!(mean > 41e6, "{mean}");
        }
    }
}

#[test]
fn netems_slots_release_bursts_of_at_most_the_packet_budget() {
    // The bakeoff's Wi-Fi path: `delay 200us slot 800us 10ms packets 42`,
    // here behind 50 Mbit/s, offered 40 Mbit/s of 1000-byte packets.
    let dynamics = Dynamics {
        delay: DelayDynamics {
            slot: Some(link::SlotSpec::parse("800us 10ms packets 42").unwrap()),
            ..Default::default()
        },
        seed: 3,
        ..Default::default()
    };
    let mut link = make(
        Server::Rate(Rate::parse("50mbit").unwrap()),
        200 * US,
        "infinite",
        None,
        dynamics,
        LogSink::disabled(),
    );
    let arrivals = (0..2000)
        .map(|i| packet(1000, i * 200 * US, i as u16))
        .collect();
    let out = run(&mut link, arrivals);
    assert_eq!(out.len(), 2000, "a slot drops nothing");
    assert!(out.windows(2).all(|w| w[0].1 < w[1].1), "in order");
    for &(due, i) in &out {
        // 160 µs of serialization and the 200 µs delay at least.
        assert!(due >= i as Nanos * 200 * US + 360 * US, "{i} left at {due}");
    }
    let mut bursts: Vec<(Nanos, usize)> = Vec::new();
    for &(due, _) in &out {
        match bursts.last_mut() {
            Some((t, n)) if *t == due => *n += 1,
            _ => bursts.push((due, 1)),
        }
    }
    assert!(bursts.iter().all(|b| b.1 <= 42), "at most 42 a slot");
    assert!(
        bursts.windows(2).all(|w| w[1].0 - w[0].0 >= 800 * US),
        "slots open at least 800 µs apart"
    );
    let mean = 2000.0 / bursts.len() as f64;
    // A slot opens 0.8-10 ms (5.4 ms on average) after the last: about 27
    // packets arrive between two, and any packet due after one opens waits
    // for the next.
    assert!(mean > 10.0, "{mean} packets a slot");
}

/// Bytes delivered in [from, to) from a list of departures of equal packets.
fn delivered_in(out: &[(Nanos, u16)], from: Nanos, to: Nanos, size: u64) -> u64 {
    out.iter().filter(|(t, _)| *t >= from && *t < to).count() as u64 * size
}

/// Offers `count` 1500-byte packets every 100 µs (120 Mbit/s, so a
/// slower link is always busy) and returns the deliveries.
fn saturate(link: &mut Link, count: u64) -> Vec<(Nanos, u16)> {
    let arrivals = (0..count)
        .map(|i| packet(1500, i * 100 * US, i as u16))
        .collect();
    run(link, arrivals)
}

/// The rate in bit/s of the 1500-byte deliveries in [from, to).
fn rate_in(out: &[(Nanos, u16)], from: Nanos, to: Nanos) -> f64 {
    delivered_in(out, from, to, 1500) as f64 * 8.0 / ((to - from) as f64 / 1e9)
}

#[test]
fn a_rate_step_changes_the_service_rate_at_its_instant() {
    let schedule = Schedule::steps(
        vec![(0, 100_000_000), (S, 20_000_000), (2 * S, 100_000_000)],
        false,
        false,
    );
    let mut link = make(
        Server::Schedule(schedule),
        0,
        "infinite",
        None,
        Dynamics::default(),
        LogSink::disabled(),
    );
    let out = saturate(&mut link, 30_000);
    let rate = |from, to| rate_in(&out, from, to);
    assert!((rate(100 * MS, S) / 100e6 - 1.0).abs() < 0.01);
    assert!((rate(S + MS, 2 * S) / 20e6 - 1.0).abs() < 0.01);
    assert!((rate(2 * S + MS, 2 * S + 500 * MS) / 100e6 - 1.0).abs() < 0.01);
    // The last packet finished before the step took 120 µs; the first one
    // served wholly after it takes 600 µs.
    let gaps: Vec<Nanos> = out.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let at_step = out.iter().position(|(t, _)| *t > S).unwrap();
    assert_eq!(gaps[at_step - 2], 120 * US);
    assert_eq!(gaps[at_step], 600 * US);
}

#[test]
fn an_outage_holds_the_queue_and_its_tail_drops_count() {
    // 100 Mbit/s, 10 ms, down from 1 s for 500 ms.
    let outage_link = |queue: &str| {
        let dynamics = Dynamics {
            outages: Some(Outages::list(vec![(S, 500 * MS)]).unwrap()),
            ..Default::default()
        };
        make(
            Server::Rate(Rate::parse("100mbit").unwrap()),
            10 * MS,
            queue,
            None,
            dynamics,
            LogSink::disabled(),
        )
    };
    let mut link = outage_link("droptail packets 1000");
    // 1500 bytes every ms (12 Mbit/s): in 500 ms, 500 packets queue.
    let arrivals = (0..2000).map(|i| packet(1500, i * MS, i as u16)).collect();
    let out = run(&mut link, arrivals);
    let during = out
        .iter()
        .filter(|(t, _)| *t > S + 10 * MS + 120 * US && *t < S + 510 * MS)
        .count();
    assert_eq!(during, 0, "nothing leaves while the link is down");
    assert_eq!(out.len(), 2000, "a queue of 1000 holds the backlog");
    // The backlog drains at line rate right after the outage.
    let after = out
        .iter()
        .filter(|(t, _)| *t >= S + 510 * MS)
        .take(400)
        .collect::<Vec<_>>();
    assert_eq!(after[1].0 - after[0].0, 120 * US);
    // With a short queue, the outage overflows it: tail drops, counted.
    let mut link = outage_link("droptail packets 100");
    let arrivals = (0..2000).map(|i| packet(1500, i * MS, i as u16)).collect();
    let out = run(&mut link, arrivals);
    let dropped = link.counters().dropped_total();
    assert_eq!(out.len() as u64 + dropped, 2000);
    assert!((395..=401).contains(&dropped), "{dropped}");
}

#[test]
fn duplicates_and_corruption_are_counted_and_logged() {
    let (sink, mut records) = LogSink::in_memory(1 << 20);
    let dynamics = Dynamics {
        duplicate: 0.1,
        corrupt: 0.05,
        seed: 3,
        ..Default::default()
    };
    let mut link = make(
        Server::Rate(Rate::parse("10mbit").unwrap()),
        5 * MS,
        "droptail packets 20",
        Some(Loss::with_pattern(
            Pattern::GilbertElliott {
                p: 0.01,
                r: 0.3,
                bad_loss: 1.0,
                good_loss: 0.0,
            },
            3,
            0,
        )),
        dynamics,
        sink,
    );
    // Bursts that overflow the 20-packet queue now and then.
    let arrivals = (0..20_000)
        .map(|i| packet(1200, (i / 30) * 30 * MS + (i % 30) * 100 * US, i as u16))
        .collect();
    let out = run(&mut link, arrivals);
    let c = link.counters().clone();
    assert_eq!(c.delivered, out.len() as u64);
    assert_eq!(link.packets_inside(), 0);
    assert_eq!(c.arrived + c.duplicated, c.delivered + c.dropped_total());
    assert!((c.duplicated as f64 / 20_000.0 - 0.1 * (1.0 - 0.032)).abs() < 0.01);
    assert!(c.dropped_total() > c.dropped_by(emu_core::log::DropReason::Loss));
    let mut log: Vec<Record> = Vec::new();
    while let Ok(r) = records.pop() {
        log.push(r);
    }
    let count = |e: Event| log.iter().filter(|r| r.event == e).count() as u64;
    assert_eq!(count(Event::Duplicate), c.duplicated);
    assert_eq!(count(Event::Corrupt), c.corrupted);
    assert_eq!(count(Event::Depart), c.delivered);
    assert_eq!(
        count(Event::Enqueue) + c.dropped_by(emu_core::log::DropReason::Tail),
        c.arrived + c.duplicated - c.dropped_by(emu_core::log::DropReason::Loss)
    );
    // Every Gilbert-Elliott state change is a change record.
    let states: Vec<u64> = log
        .iter()
        .filter(|r| r.change_kind() == Some(Change::LossState))
        .map(|r| r.value())
        .collect();
    assert!(states.len() > 100);
    assert!(
        states.windows(2).all(|w| w[0] != w[1]),
        "alternating 2, 1, 2, …"
    );
    assert_eq!(states[0], 2);
}

#[test]
fn parameter_changes_are_logged_at_their_instants() {
    let (sink, mut records) = LogSink::in_memory(1 << 16);
    let dynamics = Dynamics {
        delay: DelayDynamics {
            schedule: Some(Schedule::square(40 * MS, 190 * MS, 2 * S, 0.5)),
            ..Default::default()
        },
        outages: Some(Outages::list(vec![(3 * S, 2 * S)]).unwrap()),
        ..Default::default()
    };
    let schedule = Schedule::steps(vec![(0, 100_000_000), (S + 1, 20_000_000)], false, false);
    let mut link = make(
        Server::Schedule(schedule),
        0,
        "infinite",
        None,
        dynamics,
        sink,
    );
    link.advance(2 * S + 500 * MS);
    link.advance(6 * S);
    let mut changes = Vec::new();
    while let Ok(r) = records.pop() {
        changes.push((r.time, r.change_kind().unwrap(), r.value()));
    }
    assert_eq!(
        changes,
        vec![
            (0, Change::Rate, 100_000_000),
            (0, Change::Delay, 40 * MS),
            (S, Change::Delay, 190 * MS),
            (S + 1, Change::Rate, 20_000_000),
            (2 * S, Change::Delay, 40 * MS),
            (3 * S, Change::Delay, 190 * MS),
            (3 * S, Change::OutageStart, 2 * S),
            (4 * S, Change::Delay, 40 * MS),
            (5 * S, Change::Delay, 190 * MS),
            (5 * S, Change::OutageEnd, 0),
            (6 * S, Change::Delay, 40 * MS),
        ]
    );
}

#[test]
fn trace_opportunities_during_an_outage_are_lost() {
    let trace = emu_core::trace::Trace::parse("#emu-trace us\n1000\n").unwrap();
    let mut link = make(
        Server::Trace {
            trace: std::sync::Arc::new(trace),
            repeat: true,
        },
        0,
        "infinite",
        None,
        Dynamics {
            outages: Some(Outages::list(vec![(10 * MS, 5 * MS)]).unwrap()),
            ..Default::default()
        },
        LogSink::disabled(),
    );
    // One 1500-byte opportunity per ms; 30 packets at once.
    let arrivals = (0..30).map(|i| packet(1500, 0, i as u16)).collect();
    let out = run(&mut link, arrivals);
    let times: Vec<Nanos> = out.iter().map(|o| o.0).collect();
    assert_eq!(times[8], 9 * MS);
    assert_eq!(
        times[9],
        15 * MS,
        "the opportunities at 10 to 14 ms are lost"
    );
    assert_eq!(times[10], 16 * MS);
}

/// `tc qdisc replace`'s rule: at a queue step the old queue's packets are
/// dropped (reason `replaced`, logged at the step's instant), the packet
/// on the wire is kept, and later packets meet the new queue.
#[test]
fn a_queue_step_drops_what_the_old_queue_holds_and_the_new_one_takes_over() {
    let (sink, mut records) = LogSink::in_memory(1 << 16);
    let dynamics = Dynamics {
        queue_steps: vec![link::QueueStep {
            at: 20 * MS,
            queue: aqm::QueueSpec::parse("pie noecn").unwrap(),
        }],
        ..Default::default()
    };
    // 10 Mbit/s: a 1000-byte packet takes 0.8 ms; 100 of them at 0.
    let mut link = make(
        Server::Rate(Rate::parse("10mbit").unwrap()),
        0,
        "droptail packets 1000",
        None,
        dynamics,
        sink,
    );
    let mut arrivals: Vec<Packet> = (0..100).map(|i| packet(1000, 0, i)).collect();
    arrivals.push(packet(1000, 30 * MS, 100));
    let out = run(&mut link, arrivals);
    // Served by 20 ms: 25 packets, and the 26th on the wire until 20.8 ms.
    let before: Vec<u16> = out.iter().map(|o| o.1).filter(|i| *i < 100).collect();
    assert_eq!(before, (0..26).collect::<Vec<u16>>());
    assert_eq!(
        out.last(),
        Some(&(30 * MS + 800 * US, 100)),
        "the new queue serves"
    );
    let c = link.counters();
    assert_eq!(c.dropped_by(emu_core::log::DropReason::Replaced), 74);
    assert!(
        link.queue_description().contains("pie"),
        "{}",
        link.queue_description()
    );
    let mut replaced = 0;
    let mut steps = Vec::new();
    while let Ok(r) = records.pop() {
        if r.drop_reason() == Some(emu_core::log::DropReason::Replaced) {
            assert_eq!(r.time, 20 * MS);
            replaced += 1;
        }
        if r.change_kind() == Some(Change::Queue) {
            steps.push((r.time, r.value()));
        }
    }
    assert_eq!(replaced, 74, "each dropped packet is logged");
    assert_eq!(steps, [(20 * MS, 1)]);
}

fn shaped(server: Server, queue: &str, shaper: &str) -> Link {
    make(
        server,
        10 * MS,
        queue,
        None,
        Dynamics {
            shaper: Some(link::ShaperSpec::parse(shaper).unwrap()),
            ..Default::default()
        },
        LogSink::disabled(),
    )
}

/// htb at 5 Mbit/s with tc's 1600-byte burst: after an idle moment two
/// 1500-byte packets pass at once (the bucket is not yet in debt after
/// the first), each leaves as it is taken (no serialization time), and a
/// packet 1.4 ms behind another waits only for the bucket's debt. The
/// serializing link holds the second of the pair a whole packet time and
/// delivers each one its packet time later.
#[test]
fn an_htb_shaper_passes_a_burst_after_idle_and_delivers_without_serializing() {
    let rate = Server::Rate(Rate::parse("5mbit").unwrap());
    let arrivals = || {
        vec![
            packet(1500, 0, 0),
            packet(1500, 0, 1),
            packet(1500, 0, 2),
            packet(1500, 100 * MS, 3),
            packet(1500, 100 * MS + 1400 * US, 4),
        ]
    };
    let cost = 2_400 * US; // 1500 bytes at 5 Mbit/s
    let buffer = 2_560 * US; // 1600 bytes
    let out = run(&mut shaped(rate.clone(), "infinite", "htb"), arrivals());
    let delay = 10 * MS;
    assert_eq!(
        out,
        vec![
            (delay, 0),
            (delay, 1),
            (delay + 2 * cost - buffer, 2),
            (100 * MS + delay, 3),
            // The debt after packet 3 is cost - buffer < 0: none.
            (100 * MS + 1400 * US + delay, 4),
        ]
    );
    let out = run(
        &mut make(
            rate,
            delay,
            "infinite",
            None,
            Dynamics::default(),
            LogSink::disabled(),
        ),
        arrivals(),
    );
    assert_eq!(out[1], (delay + 2 * cost, 1));
    assert_eq!(out[4], (100 * MS + 2 * cost + delay, 4));
}

/// Shaped, the long-run rate is the rate itself, through a rate step as
/// through a constant rate.
#[test]
fn an_htb_shaper_keeps_the_rate_and_follows_its_steps() {
    let schedule = Schedule::steps(vec![(0, 50_000_000), (S, 5_000_000)], false, false);
    let mut link = shaped(Server::Schedule(schedule), "infinite", "htb burst 3000");
    let out = saturate(&mut link, 25_000);
    let rate = |from, to| rate_in(&out, from, to);
    assert!(
        (rate(100 * MS, S) / 50e6 - 1.0).abs() < 0.01,
        "{}",
        rate(100 * MS, S)
    );
    assert!(
        (rate(S + 100 * MS, 2 * S) / 5e6 - 1.0).abs() < 0.01,
        "{}",
        rate(S + 100 * MS, 2 * S)
    );
}

/// Shaped along a rate schedule, an outage costs the link its own length
/// once: the packet let go just before it leaves as it starts, and the
/// backlog resumes when the link comes back, at the rate. A bucket
/// charged the outage's time as the packet's debt would hold the link
/// down as long again.
#[test]
fn an_htb_shaper_on_a_schedule_resumes_when_an_outage_ends() {
    let schedule = Schedule::steps(vec![(0, 5_000_000)], false, false);
    let mut link = make(
        Server::Schedule(schedule),
        10 * MS,
        "infinite",
        None,
        Dynamics {
            shaper: Some(link::ShaperSpec::parse("htb").unwrap()),
            outages: Some(Outages::list(vec![(S, 500 * MS)]).unwrap()),
            ..Default::default()
        },
        LogSink::disabled(),
    );
    // 1500 bytes every 1.2 ms (10 Mbit/s): a backlog throughout.
    let arrivals = (0..2500)
        .map(|i| packet(1500, i * 1_200 * US, i as u16))
        .collect();
    let out = run(&mut link, arrivals);
    let back = S + 500 * MS + 10 * MS;
    let during = out
        .iter()
        .filter(|(t, _)| *t > S + 10 * MS && *t < back)
        .count();
    assert_eq!(during, 0, "nothing leaves while the link is down");
    let first_after = out.iter().map(|(t, _)| *t).find(|t| *t >= back).unwrap();
    assert!(
        first_after < back + 5 * MS,
        "the first packet after the outage left {} ms after it ended",
        (first_after - back) as f64 / 1e6
    );
    let rate = rate_in(&out, back + 100 * MS, back + S);
    assert!((rate / 5e6 - 1.0).abs() < 0.01, "{rate}");
}
