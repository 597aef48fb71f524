//! The server of one direction: how the packets its queue lets go are
//! sent (at once, at a rate or shaped to it, or along a trace's delivery
//! opportunities) and handed to the delay line. [`crate::model`] owns the
//! state; these functions move packets through it, each call up to `now`.

use crate::capacity::{RateCurve, ServiceCurve};
use crate::changes::ChangeLog;
use crate::outage::OutageCursor;
use crate::propagation::Propagation;
use crate::schedule::Schedule;
use crate::shaper::{ShaperSpec, TokenBucket};
use crate::slot::SlotGate;
use aqm::{Outcome, Queue};
use emu_core::log::Change;
use emu_core::rate::Serializer;
use emu_core::trace::Opportunities;
use emu_core::trace::Trace;
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
    /// Serialization at a rate (bit/s) that follows a schedule.
    Schedule(Schedule),
}

/// A packet that has left the queue and is on the wire or propagating.
pub(crate) struct InFlight {
    pub packet: Packet,
    pub due: Nanos,
    pub sojourn: Nanos,
}

/// A packet partly sent along a trace (Mahimahi's "packet in transit").
pub(crate) struct Transit {
    packet: Packet,
    remaining: i64,
    sojourn: Nanos,
}

pub(crate) enum ServerState {
    Unlimited,
    Rate {
        serializer: Serializer,
        busy_until: Nanos,
        /// Set when the rate changes over time or the link has outages.
        curve: Option<Box<ServiceCurve>>,
        /// htb's bucket, when the rate is shaped rather than serialized.
        shaper: Option<TokenBucket>,
    },
    Trace {
        opportunities: Opportunities,
        transit: Option<Transit>,
    },
}

impl ServerState {
    /// The server a link starts with at `start`: a rate (along a curve
    /// where it changes or the link has outages), a schedule of rates
    /// (whose changes `changes` logs), a trace, or none.
    pub(crate) fn start(
        server: Server,
        start: Nanos,
        (seed, stream): (u64, u64),
        has_outages: bool,
        shaper: Option<ShaperSpec>,
        changes: &mut ChangeLog,
    ) -> ServerState {
        let shaper = shaper.map(|spec| TokenBucket::new(spec, start));
        let curve = |rate: RateCurve| Box::new(ServiceCurve { rate });
        match server {
            Server::Unlimited => ServerState::Unlimited,
            Server::Rate(rate) => ServerState::Rate {
                serializer: Serializer::new(rate),
                busy_until: start,
                curve: has_outages.then(|| curve(RateCurve::Constant(rate.bits_per_sec()))),
                shaper,
            },
            Server::Schedule(schedule) => {
                changes.follow(Change::Rate, schedule.cursor(start, seed, stream));
                let first = Rate::from_bits_per_sec(schedule.first().max(1)).expect("above 0");
                ServerState::Rate {
                    serializer: Serializer::new(first),
                    busy_until: start,
                    curve: Some(curve(RateCurve::Scheduled(Box::new(
                        schedule.cursor(start, seed, stream),
                    )))),
                    shaper,
                }
            }
            Server::Trace { trace, repeat } => ServerState::Trace {
                opportunities: trace.opportunities(start, repeat),
                transit: None,
            },
        }
    }
}

/// What a server hands its packets over with: the queue it takes them
/// from, the outages it waits out, and the delay line it puts them in.
pub(crate) struct Line<'a> {
    pub queue: &'a mut Box<dyn Queue>,
    pub outcome: &'a mut Outcome,
    pub outage: Option<&'a mut OutageCursor>,
    pub delay: Nanos,
    pub propagation: &'a mut Option<Box<Propagation>>,
    pub slots: Option<&'a mut SlotGate<InFlight>>,
    pub in_flight: &'a mut VecDeque<InFlight>,
    pub reorder: bool,
    pub overhead: u64,
}

impl Line<'_> {
    /// `packet` leaves the server at `leave`, after `sojourn` in the queue,
    /// into the delay line.
    fn depart(&mut self, packet: Packet, leave: Nanos, sojourn: Nanos) {
        let due = due_after(self.delay, self.propagation, leave);
        let bytes = packet.frame_len() as u64;
        let flight = InFlight {
            packet,
            due,
            sojourn,
        };
        match self.slots.as_deref_mut() {
            Some(gate) => gate.enter(leave, due, bytes, flight),
            None => push_flight(self.in_flight, self.reorder, flight),
        }
    }
}

/// No rate of its own: what the queue lets go up to `now` leaves at once
/// (or when an outage ends). A queue with its own shaper sends when the
/// shaper lets it, which may lie between the last call (`previous`) and
/// this one.
pub(crate) fn serve_unlimited(line: &mut Line, previous: Nanos, now: Nanos) {
    loop {
        let at = match line.queue.next_ready() {
            Some(ready) if ready > now => break,
            Some(ready) => ready.max(previous),
            None => now,
        };
        let Some(packet) = line.queue.dequeue(at, line.outcome) else {
            break;
        };
        let sojourn = at - packet.enqueued.min(at);
        let leave = match line.outage.as_deref_mut() {
            Some(outage) => outage.up_at(at),
            None => at,
        };
        line.depart(packet, leave, sojourn);
    }
}

/// A rate, constant or along a curve: each packet starts when the one
/// before it is serialized (or an outage ends) and leaves when its own
/// bytes are. Under a shaper, a packet starts when htb's bucket is out of
/// debt and leaves as it starts; its bytes are the bucket's debt.
pub(crate) fn serve_rate(
    line: &mut Line,
    serializer: &mut Serializer,
    busy_until: &mut Nanos,
    curve: &mut Option<Box<ServiceCurve>>,
    shaper: &mut Option<TokenBucket>,
    now: Nanos,
) {
    while *busy_until <= now && !line.queue.is_empty() {
        let start = *busy_until;
        if let Some(outage) = line.outage.as_deref_mut() {
            let up = outage.up_at(start);
            if up != start {
                *busy_until = up; // down: the queue waits
                continue;
            }
        }
        let Some(packet) = line.queue.dequeue(start, line.outcome) else {
            // A shaped queue may hold packets its shaper is not
            // yet letting go: the link idles until it does.
            match line.queue.next_ready() {
                Some(ready) if ready > start && !line.queue.is_empty() => {
                    *busy_until = ready;
                    continue;
                }
                _ => break,
            }
        };
        let bytes = packet.frame_len() as u64 + line.overhead;
        let finish = match curve.as_deref_mut() {
            None => start + serializer.next(bytes),
            Some(curve) => curve.serve(start, bytes, line.outage.as_deref_mut()).1,
        };
        let sojourn = start - packet.enqueued.min(start);
        match shaper {
            None => {
                *busy_until = finish;
                line.depart(packet, finish, sojourn);
            }
            Some(bucket) => {
                let rate = match curve.as_deref_mut() {
                    None => serializer.rate(),
                    Some(curve) => curve.rate_at(start),
                };
                let buffer = bucket.buffer_at(rate);
                *busy_until = bucket.release(start, finish - start, buffer);
                line.depart(packet, start, sojourn);
            }
        }
    }
    if line.queue.is_empty() && *busy_until <= now {
        line.queue.on_idle(*busy_until);
    }
}

/// A delivery trace: each opportunity up to `now` carries its bytes of
/// the packet in transit and the ones after it; unused bytes are lost.
pub(crate) fn serve_trace(
    line: &mut Line,
    opportunities: &mut Opportunities,
    transit: &mut Option<Transit>,
    now: Nanos,
) {
    while let Some((when, size)) = opportunities.peek() {
        if when > now {
            break;
        }
        if transit.is_none() && line.queue.is_empty() {
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
        if line.outage.as_deref_mut().is_some_and(|o| o.is_down(when)) {
            continue; // an opportunity during an outage is lost
        }
        let mut budget = size as i64;
        while budget > 0 {
            if transit.is_none() {
                let Some(packet) = line.queue.dequeue(when, line.outcome) else {
                    break; // unused bytes of an opportunity are lost
                };
                let sojourn = when - packet.enqueued.min(when);
                *transit = Some(Transit {
                    remaining: (packet.frame_len() as u64 + line.overhead) as i64,
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
                line.depart(done.packet, when, done.sojourn);
            }
        }
    }
}

/// When a packet that left the server at `leave` comes out of the path: a
/// constant delay later, or as the delay dynamics say.
#[inline]
fn due_after(delay: Nanos, propagation: &mut Option<Box<Propagation>>, leave: Nanos) -> Nanos {
    match propagation {
        None => leave + delay,
        Some(p) => p.due(leave),
    }
}

/// Puts a packet in the delay line, which stays sorted by due time: in FIFO
/// order due times never decrease, so only a reordering path searches.
#[inline]
fn push_flight(in_flight: &mut VecDeque<InFlight>, reorder: bool, flight: InFlight) {
    if reorder && in_flight.back().is_some_and(|last| last.due > flight.due) {
        let position = in_flight.partition_point(|f| f.due <= flight.due);
        in_flight.insert(position, flight);
    } else {
        in_flight.push_back(flight);
    }
}
