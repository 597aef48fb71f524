//! Flow names: the protocol and 5-tuple behind a flow hash, so a report can
//! say `tcp 10.0.0.2:40312 → 100.64.0.1:5201` where the per-packet records
//! only carry the 32-bit hash.
//!
//! A shell writes a *flow record* (event [`Event::Flow`]) the first time it
//! sees a flow in a direction, just before that packet's `arrive` record.
//! The per-packet record stays 48 bytes: an IPv4 tuple fits in one record,
//! an IPv6 tuple takes two consecutive ones (source half, then destination
//! half). The layout is in docs/log-format.md.

use crate::log::record::{Direction, Event, Record};
use crate::packet::{ip_version, transport};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `detail` of a flow record: which part of a tuple it carries.
const IPV4: u8 = 4;
const IPV6_SOURCE: u8 = 6;
const IPV6_DESTINATION: u8 = 7;

/// What identifies a flow: protocol, addresses and (for TCP, UDP, SCTP and
/// UDP-Lite) ports, as the packet carried them where it was seen.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FlowTuple {
    /// IP protocol number (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6, ...).
    pub protocol: u8,
    pub source: IpAddr,
    pub destination: IpAddr,
    /// 0 for protocols without ports.
    pub source_port: u16,
    pub destination_port: u16,
}

impl FlowTuple {
    /// The tuple of an IP packet; None for anything else (those flows keep
    /// their hash as their only name).
    pub fn of(data: &[u8]) -> Option<FlowTuple> {
        let (source, destination) = match ip_version(data)? {
            4 => (
                IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(&data[12..16]).ok()?)),
                IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(&data[16..20]).ok()?)),
            ),
            _ => (
                IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&data[8..24]).ok()?)),
                IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&data[24..40]).ok()?)),
            ),
        };
        let (protocol, offset) = transport(data)?;
        // The same protocols flow_hash takes ports from, so one hash has
        // one tuple.
        let ports = matches!(protocol, 6 | 17 | 132 | 136)
            .then(|| data.get(offset..offset + 4))
            .flatten()
            .map_or((0, 0), |p| {
                (
                    u16::from_be_bytes([p[0], p[1]]),
                    u16::from_be_bytes([p[2], p[3]]),
                )
            });
        Some(FlowTuple {
            protocol,
            source,
            destination,
            source_port: ports.0,
            destination_port: ports.1,
        })
    }

    /// The protocol's usual name, or its number.
    pub fn protocol_name(&self) -> String {
        match self.protocol {
            1 => "icmp".into(),
            6 => "tcp".into(),
            17 => "udp".into(),
            58 => "icmpv6".into(),
            132 => "sctp".into(),
            136 => "udplite".into(),
            n => format!("proto{n}"),
        }
    }

    fn has_ports(&self) -> bool {
        matches!(self.protocol, 6 | 17 | 132 | 136)
    }

    /// True if either port is `port`.
    pub fn has_port(&self, port: u16) -> bool {
        self.has_ports() && (self.source_port == port || self.destination_port == port)
    }

    /// True if either address is `address`.
    pub fn has_address(&self, address: IpAddr) -> bool {
        self.source == address || self.destination == address
    }

    /// The flow records that name this tuple (one for IPv4, two for IPv6).
    pub fn records(
        &self,
        time: Nanos,
        flow: u32,
        shell: u8,
        direction: Direction,
    ) -> ([Record; 2], usize) {
        let base = Record {
            time,
            flow,
            shell,
            direction,
            event: Event::Flow,
            ecn: self.protocol,
            ..Record::default()
        };
        let ports = (self.source_port as u32) << 16 | self.destination_port as u32;
        match (self.source, self.destination) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let one = Record {
                    detail: IPV4,
                    fingerprint: u32::from(s),
                    bytes: u32::from(d),
                    queue_bytes: ports,
                    ..base
                };
                ([one, one], 1)
            }
            (s, d) => {
                let (s, d) = (v6(s), v6(d));
                let half = |address: Ipv6Addr, detail: u8| {
                    let o = address.octets();
                    let word = |i: usize| u32::from_le_bytes(o[i..i + 4].try_into().unwrap());
                    Record {
                        detail,
                        sojourn: u64::from_le_bytes(o[0..8].try_into().unwrap()),
                        fingerprint: word(8),
                        bytes: word(12),
                        queue_bytes: ports,
                        ..base
                    }
                };
                ([half(s, IPV6_SOURCE), half(d, IPV6_DESTINATION)], 2)
            }
        }
    }
}

fn v6(address: IpAddr) -> Ipv6Addr {
    match address {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

impl fmt::Display for FlowTuple {
    /// `tcp 10.0.0.2:40312 → 100.64.0.1:5201`; IPv6 addresses in brackets
    /// when a port follows; no ports for ICMP and the like.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = |address: IpAddr, port: u16| match (address, self.has_ports()) {
            (IpAddr::V6(a), true) => format!("[{a}]:{port}"),
            (a, true) => format!("{a}:{port}"),
            (a, false) => a.to_string(),
        };
        write!(
            f,
            "{} {} → {}",
            self.protocol_name(),
            end(self.source, self.source_port),
            end(self.destination, self.destination_port)
        )
    }
}

/// The writer's side: remembers which flows a direction has named, so each
/// is named once. Memory grows with the number of flows, not packets.
#[derive(Debug, Default)]
pub struct FlowNamer {
    named: HashSet<u32>,
}

impl FlowNamer {
    /// The flow records to write before the first packet of flow `flow`
    /// (none if it was named before or is not IP).
    pub fn first_sight(
        &mut self,
        data: &[u8],
        time: Nanos,
        flow: u32,
        shell: u8,
        direction: Direction,
    ) -> Option<([Record; 2], usize)> {
        if self.named.contains(&flow) {
            return None;
        }
        self.named.insert(flow);
        FlowTuple::of(data).map(|t| t.records(time, flow, shell, direction))
    }
}

/// The reader's side: puts flow records back together into tuples, keyed by
/// (shell, direction, flow hash).
#[derive(Debug, Default)]
pub struct FlowTable {
    names: HashMap<(u8, Direction, u32), FlowTuple>,
    /// The source half of an IPv6 tuple, waiting for its destination half.
    pending: Option<Record>,
}

impl FlowTable {
    /// Takes a flow record; other records are ignored. A half without its
    /// other half (a damaged log) names nothing.
    pub fn add(&mut self, r: &Record) {
        if r.event != Event::Flow {
            return;
        }
        let ports = (
            (r.queue_bytes >> 16) as u16,
            (r.queue_bytes & 0xffff) as u16,
        );
        let tuple = |source: IpAddr, destination: IpAddr| FlowTuple {
            protocol: r.ecn,
            source,
            destination,
            source_port: ports.0,
            destination_port: ports.1,
        };
        let address = |r: &Record| {
            let mut o = [0u8; 16];
            o[0..8].copy_from_slice(&r.sojourn.to_le_bytes());
            o[8..12].copy_from_slice(&r.fingerprint.to_le_bytes());
            o[12..16].copy_from_slice(&r.bytes.to_le_bytes());
            IpAddr::V6(Ipv6Addr::from(o))
        };
        let named = match r.detail {
            IPV4 => Some(tuple(
                IpAddr::V4(Ipv4Addr::from(r.fingerprint)),
                IpAddr::V4(Ipv4Addr::from(r.bytes)),
            )),
            IPV6_SOURCE => {
                self.pending = Some(*r);
                None
            }
            IPV6_DESTINATION => self
                .pending
                .take()
                .filter(|s| s.flow == r.flow && s.shell == r.shell)
                .map(|s| tuple(address(&s), address(r))),
            _ => None,
        };
        if let Some(t) = named {
            self.names
                .entry((r.shell, r.direction, r.flow))
                .or_insert(t);
        }
    }

    /// The tuple of `flow` as shell `shell` saw it in `direction`.
    pub fn get(&self, shell: u8, direction: Direction, flow: u32) -> Option<&FlowTuple> {
        self.names.get(&(shell, direction, flow))
    }

    /// Every flow shell `shell` named in `direction`, with its tuple.
    pub fn seen_by(
        &self,
        shell: u8,
        direction: Direction,
    ) -> impl Iterator<Item = (u32, &FlowTuple)> + '_ {
        self.names
            .iter()
            .filter(move |((s, d, _), _)| *s == shell && *d == direction)
            .map(|((_, _, flow), tuple)| (*flow, tuple))
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::RECORD_SIZE;
    use crate::packet::flow_hash;

    fn tcp4(sport: u16, dport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&40u16.to_be_bytes());
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 2]);
        p[16..20].copy_from_slice(&[100, 64, 0, 1]);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    fn udp6() -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0] = 0x60;
        p[6] = 17;
        p[8..24].copy_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
        p[24..40].copy_from_slice(&"fd00:1::abcd".parse::<Ipv6Addr>().unwrap().octets());
        p[40..42].copy_from_slice(&443u16.to_be_bytes());
        p[42..44].copy_from_slice(&50000u16.to_be_bytes());
        p
    }

    /// Records survive the 48-byte encoding and come back as the tuple.
    fn round_trip(packet: &[u8], direction: Direction) -> (Option<FlowTuple>, usize) {
        let mut namer = FlowNamer::default();
        let flow = flow_hash(packet);
        let (records, n) = namer
            .first_sight(packet, 7, flow, 2, direction)
            .expect("first sight names");
        assert!(namer.first_sight(packet, 8, flow, 2, direction).is_none());
        let mut table = FlowTable::default();
        for r in &records[..n] {
            let mut bytes = [0u8; RECORD_SIZE];
            r.encode(&mut bytes);
            table.add(&Record::decode(&bytes).unwrap());
        }
        (table.get(2, direction, flow).cloned(), n)
    }

    #[test]
    fn ipv4_tcp_is_named_in_one_record() {
        let (tuple, n) = round_trip(&tcp4(40312, 5201), Direction::Uplink);
        assert_eq!(n, 1);
        let tuple = tuple.unwrap();
        assert_eq!(tuple.to_string(), "tcp 10.0.0.2:40312 → 100.64.0.1:5201");
        assert!(tuple.has_port(5201) && !tuple.has_port(80));
        assert!(tuple.has_address("100.64.0.1".parse().unwrap()));
    }

    #[test]
    fn ipv6_udp_is_named_in_two_records() {
        let (tuple, n) = round_trip(&udp6(), Direction::Downlink);
        assert_eq!(n, 2);
        assert_eq!(
            tuple.unwrap().to_string(),
            "udp [fd00::1]:443 → [fd00:1::abcd]:50000"
        );
    }

    #[test]
    fn icmp_has_no_ports_and_a_lone_half_names_nothing() {
        let mut p = tcp4(0, 0);
        p[9] = 1;
        let (tuple, _) = round_trip(&p, Direction::Uplink);
        assert_eq!(tuple.unwrap().to_string(), "icmp 10.0.0.2 → 100.64.0.1");
        let mut table = FlowTable::default();
        let (records, _) = FlowTuple::of(&udp6())
            .unwrap()
            .records(1, 9, 0, Direction::Uplink);
        table.add(&records[1]);
        assert!(table.is_empty());
    }
}
