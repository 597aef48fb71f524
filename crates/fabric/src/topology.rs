//! Who is where, and which link a packet takes next.

use std::collections::HashMap;
use std::fmt;
use std::net::Ipv4Addr;

/// Index of a host, in the order the topology was given.
pub type HostId = usize;
/// Index of one link direction in a [`Fabric`](crate::Fabric)'s links.
pub type LinkId = usize;

/// The side of the bottleneck(s) a host is on. Packets from left to right
/// cross the bottlenecks forward (first to last), right to left in reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    Left,
    Right,
}

/// One link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hop {
    /// A host's side link, from the host to its router.
    HostUp(HostId),
    /// A host's side link, from its router to the host.
    HostDown(HostId),
    /// Bottleneck `n` (0 = nearest the left side), left to right.
    Forward(usize),
    /// Bottleneck `n`, right to left.
    Reverse(usize),
}

/// Where a packet goes after the link it just left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Link(Hop),
    /// Written into this host's TUN device.
    Deliver(HostId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyError(pub String);

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TopologyError {}

/// Hosts (side and address) and the number of bottlenecks in series.
///
/// Links are numbered: host `h`'s up and down links are `2h` and `2h + 1`;
/// bottleneck `b`'s forward and reverse directions follow all hosts'.
#[derive(Debug, Clone)]
pub struct Topology {
    sides: Vec<Side>,
    addresses: Vec<Ipv4Addr>,
    by_address: HashMap<Ipv4Addr, HostId>,
    bottlenecks: usize,
}

impl Topology {
    pub fn new(
        hosts: Vec<(Side, Ipv4Addr)>,
        bottlenecks: usize,
    ) -> Result<Topology, TopologyError> {
        let mut by_address = HashMap::new();
        for (id, (_, address)) in hosts.iter().enumerate() {
            if by_address.insert(*address, id).is_some() {
                return Err(TopologyError(format!(
                    "two hosts have the address {address}"
                )));
            }
        }
        Ok(Topology {
            sides: hosts.iter().map(|h| h.0).collect(),
            addresses: hosts.iter().map(|h| h.1).collect(),
            by_address,
            bottlenecks,
        })
    }

    pub fn hosts(&self) -> usize {
        self.sides.len()
    }

    pub fn bottlenecks(&self) -> usize {
        self.bottlenecks
    }

    pub fn side(&self, host: HostId) -> Side {
        self.sides[host]
    }

    pub fn address(&self, host: HostId) -> Ipv4Addr {
        self.addresses[host]
    }

    pub fn link_count(&self) -> usize {
        2 * self.hosts() + 2 * self.bottlenecks
    }

    pub fn index(&self, hop: Hop) -> LinkId {
        let hosts = self.hosts();
        match hop {
            Hop::HostUp(h) => 2 * h,
            Hop::HostDown(h) => 2 * h + 1,
            Hop::Forward(b) => 2 * hosts + 2 * b,
            Hop::Reverse(b) => 2 * hosts + 2 * b + 1,
        }
    }

    pub fn hop(&self, link: LinkId) -> Hop {
        let hosts = self.hosts();
        if link < 2 * hosts {
            if link.is_multiple_of(2) {
                Hop::HostUp(link / 2)
            } else {
                Hop::HostDown(link / 2)
            }
        } else {
            let b = (link - 2 * hosts) / 2;
            if link.is_multiple_of(2) {
                Hop::Forward(b)
            } else {
                Hop::Reverse(b)
            }
        }
    }

    /// The host a packet is addressed to, from its IPv4 destination; `None`
    /// for anything else (no host has that address, or not IPv4).
    pub fn destination(&self, packet: &[u8]) -> Option<HostId> {
        if packet.len() < 20 || packet[0] >> 4 != 4 {
            return None;
        }
        let dst = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
        self.by_address.get(&dst).copied()
    }

    /// The link after `from` for a packet to `destination`. Hosts on the
    /// same side meet at their router without crossing a bottleneck.
    pub fn next(&self, from: Hop, destination: HostId) -> Next {
        let last = self.bottlenecks.checked_sub(1);
        let arrive = Next::Link(Hop::HostDown(destination));
        match from {
            Hop::HostUp(source) => {
                if self.side(source) == self.side(destination) {
                    return arrive;
                }
                match (self.side(source), last) {
                    (_, None) => arrive,
                    (Side::Left, Some(_)) => Next::Link(Hop::Forward(0)),
                    (Side::Right, Some(last)) => Next::Link(Hop::Reverse(last)),
                }
            }
            Hop::Forward(b) if Some(b) == last => arrive,
            Hop::Forward(b) => Next::Link(Hop::Forward(b + 1)),
            Hop::Reverse(0) => arrive,
            Hop::Reverse(b) => Next::Link(Hop::Reverse(b - 1)),
            Hop::HostDown(host) => Next::Deliver(host),
        }
    }

    /// Every link a packet from `source` to `destination` crosses, in order.
    pub fn path(&self, source: HostId, destination: HostId) -> Vec<Hop> {
        let mut hops = vec![Hop::HostUp(source)];
        while let Next::Link(hop) = self.next(*hops.last().expect("not empty"), destination) {
            hops.push(hop);
        }
        hops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumbbell(bottlenecks: usize) -> Topology {
        Topology::new(
            vec![
                (Side::Left, Ipv4Addr::new(10, 0, 0, 1)),
                (Side::Left, Ipv4Addr::new(10, 0, 0, 2)),
                (Side::Right, Ipv4Addr::new(10, 0, 0, 3)),
            ],
            bottlenecks,
        )
        .unwrap()
    }

    #[test]
    fn left_to_right_crosses_every_bottleneck_forward() {
        let t = dumbbell(3);
        assert_eq!(
            t.path(0, 2),
            vec![
                Hop::HostUp(0),
                Hop::Forward(0),
                Hop::Forward(1),
                Hop::Forward(2),
                Hop::HostDown(2)
            ]
        );
    }

    #[test]
    fn right_to_left_crosses_them_in_reverse() {
        let t = dumbbell(2);
        assert_eq!(
            t.path(2, 1),
            vec![
                Hop::HostUp(2),
                Hop::Reverse(1),
                Hop::Reverse(0),
                Hop::HostDown(1)
            ]
        );
    }

    #[test]
    fn hosts_on_one_side_meet_at_their_router() {
        let t = dumbbell(1);
        assert_eq!(t.path(0, 1), vec![Hop::HostUp(0), Hop::HostDown(1)]);
        assert_eq!(t.next(Hop::HostDown(1), 1), Next::Deliver(1));
    }

    #[test]
    fn without_a_bottleneck_the_sides_meet_directly() {
        let t = dumbbell(0);
        assert_eq!(t.path(0, 2), vec![Hop::HostUp(0), Hop::HostDown(2)]);
    }

    #[test]
    fn link_numbers_round_trip() {
        let t = dumbbell(2);
        assert_eq!(t.link_count(), 10);
        let hops: Vec<Hop> = (0..t.link_count()).map(|l| t.hop(l)).collect();
        for (l, hop) in hops.iter().enumerate() {
            assert_eq!(t.index(*hop), l);
        }
        assert_eq!(hops[5], Hop::HostDown(2));
        assert_eq!(hops[6], Hop::Forward(0));
        assert_eq!(hops[9], Hop::Reverse(1));
    }

    #[test]
    fn destination_is_read_from_the_ipv4_header() {
        let t = dumbbell(1);
        let to_third =
            emu_core::packet::build::ipv4_udp([10, 0, 0, 1], [10, 0, 0, 3], 1, 2, 0, 100);
        assert_eq!(t.destination(&to_third), Some(2));
        let elsewhere =
            emu_core::packet::build::ipv4_udp([10, 0, 0, 1], [10, 0, 0, 9], 1, 2, 0, 100);
        assert_eq!(t.destination(&elsewhere), None);
        let v6 = emu_core::packet::build::ipv6_udp([0; 16], [0; 16], 1, 2, 0, 100);
        assert_eq!(t.destination(&v6), None);
    }

    #[test]
    fn duplicate_addresses_are_refused() {
        let a = Ipv4Addr::new(10, 0, 0, 1);
        assert!(Topology::new(vec![(Side::Left, a), (Side::Right, a)], 1).is_err());
    }
}
