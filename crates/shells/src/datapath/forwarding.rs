//! Forwarding between the shells of one chain without the kernel.
//!
//! Between two nested shells of one emu lies a namespace that holds nothing
//! but the two TUN devices that join them: the outer device of the inner
//! shell and the inner device of the outer shell. All its kernel does with
//! a packet one shell writes there is route it into the other shell's
//! device (decrementing the TTL) for emu to read again: a write, a pass
//! through the kernel's forwarding path, a wake-up and a read, at every
//! hop. emu takes that decision itself instead, from the same addresses
//! and routes the namespace was given, and hands the packet from one
//! shell's model to the next in memory.
//!
//! Everything the kernel would do more than forward stays with the kernel:
//! a packet addressed to the namespace itself, one whose TTL or hop limit
//! ends there (the kernel answers it with ICMP, so traceroute still sees
//! every shell), multicast, link-local and other special addresses, IPv4
//! options and IPv6 hop-by-hop headers. Such a packet is written to the
//! device as before.

use crate::sys::addressing::{overlaps, AddressPair};
use emu_core::packet::set_ipv4_word;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where the kernel of an intermediate namespace sends a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Towards the command: into the inner shell's outer device.
    Inward,
    /// Towards the host: into the outer shell's inner device.
    Outward,
    /// To the namespace itself, or something only its kernel handles.
    Kernel,
}

/// The routing of one namespace between two shells of a chain: what it
/// owns, and what it routes inwards (the rest goes out by its default
/// route). It mirrors the addresses and routes `chain` configures there.
#[derive(Debug, Clone)]
pub(crate) struct Crossing {
    /// The namespace's own addresses: the outer end of the inner shell and
    /// the inner end of the outer shell.
    local: Vec<IpAddr>,
    /// Destinations routed into the inner shell: its inner address and
    /// IPv6 prefix, and the prefixes of every shell inside it.
    inward: Vec<(IpAddr, u8)>,
}

impl Crossing {
    /// The namespace inside shell `outer` and around the shells `inner`
    /// (the next one first, then every one inside it).
    pub(crate) fn between(outer: &AddressPair, inner: &[AddressPair]) -> Crossing {
        let next = inner.first().expect("a crossing has an inner shell");
        let local = vec![
            IpAddr::V4(next.outer4),
            IpAddr::V6(next.outer6),
            IpAddr::V4(outer.inner4),
            IpAddr::V6(outer.inner6),
        ];
        let mut inward = vec![(IpAddr::V4(next.inner4), 32), (IpAddr::V6(next.outer6), 64)];
        for deeper in &inner[1..] {
            inward.extend(deeper.networks());
        }
        Crossing { local, inward }
    }

    /// Where this namespace's kernel would send a packet for `destination`.
    pub(crate) fn route(&self, destination: IpAddr) -> Route {
        if self.local.contains(&destination) {
            Route::Kernel
        } else if self
            .inward
            .iter()
            .any(|&network| overlaps(network, host(destination)))
        {
            Route::Inward
        } else {
            Route::Outward
        }
    }

    /// If the kernel would only forward `packet` the way `towards` goes,
    /// does what its forwarding would do to it (one TTL or hop limit less)
    /// and returns true; otherwise leaves it untouched for the kernel.
    pub(crate) fn forward(&self, packet: &mut [u8], towards: Route) -> bool {
        let Some(header) = forwardable(packet) else {
            return false;
        };
        if self.route(header.destination) != towards {
            return false;
        }
        decrement_ttl(packet);
        true
    }
}

/// What forwarding needs of a packet's header.
struct Header {
    destination: IpAddr,
}

/// The header of a packet the kernel would forward and nothing more: a
/// whole IPv4 packet without options, or an IPv6 packet without a
/// hop-by-hop header, between ordinary unicast addresses, with a TTL or
/// hop limit that outlives this hop. None for anything else.
fn forwardable(packet: &[u8]) -> Option<Header> {
    match packet.first()? >> 4 {
        4 => {
            // No options: a router looks into those (record route,
            // timestamps, router alert).
            if packet.len() < 20 || packet[0] & 0x0f != 5 {
                return None;
            }
            let total = u16::from_be_bytes([packet[2], packet[3]]) as usize;
            if total != packet.len() || packet[8] <= 1 {
                return None;
            }
            let source = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
            let destination = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
            (ordinary_v4(source) && ordinary_v4(destination)).then_some(Header {
                destination: IpAddr::V4(destination),
            })
        }
        6 => {
            if packet.len() < 40 {
                return None;
            }
            let payload = u16::from_be_bytes([packet[4], packet[5]]) as usize;
            // Next header 0 is hop-by-hop options, which every router reads.
            if payload + 40 != packet.len() || packet[6] == 0 || packet[7] <= 1 {
                return None;
            }
            let address = |at: usize| {
                let mut bytes = [0u8; 16];
                bytes.copy_from_slice(&packet[at..at + 16]);
                Ipv6Addr::from(bytes)
            };
            let (source, destination) = (address(8), address(24));
            (ordinary_v6(source) && ordinary_v6(destination)).then_some(Header {
                destination: IpAddr::V6(destination),
            })
        }
        _ => None,
    }
}

/// Not multicast, broadcast, loopback, link-local or unspecified.
fn ordinary_v4(address: Ipv4Addr) -> bool {
    !(address.is_multicast()
        || address.is_broadcast()
        || address.is_loopback()
        || address.is_link_local()
        || address.is_unspecified())
}

/// Not multicast, loopback, link-local (fe80::/10) or unspecified.
fn ordinary_v6(address: Ipv6Addr) -> bool {
    let link_local = address.segments()[0] & 0xffc0 == 0xfe80;
    !(address.is_multicast() || address.is_loopback() || link_local || address.is_unspecified())
}

/// `address` as a network of its own.
fn host(address: IpAddr) -> (IpAddr, u8) {
    (address, if address.is_ipv4() { 32 } else { 128 })
}

/// One hop's TTL (IPv4) or hop limit (IPv6) less. The IPv4 header checksum
/// is updated for the change alone: the TTL is the high byte of the word
/// at offset 8 (see [`set_ipv4_word`]).
fn decrement_ttl(packet: &mut [u8]) {
    if packet[0] >> 4 == 4 {
        set_ipv4_word(packet, 8, u16::from_be_bytes([packet[8] - 1, packet[9]]));
    } else {
        packet[7] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::offload::internet_checksum;

    fn ipv4(ttl: u8, source: [u8; 4], destination: [u8; 4], id: u16) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&28u16.to_be_bytes());
        p[4..6].copy_from_slice(&id.to_be_bytes());
        p[8] = ttl;
        p[9] = 17;
        p[12..16].copy_from_slice(&source);
        p[16..20].copy_from_slice(&destination);
        let checksum = internet_checksum(&p[..20]);
        p[10..12].copy_from_slice(&checksum.to_be_bytes());
        p
    }

    fn ipv6(hop_limit: u8, next: u8, source: Ipv6Addr, destination: Ipv6Addr) -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&8u16.to_be_bytes());
        p[6] = next;
        p[7] = hop_limit;
        p[8..24].copy_from_slice(&source.octets());
        p[24..40].copy_from_slice(&destination.octets());
        p
    }

    /// Three shells: the crossing inside shell 0, around shells 1 and 2.
    fn crossing() -> (Crossing, [AddressPair; 3]) {
        let pairs = [0, 1, 2].map(AddressPair::for_index);
        (Crossing::between(&pairs[0], &pairs[1..]), pairs)
    }

    #[test]
    fn routes_as_the_namespace_between_two_shells_does() {
        let (crossing, [outer, next, deeper]) = crossing();
        let route = |a: IpAddr| crossing.route(a);
        // Its own addresses.
        for own in [
            next.outer4.into(),
            next.outer6.into(),
            outer.inner4.into(),
            outer.inner6.into(),
        ] {
            assert_eq!(route(own), Route::Kernel, "{own}");
        }
        // Into the next shell and every shell inside it.
        for inside in [
            next.inner4.into(),
            next.inner6.into(),
            deeper.inner4.into(),
            deeper.outer4.into(),
            deeper.inner6.into(),
        ] {
            assert_eq!(route(inside), Route::Inward, "{inside}");
        }
        // Everything else leaves by the default route, outwards: the host
        // beyond the outer shell, and the outer shell's far end.
        for outside in [
            outer.outer4.into(),
            outer.outer6.into(),
            "10.1.2.3".parse().unwrap(),
            "2001:db8::1".parse().unwrap(),
        ] {
            assert_eq!(route(outside), Route::Outward, "{outside}");
        }
    }

    #[test]
    fn a_forwarded_ipv4_packet_loses_one_ttl_and_keeps_a_valid_checksum() {
        let (crossing, [outer, _, deeper]) = crossing();
        // Every TTL and enough IDs to hit the checksum's carry and its
        // 0xffff edge.
        for ttl in 2..=255u8 {
            for id in (0..=u16::MAX).step_by(257) {
                let mut packet = ipv4(ttl, deeper.inner4.octets(), outer.outer4.octets(), id);
                assert!(crossing.forward(&mut packet, Route::Outward));
                assert_eq!(packet[8], ttl - 1);
                let stored = u16::from_be_bytes([packet[10], packet[11]]);
                packet[10..12].fill(0);
                assert_eq!(
                    stored,
                    internet_checksum(&packet[..20]),
                    "ttl {ttl} id {id}"
                );
            }
        }
    }

    #[test]
    fn a_forwarded_ipv6_packet_loses_one_hop() {
        let (crossing, [outer, _, deeper]) = crossing();
        let mut packet = ipv6(64, 17, outer.outer6, deeper.inner6);
        assert!(crossing.forward(&mut packet, Route::Inward));
        assert_eq!(packet[7], 63);
        // The same packet does not go the other way.
        let mut packet = ipv6(64, 17, outer.outer6, deeper.inner6);
        assert!(!crossing.forward(&mut packet, Route::Outward));
        assert_eq!(packet[7], 64);
    }

    #[test]
    fn what_the_kernel_must_answer_or_inspect_stays_with_it() {
        let (crossing, [outer, next, deeper]) = crossing();
        let from = deeper.inner4.octets();
        let kept = |mut packet: Vec<u8>| {
            let before = packet.clone();
            let forwarded = crossing.forward(&mut packet, Route::Outward);
            if !forwarded {
                assert_eq!(packet, before, "a packet left to the kernel is untouched");
            }
            !forwarded
        };
        // The last hop of its TTL: the kernel sends time-exceeded.
        assert!(kept(ipv4(1, from, [10, 0, 0, 1], 7)));
        assert!(!kept(ipv4(2, from, [10, 0, 0, 1], 7)));
        // For the namespace itself.
        assert!(kept(ipv4(64, from, outer.inner4.octets(), 7)));
        assert!(kept(ipv4(64, from, next.outer4.octets(), 7)));
        // Special destinations and sources.
        assert!(kept(ipv4(64, from, [224, 0, 0, 1], 7)));
        assert!(kept(ipv4(64, from, [255, 255, 255, 255], 7)));
        assert!(kept(ipv4(64, from, [169, 254, 1, 1], 7)));
        assert!(kept(ipv4(64, [127, 0, 0, 1], [10, 0, 0, 1], 7)));
        // IPv4 options, and a length that disagrees with the packet.
        let mut options = ipv4(64, from, [10, 0, 0, 1], 7);
        options[0] = 0x46;
        assert!(kept(options));
        let mut short = ipv4(64, from, [10, 0, 0, 1], 7);
        short.pop();
        assert!(kept(short));
        // IPv6: hop-by-hop options, link-local and multicast, last hop.
        let far: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let link_local: Ipv6Addr = "fe80::1".parse().unwrap();
        assert!(kept(ipv6(64, 0, deeper.inner6, far)));
        assert!(kept(ipv6(64, 17, link_local, far)));
        assert!(kept(ipv6(
            64,
            17,
            deeper.inner6,
            "ff02::1".parse().unwrap()
        )));
        assert!(kept(ipv6(1, 17, deeper.inner6, far)));
        assert!(!kept(ipv6(64, 17, deeper.inner6, far)));
        // Not IP at all.
        assert!(kept(vec![0u8; 40]));
        assert!(kept(Vec::new()));
    }
}
