//! One direction of a shell as a discrete-event model.
//!
//! A packet meets, in order: the loss model, the queue, the server (which
//! serializes at a constant rate, or delivers along a trace's opportunities,
//! or — with no bottleneck — passes it at once), then the propagation delay.
//! Packets leave in the order they entered the delay line; nothing reorders.
//!
//! Times come in with every call. Departure times are computed, not
//! measured: a pump that wakes late writes a packet late, but the model's
//! schedule (and the log) stays exact.

use crate::loss::Loss;
use aqm::{Outcome, Queue};
use emu_core::log::{Direction, DropCounts, DropReason, Event, LogSink, Record};
use emu_core::rate::Serializer;
use emu_core::trace::{Opportunities, Trace};
use emu_core::{Nanos, Packet, Rate};
use std::collections::VecDeque;
use std::sync::Arc;

/// The bottleneck of one direction.
#[derive(Debug, Clone)]
pub enum Server {
    /// No bottleneck: packets leave the queue the moment they arrive.
    Unlimited,
    /// Serialization at a constant rate.
    Rate(Rate),
    /// Delivery opportunities from a trace; `repeat` is false with `--once`.
    Trace { trace: Arc<Trace>, repeat: bool },
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
    /// Bytes charged per packet on top of its IP length when serializing
    /// or spending trace opportunities (link-layer framing; 0 = IP only).
    pub overhead: u32,
}

/// What happened to the packets of one direction. At any time
/// `arrived == delivered + dropped_total() + queued` (see [`Link::queued`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub arrived: u64,
    pub arrived_bytes: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped: DropCounts,
    pub marked_ce: u64,
    pub marked_ect1: u64,
}

impl Counters {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.total()
    }

    pub fn dropped_by(&self, reason: DropReason) -> u64 {
        self.dropped.get(reason)
    }
}

/// A packet that has left the queue and is on the wire or propagating.
struct InFlight {
    packet: Packet,
    due: Nanos,
    sojourn: Nanos,
}

/// A packet partly sent along a trace (Mahimahi's "packet in transit").
struct Transit {
    packet: Packet,
    remaining: i64,
    sojourn: Nanos,
}

enum ServerState {
    Unlimited,
    Rate {
        serializer: Serializer,
        busy_until: Nanos,
    },
    Trace {
        opportunities: Opportunities,
        transit: Option<Transit>,
    },
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
pub struct Link {
    shell: u8,
    direction: Direction,
    delay: Nanos,
    max_packet: usize,
    overhead: u64,
    queue: Box<dyn Queue>,
    loss: Option<Loss>,
    server: ServerState,
    in_flight: VecDeque<InFlight>,
    outcome: Outcome,
    counters: Counters,
    log: LogSink,
    /// Latest time seen; earlier stamps are clamped to it so the model never
    /// runs backwards (a reader may stamp a packet a hair before the pump
    /// last advanced).
    clock: Nanos,
}

impl Link {
    /// A model whose trace (if any) starts at `start`.
    pub fn new(config: LinkConfig, start: Nanos, log: LogSink) -> Link {
        let server = match config.server {
            Server::Unlimited => ServerState::Unlimited,
            Server::Rate(rate) => ServerState::Rate {
                serializer: Serializer::new(rate),
                busy_until: start,
            },
            Server::Trace { trace, repeat } => ServerState::Trace {
                opportunities: trace.opportunities(start, repeat),
                transit: None,
            },
        };
        Link {
            shell: config.shell,
            direction: config.direction,
            delay: config.delay,
            max_packet: config.max_packet,
            overhead: config.overhead as u64,
            queue: config.queue,
            loss: config.loss.map(|mut loss| {
                loss.start(start);
                loss
            }),
            server,
            in_flight: VecDeque::new(),
            outcome: Outcome::default(),
            counters: Counters::default(),
            log,
            clock: start,
        }
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Packets held anywhere in the model: in the queue, partly sent along a
    /// trace, or serialized and propagating.
    pub fn queued(&self) -> u64 {
        let transit = match &self.server {
            ServerState::Trace {
                transit: Some(_), ..
            } => 1,
            _ => 0,
        };
        (self.queue.packets() + self.in_flight.len() + transit) as u64
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
    pub fn arrive(&mut self, packet: Packet) {
        let now = packet.arrival.max(self.clock);
        self.advance(now);
        self.counters.arrived += 1;
        self.counters.arrived_bytes += packet.len() as u64;
        self.record(now, &packet, Event::Arrive, 0, 0);
        if packet.len() > self.max_packet {
            self.drop_packet(packet, DropReason::Oversize, now, 0);
            return;
        }
        if self.loss.as_mut().is_some_and(|loss| loss.lose(now)) {
            self.drop_packet(packet, DropReason::Loss, now, 0);
            return;
        }
        if let ServerState::Rate { busy_until, .. } = &mut self.server {
            if self.queue.is_empty() && *busy_until < now {
                *busy_until = now; // an idle link starts sending at once
            }
        }
        // The packet moves into the queue, so what the log needs of it is
        // read first — and only when there is a log.
        let facts = self.log.is_enabled().then(|| Facts::of(&packet));
        if self.queue.enqueue(packet, now, &mut self.outcome) {
            if let Some(facts) = facts {
                self.record_facts(now, facts, Event::Enqueue, 0, 0);
            }
        }
        self.settle_outcome();
        self.advance(now);
    }

    /// Runs the server up to `now`: every packet whose service starts (or
    /// trace opportunity falls) at or before `now` leaves the queue.
    pub fn advance(&mut self, now: Nanos) {
        let now = now.max(self.clock);
        let previous = self.clock;
        self.clock = now;
        match &mut self.server {
            ServerState::Unlimited => loop {
                // A queue with its own shaper sends when the shaper lets it,
                // which may lie between the last call and this one.
                let at = match self.queue.next_ready() {
                    Some(ready) if ready > now => break,
                    Some(ready) => ready.max(previous),
                    None => now,
                };
                let Some(packet) = self.queue.dequeue(at, &mut self.outcome) else {
                    break;
                };
                let sojourn = at - packet.enqueued.min(at);
                self.in_flight.push_back(InFlight {
                    packet,
                    due: at + self.delay,
                    sojourn,
                });
            },
            ServerState::Rate {
                serializer,
                busy_until,
            } => {
                while *busy_until <= now && !self.queue.is_empty() {
                    let start = *busy_until;
                    let Some(packet) = self.queue.dequeue(start, &mut self.outcome) else {
                        // A shaped queue may hold packets its shaper is not
                        // yet letting go: the link idles until it does.
                        match self.queue.next_ready() {
                            Some(ready) if ready > start && !self.queue.is_empty() => {
                                *busy_until = ready;
                                continue;
                            }
                            _ => break,
                        }
                    };
                    let finish = start + serializer.next(packet.len() as u64 + self.overhead);
                    *busy_until = finish;
                    let sojourn = start - packet.enqueued.min(start);
                    self.in_flight.push_back(InFlight {
                        packet,
                        due: finish + self.delay,
                        sojourn,
                    });
                }
                if self.queue.is_empty() && *busy_until <= now {
                    self.queue.on_idle(*busy_until);
                }
            }
            ServerState::Trace {
                opportunities,
                transit,
            } => {
                while let Some((when, size)) = opportunities.peek() {
                    if when > now {
                        break;
                    }
                    if transit.is_none() && self.queue.is_empty() {
                        // Nothing to send: every opportunity up to `now` is
                        // lost unused, so jump past them in one step.
                        opportunities.skip_through(now);
                        break;
                    }
                    // Use this opportunity. As in Mahimahi, the opportunity
                    // is consumed first; reaching the end of a trace that
                    // does not repeat ends the link before its last
                    // opportunity delivers anything.
                    opportunities.next();
                    if opportunities.is_ended() {
                        break;
                    }
                    let mut budget = size as i64;
                    while budget > 0 {
                        if transit.is_none() {
                            let Some(packet) = self.queue.dequeue(when, &mut self.outcome) else {
                                break; // unused bytes of an opportunity are lost
                            };
                            let sojourn = when - packet.enqueued.min(when);
                            *transit = Some(Transit {
                                remaining: (packet.len() as u64 + self.overhead) as i64,
                                packet,
                                sojourn,
                            });
                        }
                        let sending = transit.as_mut().expect("a packet is in transit");
                        sending.remaining -= budget;
                        budget = 0;
                        if sending.remaining <= 0 {
                            budget = -sending.remaining; // left over for the next packet
                            let done = transit.take().expect("a packet is in transit");
                            self.in_flight.push_back(InFlight {
                                packet: done.packet,
                                due: when + self.delay,
                                sojourn: done.sojourn,
                            });
                        }
                    }
                }
            }
        }
        self.settle_outcome();
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
        match (departure, service) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next packet due to leave at or before `now`, in order, with the
    /// time it was due (the pump measures its own lateness against it).
    pub fn pop_due(&mut self, now: Nanos) -> Option<(Packet, Nanos)> {
        if self.in_flight.front()?.due > now {
            return None;
        }
        let flight = self.in_flight.pop_front()?;
        self.counters.delivered += 1;
        self.counters.delivered_bytes += flight.packet.len() as u64;
        self.record(flight.due, &flight.packet, Event::Depart, 0, flight.sojourn);
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

    fn drop_packet(&mut self, packet: Packet, reason: DropReason, at: Nanos, sojourn: Nanos) {
        self.counters.dropped.add(reason);
        self.record(at, &packet, Event::Drop, reason as u8, sojourn);
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
