//! Moving packets across link models in global time order.
//!
//! A packet that leaves one link at its due time `t` arrives at the next
//! link at exactly `t`. For that arrival to be exact, the next link must not
//! have been advanced past `t` already; so the fabric always settles the
//! link with the earliest pending event first ([`Fabric::run_until`]), and a
//! host's new packet is admitted only after everything due before its
//! arrival stamp has moved on ([`Fabric::send`]). A caller that runs late
//! (a real-time thread woken after the due time) then delivers late, but
//! every link's schedule, and its log, stays as if it had run on time.

use crate::topology::{HostId, LinkId, Next, Topology};
use emu_core::{Nanos, Packet};
use link::Link;
use std::fmt;

/// A packet that has crossed its last link and is due at its host.
#[derive(Debug)]
pub struct Delivery {
    pub host: HostId,
    pub packet: Packet,
    /// When it left the last link (the model's departure time).
    pub due: Nanos,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricError(pub String);

impl fmt::Display for FabricError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FabricError {}

/// Every link of a topology, and the routing between them; or, split into
/// lanes (see [`crate::lanes`]), the links one lane runs.
pub struct Fabric {
    pub(crate) topology: Topology,
    /// Every link in the topology's numbering; `None` where another lane
    /// runs it.
    pub(crate) links: Vec<Option<Link>>,
    /// Each link's next event, as `Link::next_event` says, refreshed
    /// whenever the link changes: finding the earliest reads this list
    /// instead of asking every link's queue, once per hop of every packet.
    pub(crate) next_events: Vec<Option<Nanos>>,
    /// Packets read from a host addressed to no host: counted, not carried.
    pub(crate) unroutable: u64,
    /// Packets that left one of this lane's links for another lane's, with
    /// that link (see [`Fabric::take_handed`]).
    pub(crate) handed: Vec<(LinkId, Packet)>,
    /// The latest time this fabric has run to.
    pub(crate) clock: Nanos,
}

impl Fabric {
    /// `links` in the topology's numbering (see [`Topology::index`]).
    pub fn new(topology: Topology, links: Vec<Link>) -> Result<Fabric, FabricError> {
        if links.len() != topology.link_count() {
            return Err(FabricError(format!(
                "the topology has {} link directions but {} models were given",
                topology.link_count(),
                links.len()
            )));
        }
        let links: Vec<Option<Link>> = links.into_iter().map(Some).collect();
        Ok(Fabric {
            topology,
            next_events: next_events(&links),
            links,
            unroutable: 0,
            handed: Vec::new(),
            clock: 0,
        })
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// A link of a whole fabric (one built by [`Fabric::new`] or
    /// [`Fabric::join`]); a lane has only its own.
    pub fn link(&self, id: LinkId) -> &Link {
        self.links[id]
            .as_ref()
            .expect("a whole fabric has every link; a lane is joined before it is read")
    }

    pub fn unroutable(&self) -> u64 {
        self.unroutable
    }

    /// A packet `from` a host, read at `packet.arrival`. Anything due
    /// before then moves first; deliveries go to `out`. Returns false if the
    /// packet is addressed to no host (it is counted as unroutable).
    pub fn send(&mut self, from: HostId, packet: Packet, out: &mut Vec<Delivery>) -> bool {
        self.run_until(packet.arrival, out);
        if self.topology.destination(&packet.data).is_none() {
            self.unroutable += 1;
            return false;
        }
        let up = self.topology.index(crate::Hop::HostUp(from));
        self.enter(up, packet);
        true
    }

    /// The earliest time any link has something to do, and which link.
    pub fn next_event(&self) -> Option<(Nanos, LinkId)> {
        earliest(self.next_events.iter().copied())
    }

    /// Runs every link up to `now`, in time order: each packet leaving a
    /// link enters the next at its departure time, or goes to `out` if it
    /// has reached its host.
    pub fn run_until(&mut self, now: Nanos, out: &mut Vec<Delivery>) {
        self.clock = self.clock.max(now);
        while let Some((at, id)) = self.next_event() {
            if at > now {
                return;
            }
            let Some(link) = self.links[id].as_mut() else {
                return; // next_event names only links this fabric runs
            };
            let before = (link.packets_inside(), link.counters().delivered);
            link.advance(at);
            self.forward_due(id, at, out);
            self.refresh(id);
            let Some(link) = self.links[id].as_mut() else {
                return;
            };
            let after = (link.packets_inside(), link.counters().delivered);
            if before == after && link.next_event() == Some(at) {
                // The link announced an event it then did not take (a
                // shaper rounding its own schedule): it settles at `now`,
                // which the next call sees anyway; looping here would not end.
                link.advance(now);
                self.forward_due(id, now, out);
                self.refresh(id);
                return;
            }
        }
    }

    /// Moves on what link `id` lets go by `at`, in the order it leaves.
    fn forward_due(&mut self, id: LinkId, at: Nanos, out: &mut Vec<Delivery>) {
        while let Some((packet, due)) = self.links[id].as_mut().and_then(|link| link.pop_due(at)) {
            self.forward(id, packet, due, out);
        }
    }

    fn forward(&mut self, from: LinkId, mut packet: Packet, due: Nanos, out: &mut Vec<Delivery>) {
        let hop = self.topology.hop(from);
        // Routable on entry, and nothing on the way rewrites addresses.
        let destination = self
            .topology
            .destination(&packet.data)
            .expect("a packet in the fabric has a destination host");
        match self.topology.next(hop, destination) {
            Next::Link(next) => {
                packet.arrival = due;
                let id = self.topology.index(next);
                self.enter(id, packet);
            }
            Next::Deliver(host) => out.push(Delivery { host, packet, due }),
        }
    }
}

impl Fabric {
    /// A packet enters link `id`: this lane's, or handed to the lane that
    /// runs it.
    fn enter(&mut self, id: LinkId, packet: Packet) {
        match self.links[id].as_mut() {
            Some(link) => {
                link.arrive(packet);
                self.refresh(id);
            }
            None => self.handed.push((id, packet)),
        }
    }

    /// Reads link `id`'s next event again, after a change to it.
    pub(crate) fn refresh(&mut self, id: LinkId) {
        self.next_events[id] = self.links[id].as_ref().and_then(Link::next_event);
    }
}

/// Each link's next event (`None` for a link another lane runs).
pub(crate) fn next_events(links: &[Option<Link>]) -> Vec<Option<Nanos>> {
    links
        .iter()
        .map(|link| link.as_ref().and_then(Link::next_event))
        .collect()
}

/// The smallest time among `times`, with its position; ties go to the
/// lowest position, so the order of a run is reproducible.
fn earliest(times: impl Iterator<Item = Option<Nanos>>) -> Option<(Nanos, LinkId)> {
    let mut best: Option<(Nanos, LinkId)> = None;
    for (id, time) in times.enumerate() {
        if let Some(t) = time {
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, id));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Hop;
    use emu_core::log::{Event, LogSink, Record};
    use emu_core::packet::build::ipv4_udp;
    use emu_core::ring::Consumer;
    use emu_core::time::NS_PER_MS;

    use crate::testing::{A, B, C};

    struct Spec {
        delay: Nanos,
        rate: Option<u64>,
        queue: &'static str,
    }

    fn spec(delay_ms: u64, rate: Option<u64>) -> Spec {
        Spec {
            delay: delay_ms * NS_PER_MS,
            rate,
            queue: "infinite",
        }
    }

    /// Hosts A and B on the left, C on the right, one bottleneck; `specs`
    /// in link order (A up, A down, B up, B down, C up, C down, fwd, rev).
    fn fabric(specs: Vec<Spec>) -> (Fabric, Vec<Consumer<Record>>) {
        let topology = crate::testing::two_left_one_right();
        let mut logs = Vec::new();
        let links = specs
            .into_iter()
            .enumerate()
            .map(|(id, s)| {
                let (sink, log) = LogSink::in_memory(1 << 16);
                logs.push(log);
                crate::testing::link(id, s.delay, s.rate, s.queue, sink)
            })
            .collect();
        (Fabric::new(topology, links).unwrap(), logs)
    }

    fn packet(src: [u8; 4], dst: [u8; 4], sport: u16, len: usize, at: Nanos) -> Packet {
        Packet::new(ipv4_udp(src, dst, sport, 9, 0, len), at)
    }

    fn events(log: &mut Consumer<Record>, event: Event) -> Vec<(Nanos, u32)> {
        let mut out = Vec::new();
        while let Ok(r) = log.pop() {
            if r.event == event {
                out.push((r.time, r.flow));
            }
        }
        out
    }

    #[test]
    fn delays_add_up_hop_by_hop() {
        let (mut f, mut logs) = fabric(vec![
            spec(10, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(30, None),
            spec(5, None),
            spec(0, None),
        ]);
        let mut out = Vec::new();
        assert!(f.send(0, packet(A, C, 1, 100, 1_000), &mut out));
        f.run_until(44 * NS_PER_MS, &mut out);
        assert!(out.is_empty(), "not due before 45 ms");
        f.run_until(100 * NS_PER_MS, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].host, 2);
        assert_eq!(out[0].due, 1_000 + 45 * NS_PER_MS);
        // The bottleneck saw it arrive when A's side link let it go.
        let arrivals = events(&mut logs[6], Event::Arrive);
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].0, 1_000 + 10 * NS_PER_MS);
        assert_eq!(f.next_event(), None);
    }

    #[test]
    fn the_bottleneck_serves_packets_in_the_order_they_reach_it() {
        // A's side link is 50 ms, B's 10 ms; A sends first (t = 0), B 20 ms
        // later, so B's packet reaches the bottleneck first (30 ms vs 50 ms)
        // even though the fabric is only run after both were sent.
        let (mut f, mut logs) = fabric(vec![
            spec(50, None),
            spec(0, None),
            spec(10, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, Some(12_000_000)),
            spec(0, None),
        ]);
        let mut out = Vec::new();
        f.send(0, packet(A, C, 1, 1500, 0), &mut out);
        f.send(1, packet(B, C, 2, 1500, 20 * NS_PER_MS), &mut out);
        f.run_until(200 * NS_PER_MS, &mut out);
        let served: Vec<Nanos> = out.iter().map(|d| d.due).collect();
        // 1500 bytes at 12 Mbit/s take 1 ms.
        assert_eq!(served, vec![31 * NS_PER_MS, 51 * NS_PER_MS]);
        let sources: Vec<[u8; 4]> = out
            .iter()
            .map(|d| d.packet.data[12..16].try_into().unwrap())
            .collect();
        assert_eq!(sources, vec![B, A]);
        let arrivals = events(&mut logs[6], Event::Arrive);
        assert_eq!(
            arrivals.iter().map(|a| a.0).collect::<Vec<_>>(),
            vec![30 * NS_PER_MS, 50 * NS_PER_MS]
        );
    }

    #[test]
    fn a_busy_bottleneck_queues_the_second_flow_behind_the_first() {
        let (mut f, _) = fabric(vec![
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, Some(12_000_000)),
            spec(0, None),
        ]);
        let mut out = Vec::new();
        f.send(0, packet(A, C, 1, 1500, 0), &mut out);
        f.send(1, packet(B, C, 2, 1500, 100_000), &mut out);
        f.run_until(NS_PER_MS * 10, &mut out);
        let due: Vec<Nanos> = out.iter().map(|d| d.due).collect();
        assert_eq!(due, vec![NS_PER_MS, 2 * NS_PER_MS]);
    }

    #[test]
    fn replies_cross_the_bottleneck_in_reverse() {
        let mut specs: Vec<Spec> = (0..8).map(|_| spec(0, None)).collect();
        specs[7] = spec(7, None);
        let (mut f, _) = fabric(specs);
        let mut out = Vec::new();
        f.send(2, packet(C, B, 1, 60, 0), &mut out);
        f.run_until(NS_PER_MS * 10, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].host, out[0].due), (1, 7 * NS_PER_MS));
        assert_eq!(
            f.link(f.topology().index(Hop::Reverse(0)))
                .counters()
                .delivered,
            1
        );
        assert_eq!(
            f.link(f.topology().index(Hop::Forward(0)))
                .counters()
                .arrived,
            0
        );
    }

    #[test]
    fn next_event_is_the_earliest_across_links() {
        let (mut f, _) = fabric(vec![
            spec(30, None),
            spec(0, None),
            spec(20, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
            spec(0, None),
        ]);
        let mut out = Vec::new();
        f.send(0, packet(A, C, 1, 100, 0), &mut out);
        f.send(1, packet(B, C, 1, 100, 0), &mut out);
        assert_eq!(f.next_event(), Some((20 * NS_PER_MS, 2)));
        f.run_until(20 * NS_PER_MS, &mut out);
        assert_eq!(f.next_event(), Some((30 * NS_PER_MS, 0)));
    }

    #[test]
    fn unaddressed_packets_are_counted_not_carried() {
        let (mut f, _) = fabric((0..8).map(|_| spec(0, None)).collect());
        let mut out = Vec::new();
        assert!(!f.send(0, packet(A, [192, 0, 2, 1], 1, 100, 0), &mut out));
        assert_eq!(f.unroutable(), 1);
        assert_eq!(f.next_event(), None);
        assert_eq!(f.link(0).counters().arrived, 0);
    }

    /// Overload a small drop-tail bottleneck from two hosts: on every link,
    /// arrived = delivered + dropped + queued, and each link passes on to
    /// the next exactly what it delivered.
    #[test]
    fn every_packet_is_accounted_for_on_every_link() {
        let mut specs: Vec<Spec> = (0..8).map(|_| spec(1, None)).collect();
        specs[6] = Spec {
            delay: 2 * NS_PER_MS,
            rate: Some(10_000_000),
            queue: "droptail packets 20",
        };
        let (mut f, _) = fabric(specs);
        let mut out = Vec::new();
        let mut sent = 0u64;
        for k in 0..2_000u64 {
            let (from, src) = if k % 3 == 0 { (1, B) } else { (0, A) };
            let at = k * 200_000; // 60 Mbit/s of 1500-byte packets in
            f.send(from, packet(src, C, k as u16, 1500, at), &mut out);
            sent += 1;
            if k % 500 == 0 {
                f.send(2, packet(C, A, 7, 60, at), &mut out);
                sent += 1;
            }
        }
        f.run_until(300 * NS_PER_MS, &mut out);
        let mut delivered_to_hosts = 0;
        for id in 0..f.topology().link_count() {
            let link = f.link(id);
            let c = link.counters();
            assert_eq!(
                c.arrived,
                c.delivered + c.dropped_total() + link.packets_inside(),
                "link {id}"
            );
            if let Hop::HostDown(_) = f.topology().hop(id) {
                delivered_to_hosts += c.delivered;
            }
        }
        let t = f.topology();
        let up = |h| f.link(t.index(Hop::HostUp(h))).counters().delivered;
        assert_eq!(
            up(0) + up(1),
            f.link(t.index(Hop::Forward(0))).counters().arrived
        );
        assert_eq!(
            f.link(t.index(Hop::Forward(0))).counters().delivered,
            f.link(t.index(Hop::HostDown(2))).counters().arrived
        );
        let bottleneck = f.link(t.index(Hop::Forward(0))).counters();
        assert!(bottleneck.dropped_total() > 0, "the queue overflowed");
        let dropped: u64 = (0..t.link_count())
            .map(|id| f.link(id).counters().dropped_total())
            .sum();
        assert_eq!(out.len() as u64, delivered_to_hosts);
        let queued: u64 = (0..t.link_count())
            .map(|id| f.link(id).packets_inside())
            .sum();
        assert_eq!(sent, delivered_to_hosts + dropped + queued);
    }
}
