//! One direction of a shell as a discrete-event model.
//!
//! A packet meets, in order: the loss model, the queue, the server (which
//! serializes at a constant rate, or delivers along a trace's opportunities,
//! or — with no bottleneck — passes it at once), then the propagation delay.
//! Packets leave in the order they entered the delay line unless the path's
//! dynamics ask for reordering.
//!
//! Each mechanism that makes a path change over time lives in its own
//! module (schedules, jitter, outages, duplication and corruption, the
//! change log); this one only composes them. A link with none of them pays
//! one predictable branch per packet for each.
//!
//! Times come in with every call. Departure times are computed, not
//! measured: a pump that wakes late writes a packet late, but the model's
//! schedule (and the log) stays exact.

use crate::changes::ChangeLog;
use crate::loss::Loss;
use crate::mangle::Mangle;
use crate::outage::{OutageCursor, Outages};
use crate::propagation::{DelayDynamics, Propagation};
use crate::queue_steps::{drain, QueueStep};
pub use crate::server::Server;
use crate::server::{serve_rate, serve_trace, serve_unlimited, InFlight, Line, ServerState};
use crate::shaper::ShaperSpec;
use crate::slot::SlotGate;
use crate::steering::{Pending, SojournWindow};
use aqm::{Outcome, Queue, QueueSpec};
use emu_core::capture::Fate;
use emu_core::flow::FlowNamer;
use emu_core::log::{Change, Direction, DropCounts, DropReason, Event, LogSink, Mark, Record};
use emu_core::size::LinkLayer;
use emu_core::{Nanos, Packet};
use std::collections::HashMap;
use std::collections::VecDeque;

mod steered;

/// How a path changes over time and mangles packets, beyond a constant
/// delay, a server and a loss pattern. The default is a path without any.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dynamics {
    pub delay: DelayDynamics,
    /// Times the server sends nothing.
    pub outages: Option<Outages>,
    /// The queue's replacements after the one the link starts with, in
    /// order of time from the start (see [`crate::queue_steps`]).
    pub queue_steps: Vec<QueueStep>,
    /// The rate enforced as htb enforces it (see [`crate::shaper`]) in
    /// place of a serializing link; only with a rate or a rate schedule.
    pub shaper: Option<ShaperSpec>,
    /// Probability that a packet is sent twice.
    pub duplicate: f64,
    /// Probability that one bit of a packet is flipped.
    pub corrupt: f64,
    /// Seed of every random draw above, and the stream that separates this
    /// direction's draws from the other direction's.
    pub seed: u64,
    pub stream: u64,
}

impl Dynamics {
    pub fn is_none(&self) -> bool {
        self.delay.is_none()
            && self.outages.is_none()
            && self.queue_steps.is_empty()
            && self.shaper.is_none()
            && self.duplicate <= 0.0
            && self.corrupt <= 0.0
    }
}

/// Everything that defines one direction's path.
pub struct LinkConfig {
    /// Position of the shell in the chain (0 = outermost), for the log.
    pub shell: u8,
    pub direction: Direction,
    pub delay: Nanos,
    pub server: Server,
    pub queue: Box<dyn Queue>,
    pub loss: Option<Loss>,
    /// Largest IP packet accepted; larger ones are dropped as oversize.
    pub max_packet: usize,
    /// Bytes charged per packet on top of its frame length (IP, plus the
    /// link-layer header of [`Link::with_link_layer`]) when serializing or
    /// spending trace opportunities: preamble, FCS, gaps (0 = none).
    pub overhead: u32,
    pub dynamics: Dynamics,
}

/// What happened to the packets of one direction. At any time
/// `arrived + duplicated == delivered + dropped_total() + packets_inside`
/// (see [`Link::packets_inside`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub arrived: u64,
    pub arrived_bytes: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped: DropCounts,
    pub marked_ce: u64,
    pub marked_ect1: u64,
    /// Copies made by the path (each then delivered, dropped or queued).
    pub duplicated: u64,
    /// Packets with a bit flipped (and still delivered, dropped or queued).
    pub corrupted: u64,
}

impl Counters {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.total()
    }

    pub fn dropped_by(&self, reason: DropReason) -> u64 {
        self.dropped.get(reason)
    }
}

/// What the log says about a packet, taken before the packet moves on.
#[derive(Clone, Copy)]
struct Facts {
    flow: u32,
    fingerprint: u32,
    bytes: u32,
    ecn: u8,
}

impl Facts {
    fn of(packet: &Packet) -> Facts {
        Facts {
            flow: packet.flow,
            fingerprint: packet.fingerprint,
            bytes: packet.len() as u32,
            ecn: packet.ecn().map_or(0, |e| e as u8),
        }
    }
}

/// The model of one direction.
///
/// Driven by its caller's clock: `arrive` at a packet's arrival time,
/// `advance` to the next event, `pop_due` what is due. In virtual time,
/// a 40 ms delay behind a 12 Mbit/s link:
///
/// ```
/// use aqm::QueueSpec;
/// use emu_core::log::{Direction, LogSink};
/// use emu_core::packet::build::ipv4_udp;
/// use emu_core::{Packet, Rate};
/// use link::{Link, LinkConfig, Server};
///
/// let mut link = Link::new(
///     LinkConfig {
///         shell: 0,
///         direction: Direction::Uplink,
///         delay: 40_000_000,
///         server: Server::Rate(Rate::parse("12mbit").unwrap()),
///         queue: QueueSpec::parse("droptail packets 100").unwrap().build(),
///         loss: None,
///         max_packet: 1500,
///         overhead: 0,
///         dynamics: Default::default(),
///     },
///     0,
///     LogSink::disabled(),
/// );
/// for _ in 0..2 {
///     link.arrive(Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 1500), 0));
/// }
/// // 1500 bytes take 1 ms at 12 Mbit/s: the packets leave at 41 and 42 ms.
/// let mut departures = Vec::new();
/// while let Some(t) = link.next_event() {
///     link.advance(t);
///     while let Some((_packet, due)) = link.pop_due(t) {
///         departures.push(due);
///     }
/// }
/// assert_eq!(departures, [41_000_000, 42_000_000]);
/// assert_eq!(link.counters().delivered, 2);
/// assert_eq!(link.packets_inside(), 0);
/// ```
pub struct Link {
    shell: u8,
    direction: Direction,
    delay: Nanos,
    max_packet: usize,
    overhead: u64,
    /// Link-layer header bytes stamped on every arriving packet, so the
    /// queue and the server count frames (see [`emu_core::size`]).
    link_header: u16,
    queue: Box<dyn Queue>,
    /// Queues still to replace `queue`, at absolute times, with the
    /// number of each step.
    queue_steps: VecDeque<(Nanos, usize, QueueSpec)>,
    link_layer: LinkLayer,
    loss: Option<Loss>,
    server: ServerState,
    in_flight: VecDeque<InFlight>,
    /// Delay dynamics; None for a constant delay.
    propagation: Option<Box<Propagation>>,
    /// Packets may leave out of order (jitter with reordering).
    reorder: bool,
    /// netem's transmission slots after the delay; None without them.
    slots: Option<Box<SlotGate<InFlight>>>,
    outage: Option<Box<OutageCursor>>,
    mangle: Option<Box<Mangle>>,
    /// Parameter changes still to be logged; None without a log.
    changes: Option<Box<ChangeLog>>,
    log_loss_states: bool,
    outcome: Outcome,
    counters: Counters,
    log: LogSink,
    /// Flows already named in the log (see [`emu_core::flow`]).
    flow_names: FlowNamer,
    /// When packets are captured: the ECN mark this link's queue made on a
    /// packet still inside, by fingerprint, for its capture comment.
    marks: HashMap<u32, Mark>,
    /// Latest time seen; earlier stamps are clamped to it so the model never
    /// runs backwards (a reader may stamp a packet a hair before the pump
    /// last advanced).
    clock: Nanos,
    /// When the link started, and the seed and stream of its draws, for
    /// the parts a controller adds while it runs.
    start: Nanos,
    seeds: (u64, u64),
    /// Changes asked from outside, waiting for their instant.
    steering: Pending,
    /// The number the next queue replaced from outside takes in the log
    /// (counting on after the queue steps), and the in-place changes made.
    next_queue_number: usize,
    queue_changes: u64,
    /// Sojourns of departing packets, while a controller watches.
    sojourns: Option<Box<SojournWindow>>,
}

impl Link {
    /// A model whose trace (if any) starts at `start`.
    // Long: every part of the model built from its config, one per field,
    // in the order the struct declares them.
    pub fn new(config: LinkConfig, start: Nanos, log: LogSink) -> Link {
        let dynamics = &config.dynamics;
        let (seed, stream) = (dynamics.seed, dynamics.stream);
        let mut changes = ChangeLog::new(start);
        let outage = dynamics.outages.as_ref().map(|o| {
            changes.follow_outages(o.cursor(start, seed, stream));
            Box::new(o.cursor(start, seed, stream))
        });
        let server = ServerState::start(
            config.server,
            start,
            (seed, stream),
            outage.is_some(),
            dynamics.shaper,
            &mut changes,
        );
        let propagation = (!dynamics.delay.is_none()).then(|| {
            if let Some(schedule) = &dynamics.delay.schedule {
                changes.follow(Change::Delay, schedule.cursor(start, seed, stream));
            }
            Box::new(Propagation::new(
                config.delay,
                &dynamics.delay,
                start,
                seed,
                stream,
            ))
        });
        let slots = dynamics
            .delay
            .slot
            .clone()
            .map(|spec| Box::new(SlotGate::new(spec, start, seed, stream)));
        let mangle = (dynamics.duplicate > 0.0 || dynamics.corrupt > 0.0).then(|| {
            Box::new(Mangle::new(
                dynamics.duplicate,
                dynamics.corrupt,
                seed,
                stream,
            ))
        });
        let log_loss_states = log.is_enabled()
            && config
                .loss
                .as_ref()
                .is_some_and(|l| l.pattern().has_states());
        Link {
            shell: config.shell,
            direction: config.direction,
            delay: config.delay,
            reorder: propagation.as_ref().is_some_and(|p| p.reorders()),
            propagation,
            slots,
            outage,
            mangle,
            changes: (log.is_enabled() && !changes.is_empty()).then(|| Box::new(changes)),
            log_loss_states,
            max_packet: config.max_packet,
            overhead: config.overhead as u64,
            link_header: 0,
            queue: config.queue,
            queue_steps: dynamics
                .queue_steps
                .iter()
                .enumerate()
                .map(|(i, step)| (start + step.at, i + 1, step.queue.clone()))
                .collect(),
            link_layer: LinkLayer::None,
            loss: config.loss.map(|mut loss| {
                loss.start(start);
                loss
            }),
            server,
            in_flight: VecDeque::new(),
            outcome: Outcome::default(),
            counters: Counters::default(),
            log,
            flow_names: FlowNamer::default(),
            marks: HashMap::new(),
            clock: start,
            start,
            seeds: (seed, stream),
            steering: Pending::default(),
            next_queue_number: dynamics.queue_steps.len() + 1,
            queue_changes: 0,
            sojourns: None,
        }
    }

    /// The link layer its queue and server account for: with `Ethernet`
    /// every packet counts 14 bytes more than its IP length, as a Linux
    /// qdisc and shaper on an Ethernet device count it. Build the queue
    /// with [`aqm::QueueSpec::on_link_layer`] for the same layer.
    pub fn with_link_layer(mut self, link_layer: LinkLayer) -> Link {
        self.link_header = link_layer.header_bytes();
        self.link_layer = link_layer;
        self
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Packets held anywhere in the model: in the queue, partly sent along a
    /// trace, or serialized and propagating.
    pub fn packets_inside(&self) -> u64 {
        let transit = match &self.server {
            ServerState::Trace {
                transit: Some(_), ..
            } => 1,
            _ => 0,
        };
        let gated = self.slots.as_ref().map_or(0, |g| g.len());
        (self.queue.packets() + self.in_flight.len() + transit + gated) as u64
    }

    /// Whether every packet is accounted for: `arrived + duplicated ==
    /// delivered + dropped + packets_inside`. The one statement of the
    /// invariant, for every front end that reports it.
    pub fn accounting_holds(&self) -> bool {
        let c = &self.counters;
        c.arrived + c.duplicated == c.delivered + c.dropped_total() + self.packets_inside()
    }

    /// Packets and bytes waiting in the queue itself (not yet being sent).
    pub fn queue_occupancy(&self) -> (usize, usize) {
        (self.queue.packets(), self.queue.bytes())
    }

    pub fn queue_description(&self) -> String {
        self.queue.describe()
    }

    /// True once a trace run with `--once` has used its last opportunity.
    pub fn trace_ended(&self) -> bool {
        match &self.server {
            ServerState::Trace { opportunities, .. } => opportunities.is_ended(),
            _ => false,
        }
    }

    /// A packet arrives at `packet.arrival`.
    pub fn arrive(&mut self, mut packet: Packet) {
        packet.link_header = self.link_header;
        let now = packet.arrival.max(self.clock);
        self.advance(now);
        self.counters.arrived += 1;
        self.counters.arrived_bytes += packet.len() as u64;
        self.name_flow(now, &packet);
        self.record(now, &packet, Event::Arrive, 0, 0);
        if packet.len() > self.max_packet {
            self.drop_packet(packet, DropReason::Oversize, now, 0);
            return;
        }
        if let Some(loss) = &mut self.loss {
            let state = loss.state();
            let lost = loss.lose(now);
            if self.log_loss_states && loss.state() != state {
                let state = loss.state() as u64;
                self.record_change(now, Change::LossState, state);
            }
            if lost {
                self.drop_packet(packet, DropReason::Loss, now, 0);
                return;
            }
        }
        if let ServerState::Rate { busy_until, .. } = &mut self.server {
            if self.queue.is_empty() && *busy_until < now {
                *busy_until = now; // an idle link starts sending at once
            }
        }
        match self.mangle.as_deref_mut() {
            None => self.enqueue(packet, now),
            Some(mangle) => {
                // The copy is taken before corruption, as netem clones
                // before it corrupts, and follows the original.
                let mut packet = packet;
                let copy = mangle.duplicates().then(|| packet.clone());
                let corrupted = mangle.corrupt(&mut packet.data);
                if corrupted {
                    self.counters.corrupted += 1;
                    self.record(now, &packet, Event::Corrupt, 0, 0);
                }
                self.enqueue(packet, now);
                if let Some(copy) = copy {
                    self.counters.duplicated += 1;
                    self.record(now, &copy, Event::Duplicate, 0, 0);
                    self.enqueue(copy, now);
                }
            }
        }
        self.settle_outcome();
        self.advance(now);
    }

    fn enqueue(&mut self, packet: Packet, now: Nanos) {
        // The packet moves into the queue, so what the log needs of it is
        // read first — and only when there is a log.
        let facts = self.log.is_enabled().then(|| Facts::of(&packet));
        if self.queue.enqueue(packet, now, &mut self.outcome) {
            if let Some(facts) = facts {
                self.record_facts(now, facts, Event::Enqueue, 0, 0);
            }
        }
    }

    /// Runs the server up to `now`: every packet whose service starts (or
    /// trace opportunity falls) at or before `now` leaves the queue. A
    /// queue step on the way is taken at its instant.
    pub fn advance(&mut self, now: Nanos) {
        loop {
            let step = self.queue_steps.front().map(|s| s.0);
            let steer = self.steering.next_at();
            match (step.filter(|at| *at <= now), steer.filter(|at| *at <= now)) {
                (Some(step), Some(steer)) if steer < step => self.take_steering(steer),
                (Some(step), _) => {
                    self.run_to(step);
                    self.replace_queue(step);
                }
                (None, Some(steer)) => self.take_steering(steer),
                (None, None) => break,
            }
        }
        self.run_to(now);
    }

    /// The next queue step's instant: the old queue's packets are dropped
    /// by `tc qdisc replace`'s rule, and the new queue takes over.
    fn replace_queue(&mut self, at: Nanos) {
        let Some((_, number, spec)) = self.queue_steps.pop_front() else {
            return;
        };
        self.put_queue(at.max(self.clock), number, &spec);
    }

    /// `spec`'s queue takes over at `at`, logged as queue number `number`;
    /// what the old one holds is dropped as replaced.
    fn put_queue(&mut self, at: Nanos, number: usize, spec: &QueueSpec) {
        let new = spec.clone().on_link_layer(self.link_layer).build();
        let mut old = std::mem::replace(&mut self.queue, new);
        self.record_change(at, Change::Queue, number as u64);
        for packet in drain(old.as_mut(), at) {
            let sojourn = at.saturating_sub(packet.enqueued);
            self.drop_packet(packet, DropReason::Replaced, at, sojourn);
        }
    }

    fn run_to(&mut self, now: Nanos) {
        let now = now.max(self.clock);
        let previous = self.clock;
        self.clock = now;
        self.log_changes(now);
        let mut line = Line {
            queue: &mut self.queue,
            outcome: &mut self.outcome,
            outage: self.outage.as_deref_mut(),
            delay: self.delay,
            propagation: &mut self.propagation,
            slots: self.slots.as_deref_mut(),
            in_flight: &mut self.in_flight,
            reorder: self.reorder,
            overhead: self.overhead,
        };
        match &mut self.server {
            ServerState::Unlimited => serve_unlimited(&mut line, previous, now),
            ServerState::Rate {
                serializer,
                busy_until,
                curve,
                shaper,
            } => serve_rate(&mut line, serializer, busy_until, curve, shaper, now),
            ServerState::Trace {
                opportunities,
                transit,
            } => serve_trace(&mut line, opportunities, transit, now),
        }
        if let Some(gate) = self.slots.as_deref_mut() {
            // Released in order of time: the delay line's back is never later.
            let in_flight = &mut self.in_flight;
            gate.run_until(now, |at, mut flight| {
                flight.due = at;
                in_flight.push_back(flight);
            });
        }
        self.settle_outcome();
    }

    /// Logs the parameter changes due up to `now`.
    fn log_changes(&mut self, now: Nanos) {
        if let Some(changes) = self.changes.as_deref_mut() {
            for (time, kind, value) in changes.until(now) {
                self.log.record(Record::change(
                    time,
                    self.shell,
                    self.direction,
                    kind,
                    value,
                ));
            }
        }
    }

    /// The next time anything happens without a new arrival: a packet due
    /// to leave, or the server's next chance to send a queued packet.
    pub fn next_event(&self) -> Option<Nanos> {
        let departure = self.in_flight.front().map(|f| f.due);
        let service = match &self.server {
            ServerState::Unlimited => self.queue.next_ready().filter(|_| !self.queue.is_empty()),
            ServerState::Rate { busy_until, .. } => (!self.queue.is_empty())
                .then(|| (*busy_until).max(self.queue.next_ready().unwrap_or(0))),
            ServerState::Trace {
                opportunities,
                transit,
            } => {
                if transit.is_some() || !self.queue.is_empty() {
                    opportunities.peek().map(|(when, _)| when)
                } else {
                    // Idle, but the end of a trace run once is an event of
                    // its own: the shell stops there.
                    opportunities
                        .ends_at()
                        .filter(|_| !opportunities.is_ended())
                }
            }
        };
        let gate = self.slots.as_ref().and_then(|g| g.next_event());
        // A step matters only to a queue that holds packets; an empty one
        // is replaced when the model next runs.
        let step = (!self.queue.is_empty())
            .then(|| self.queue_steps.front().map(|s| s.0))
            .flatten();
        // A change from outside is taken at its instant even on an idle
        // link: its record, and what a controller reads, are due then.
        let steer = self.steering.next_at();
        [departure, service, gate, step, steer]
            .into_iter()
            .flatten()
            .min()
    }

    /// The next packet due to leave at or before `now`, in order, with the
    /// time it was due (the pump measures its own lateness against it).
    /// Its departure is logged at the time it was due: the model's own
    /// time, as virtual-time drivers (tests, `emu sim`, the fabric) want.
    pub fn pop_due(&mut self, now: Nanos) -> Option<(Packet, Nanos)> {
        self.pop_due_logged(now, false)
    }

    /// As [`Link::pop_due`], for a pump on the real clock about to write
    /// the packet at `now`: its departure is logged (and captured) at
    /// `now`, which is its due time or later. A packet that leaves late
    /// (emu was stopped with SIGSTOP, or starved of CPU) then shows as
    /// late in the log, never as having left on time.
    pub fn pop_due_written_at(&mut self, now: Nanos) -> Option<(Packet, Nanos)> {
        self.pop_due_logged(now, true)
    }

    fn pop_due_logged(&mut self, now: Nanos, log_now: bool) -> Option<(Packet, Nanos)> {
        if self.in_flight.front()?.due > now {
            return None;
        }
        let flight = self.in_flight.pop_front()?;
        let logged = if log_now { now } else { flight.due };
        self.counters.delivered += 1;
        self.counters.delivered_bytes += flight.packet.len() as u64;
        if let Some(window) = self.sojourns.as_deref_mut() {
            window.add(flight.sojourn);
        }
        self.record(logged, &flight.packet, Event::Depart, 0, flight.sojourn);
        if self.log.captures() {
            let mark = self.marks.remove(&flight.packet.fingerprint);
            let fate = Fate::Departed {
                sojourn: flight.sojourn,
                mark,
            };
            self.log.capture(logged, &flight.packet.data, fate);
        }
        Some((flight.packet, flight.due))
    }

    /// Logs and counts every drop and mark the queue reported.
    fn settle_outcome(&mut self) {
        if self.outcome.is_empty() {
            return;
        }
        let mut outcome = std::mem::take(&mut self.outcome);
        for dropped in outcome.drops.drain(..) {
            let sojourn = dropped.at.saturating_sub(dropped.packet.enqueued);
            let sojourn = if dropped.reason == DropReason::Tail {
                0
            } else {
                sojourn
            };
            self.drop_packet(dropped.packet, dropped.reason, dropped.at, sojourn);
        }
        for mark in outcome.marks.drain(..) {
            if self.log.captures() {
                self.marks.insert(mark.fingerprint, mark.mark);
            }
            match mark.mark {
                emu_core::log::Mark::Ce => self.counters.marked_ce += 1,
                emu_core::log::Mark::Ect1 => self.counters.marked_ect1 += 1,
            }
            let facts = Facts {
                flow: mark.flow,
                fingerprint: mark.fingerprint,
                bytes: mark.bytes,
                ecn: match mark.mark {
                    emu_core::log::Mark::Ce => 3,
                    emu_core::log::Mark::Ect1 => 1,
                },
            };
            self.record_facts(mark.at, facts, Event::Mark, mark.mark as u8, 0);
        }
        self.outcome = outcome; // keep the vectors' capacity
    }

    fn record_change(&mut self, time: Nanos, change: Change, value: u64) {
        self.log.record(Record::change(
            time,
            self.shell,
            self.direction,
            change,
            value,
        ));
    }

    fn drop_packet(&mut self, packet: Packet, reason: DropReason, at: Nanos, sojourn: Nanos) {
        self.counters.dropped.add(reason);
        self.record(at, &packet, Event::Drop, reason as u8, sojourn);
        if self.log.captures() {
            let mark = self.marks.remove(&packet.fingerprint);
            let fate = Fate::Dropped {
                reason,
                sojourn,
                mark,
            };
            self.log.capture(at, &packet.data, fate);
        }
    }

    /// Writes a flow record before the first arrival of each flow, so the
    /// report can name flows by their 5-tuple instead of their hash.
    fn name_flow(&mut self, time: Nanos, packet: &Packet) {
        if !self.log.is_enabled() {
            return;
        }
        let named = self.flow_names.first_sight(
            &packet.data,
            time,
            packet.flow,
            self.shell,
            self.direction,
        );
        if let Some((records, n)) = named {
            for record in &records[..n] {
                self.log.record(*record);
            }
        }
    }

    #[inline]
    fn record(&mut self, time: Nanos, packet: &Packet, event: Event, detail: u8, sojourn: Nanos) {
        if self.log.is_enabled() {
            self.record_facts(time, Facts::of(packet), event, detail, sojourn);
        }
    }

    fn record_facts(
        &mut self,
        time: Nanos,
        facts: Facts,
        event: Event,
        detail: u8,
        sojourn: Nanos,
    ) {
        self.log.record(Record {
            time,
            sojourn,
            flow: facts.flow,
            fingerprint: facts.fingerprint,
            bytes: facts.bytes,
            queue_bytes: self.queue.bytes() as u32,
            queue_packets: self.queue.packets() as u32,
            shell: self.shell,
            direction: self.direction,
            event,
            detail,
            ecn: facts.ecn,
        });
    }
}
