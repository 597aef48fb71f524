//! A fabric split into two lanes, one per direction across the
//! bottlenecks, so that two threads can carry an experiment's packets.
//!
//! The lane of a side runs what that side's hosts send: their side links
//! up, the bottlenecks' directions away from them, and the far side's
//! links down. The two lanes share no link, so each runs its own links in
//! time order exactly as the whole fabric would, and a packet from one
//! side to the other never leaves its lane.
//!
//! The one path that crosses lanes is between two hosts of the same side
//! (they meet at their router): such a packet leaves its side link up in
//! one lane and enters its destination's side link down, which the other
//! lane runs. The lane that let it go keeps it ([`Fabric::take_handed`]);
//! its carrier passes it on, and the other lane admits it
//! ([`Fabric::admit`]) no earlier than its own clock: a link is never
//! given an arrival in its past. Cost: such a packet reaches the link as
//! late as the hand-over is, microseconds with both lanes busy and a
//! wake-up when the other lane sleeps; no bottleneck lies on that path.

use crate::fabric::{next_events, Delivery, Fabric, FabricError};
use crate::topology::{Hop, LinkId, Side};
use emu_core::Packet;
use link::Link;

impl Fabric {
    /// Splits a whole fabric into the lane of the left side's hosts and the
    /// lane of the right side's (in that order).
    pub fn split_by_side(self) -> [Fabric; 2] {
        let Fabric {
            topology,
            links,
            unroutable,
            handed,
            clock,
            ..
        } = self;
        let mut left = Vec::with_capacity(links.len());
        let mut right = Vec::with_capacity(links.len());
        for (id, link) in links.into_iter().enumerate() {
            if lane_of(&topology, id) == Side::Left {
                left.push(link);
                right.push(None);
            } else {
                left.push(None);
                right.push(link);
            }
        }
        let lane = |links: Vec<Option<Link>>, unroutable, handed| Fabric {
            topology: topology.clone(),
            next_events: next_events(&links),
            links,
            unroutable,
            handed,
            clock,
        };
        [lane(left, unroutable, handed), lane(right, 0, Vec::new())]
    }

    /// The whole fabric again, from its two lanes. A packet one lane handed
    /// and the other had not admitted (the carriers stopped in between)
    /// enters its link, counted there as queued.
    pub fn join(lanes: [Fabric; 2]) -> Result<Fabric, FabricError> {
        let [first, second] = lanes;
        if first.links.len() != second.links.len() {
            return Err(FabricError(format!(
                "lanes of {} and {} links cannot be joined",
                first.links.len(),
                second.links.len()
            )));
        }
        let mut handed = first.handed;
        handed.extend(second.handed);
        let mut links = Vec::with_capacity(first.links.len());
        for (id, pair) in first.links.into_iter().zip(second.links).enumerate() {
            match pair {
                (Some(link), None) | (None, Some(link)) => links.push(Some(link)),
                _ => {
                    return Err(FabricError(format!(
                        "link {id} is in neither lane or in both"
                    )))
                }
            }
        }
        let mut whole = Fabric {
            topology: first.topology,
            next_events: next_events(&links),
            links,
            unroutable: first.unroutable + second.unroutable,
            handed: Vec::new(),
            clock: first.clock.max(second.clock),
        };
        for (id, packet) in handed {
            whole.enter_queued(id, packet);
        }
        Ok(whole)
    }

    /// Takes the packets this lane let go towards another lane's links,
    /// each with the link it enters; its `arrival` is when it left.
    pub fn take_handed(&mut self, into: &mut Vec<(LinkId, Packet)>) {
        into.append(&mut self.handed);
    }

    /// A packet another lane handed over enters link `id`, at the time it
    /// left there or at this lane's clock if that is later. Anything due
    /// before then moves first; deliveries go to `out`. A packet for a link
    /// this lane does not run is handed on again.
    pub fn admit(&mut self, id: LinkId, mut packet: Packet, out: &mut Vec<Delivery>) {
        if !self.runs(id) {
            self.handed.push((id, packet));
            return;
        }
        packet.arrival = packet.arrival.max(self.clock);
        self.run_until(packet.arrival, out);
        if let Some(link) = self.links[id].as_mut() {
            link.arrive(packet);
            self.refresh(id);
        }
    }

    /// A packet handed to this lane that it will not admit (its carrier
    /// has stopped): kept until the lanes are joined, where it enters its
    /// link as queued.
    pub fn keep_handed(&mut self, id: LinkId, packet: Packet) {
        self.handed.push((id, packet));
    }

    /// Whether this fabric runs link `id` (a whole fabric runs every link).
    pub fn runs(&self, id: LinkId) -> bool {
        self.links.get(id).is_some_and(Option::is_some)
    }

    fn enter_queued(&mut self, id: LinkId, mut packet: Packet) {
        if let Some(link) = self.links.get_mut(id).and_then(Option::as_mut) {
            packet.arrival = packet.arrival.max(self.clock);
            link.arrive(packet);
            self.refresh(id);
        }
    }
}

/// The lane that runs link `id`: the side whose hosts' packets it carries.
fn lane_of(topology: &crate::Topology, id: LinkId) -> Side {
    match topology.hop(id) {
        Hop::HostUp(host) => topology.side(host),
        Hop::HostDown(host) => match topology.side(host) {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        },
        Hop::Forward(_) => Side::Left,
        Hop::Reverse(_) => Side::Right,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::log::LogSink;
    use emu_core::packet::build::ipv4_udp;
    use emu_core::time::NS_PER_MS;
    use emu_core::Nanos;

    use crate::testing::{A, B, C};

    /// A and B on the left, C on the right, one 12 Mbit/s drop-tail
    /// bottleneck each way; side links of 1, 2 and 3 ms.
    fn dumbbell() -> Fabric {
        let topology = crate::testing::two_left_one_right();
        let links = (0..topology.link_count())
            .map(|id| {
                let bottleneck = matches!(topology.hop(id), Hop::Forward(_) | Hop::Reverse(_));
                let delay = match topology.hop(id) {
                    Hop::HostUp(h) | Hop::HostDown(h) => (h as Nanos + 1) * NS_PER_MS,
                    _ => 5 * NS_PER_MS,
                };
                let (rate, queue) = if bottleneck {
                    (Some(12_000_000), "droptail packets 30")
                } else {
                    (None, "infinite")
                };
                crate::testing::link(id, delay, rate, queue, LogSink::disabled())
            })
            .collect();
        Fabric::new(topology, links).unwrap()
    }

    fn packet(src: [u8; 4], dst: [u8; 4], sport: u16, len: usize, at: Nanos) -> Packet {
        Packet::new(ipv4_udp(src, dst, sport, 9, 0, len), at)
    }

    /// (host, due, source port) of each delivery, in delivery order per host.
    fn summary(out: &[Delivery]) -> Vec<(usize, Nanos, u16)> {
        let mut s: Vec<_> = out
            .iter()
            .map(|d| {
                let sport = u16::from_be_bytes([d.packet.data[20], d.packet.data[21]]);
                (d.host, d.due, sport)
            })
            .collect();
        s.sort_by_key(|&(host, due, _)| (host, due));
        s
    }

    fn counters(f: &Fabric) -> Vec<(u64, u64, u64, u64)> {
        (0..f.topology().link_count())
            .map(|id| {
                let l = f.link(id);
                let c = l.counters();
                (
                    c.arrived,
                    c.delivered,
                    c.dropped_total(),
                    l.packets_inside(),
                )
            })
            .collect()
    }

    /// Overloads both bottlenecks from both sides, the sends interleaved
    /// with runs as a carrier would: the lanes deliver the same packets at
    /// the same instants as the whole fabric, and every link ends with the
    /// same counts.
    #[test]
    fn lanes_carry_traffic_across_the_bottlenecks_as_the_whole_fabric_does() {
        let mut whole = dumbbell();
        let mut lanes = dumbbell().split_by_side();
        let (mut whole_out, mut lane_out) = (Vec::new(), Vec::new());
        let mut handed = Vec::new();
        for k in 0..3_000u64 {
            let at = k * 300_000; // 40 Mbit/s of 1500-byte packets each way
            let (from, src, dst) = match k % 4 {
                0 => (0, A, C),
                1 => (1, B, C),
                2 => (2, C, A),
                _ => (2, C, B),
            };
            let len = if k % 7 == 0 { 60 } else { 1500 };
            whole.send(from, packet(src, dst, k as u16, len, at), &mut whole_out);
            let lane = if from == 2 { 1 } else { 0 };
            lanes[lane].send(from, packet(src, dst, k as u16, len, at), &mut lane_out);
            if k % 10 == 9 {
                whole.run_until(at, &mut whole_out);
                for lane in lanes.iter_mut() {
                    lane.run_until(at, &mut lane_out);
                    lane.take_handed(&mut handed);
                }
            }
        }
        for lane in lanes.iter_mut() {
            lane.run_until(2_000 * NS_PER_MS, &mut lane_out);
            lane.take_handed(&mut handed);
        }
        whole.run_until(2_000 * NS_PER_MS, &mut whole_out);
        assert!(handed.is_empty(), "no packet crosses lanes between sides");
        assert!(whole_out.len() > 1_000, "{} delivered", whole_out.len());
        assert_eq!(summary(&lane_out), summary(&whole_out));
        let joined = Fabric::join(lanes).unwrap();
        let dropped: u64 = counters(&joined).iter().map(|c| c.2).sum();
        assert!(dropped > 0, "the bottlenecks were overloaded");
        assert_eq!(counters(&joined), counters(&whole));
    }

    #[test]
    fn a_packet_between_hosts_of_one_side_crosses_lanes() {
        let [mut left, mut right] = dumbbell().split_by_side();
        let mut out = Vec::new();
        left.send(0, packet(A, B, 1, 100, 0), &mut out);
        left.run_until(10 * NS_PER_MS, &mut out);
        assert!(out.is_empty());
        let mut handed = Vec::new();
        left.take_handed(&mut handed);
        assert_eq!(handed.len(), 1);
        let (id, packet) = handed.pop().unwrap();
        assert_eq!(left.topology().hop(id), Hop::HostDown(1));
        // A's side link let it go at 1 ms.
        assert_eq!(packet.arrival, NS_PER_MS);
        // The right lane has run to 4 ms already: the packet enters B's
        // link then, not in the link's past, and leaves 2 ms later.
        right.run_until(4 * NS_PER_MS, &mut out);
        right.admit(id, packet, &mut out);
        right.run_until(20 * NS_PER_MS, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].host, out[0].due), (1, 6 * NS_PER_MS));
    }

    #[test]
    fn a_packet_for_a_link_the_lane_does_not_run_is_handed_on() {
        let [mut left, _] = dumbbell().split_by_side();
        let id = left.topology().index(Hop::HostDown(0));
        assert!(!left.runs(id));
        let mut out = Vec::new();
        left.admit(id, packet(C, A, 1, 100, 0), &mut out);
        let mut handed = Vec::new();
        left.take_handed(&mut handed);
        assert_eq!(handed.len(), 1);
        assert_eq!(handed[0].0, id);
    }

    /// Stopped between a hand-over and its admission, the packet is in its
    /// link when the lanes are joined, and every link's count balances.
    #[test]
    fn joining_counts_a_packet_between_lanes_as_queued() {
        let [mut left, right] = dumbbell().split_by_side();
        let mut out = Vec::new();
        left.send(0, packet(A, B, 1, 100, 0), &mut out);
        left.send(0, packet(A, C, 2, 100, 0), &mut out);
        left.run_until(3 * NS_PER_MS, &mut out);
        let whole = Fabric::join([left, right]).unwrap();
        let down_b = whole.topology().index(Hop::HostDown(1));
        assert_eq!(whole.link(down_b).counters().arrived, 1);
        assert_eq!(whole.link(down_b).packets_inside(), 1);
        let inside: u64 = counters(&whole).iter().map(|c| c.3).sum();
        assert_eq!(inside, 2, "one on B's link, one on its way to C");
        for (id, c) in counters(&whole).into_iter().enumerate() {
            assert_eq!(c.0, c.1 + c.2 + c.3, "link {id}");
        }
    }

    #[test]
    fn lanes_of_different_fabrics_are_not_joined() {
        let [left, _] = dumbbell().split_by_side();
        let [_, right_of_another] = dumbbell().split_by_side();
        let [left_again, _] = dumbbell().split_by_side();
        assert!(Fabric::join([left, left_again]).is_err());
        drop(right_of_another);
    }
}
