//! A packet as it crosses an emulated path, and views of its IPv4/IPv6
//! header for the things queues need: the ECN field (read and rewrite, with
//! the IPv4 checksum kept right), DSCP, and a flow hash over the 5-tuple.
//!
//! Headers are read by hand rather than through a packet-view crate: the
//! handful of fields below are read for every packet on the hot path, and a
//! few bounds-checked byte reads are both the fastest and the clearest way.

use crate::time::Nanos;

/// The two ECN bits of the IPv4 TOS / IPv6 traffic class (RFC 3168).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Ecn {
    NotEct = 0b00,
    Ect1 = 0b01,
    Ect0 = 0b10,
    Ce = 0b11,
}

impl Ecn {
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// True for ECT(0), ECT(1) and CE: a sender that will react to marks.
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
}

/// One packet on its way through a shell. `data` is the IP packet exactly as
/// the TUN device gave it (no link-layer or packet-info header).
#[derive(Debug, Clone)]
pub struct Packet {
    pub data: Vec<u8>,
    /// When the reader took it off the device (or the test injected it).
    pub arrival: Nanos,
    /// When it entered its current queue; queues set this to compute sojourn.
    pub enqueued: Nanos,
    /// Hash of the 5-tuple, for flow queueing and per-flow reports.
    pub flow: u32,
    /// Hash of fields that no NAT rewrites (IP ID or flow label, length,
    /// TCP sequence numbers, payload head), so the same packet can be
    /// followed from one shell's log to the next.
    pub fingerprint: u32,
    /// Bytes of link-layer header the current link accounts in front of
    /// `data` (0, or 14 with `--l2 ethernet`); set by the link a packet
    /// enters. See [`crate::size`] for what a byte is.
    pub link_header: u16,
}

impl Packet {
    pub fn new(data: Vec<u8>, arrival: Nanos) -> Packet {
        let flow = flow_hash(&data);
        let fingerprint = fingerprint(&data);
        Packet {
            data,
            arrival,
            enqueued: arrival,
            flow,
            fingerprint,
            link_header: 0,
        }
    }

    /// The IP packet's length.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// The length queues and the link account for: the IP length plus the
    /// link-layer header (the kernel's `qdisc_pkt_len`; see [`crate::size`]).
    pub fn frame_len(&self) -> usize {
        self.data.len() + self.link_header as usize
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn ecn(&self) -> Option<Ecn> {
        ecn(&self.data)
    }

    /// Rewrites the ECN field; false if this is not an IP packet.
    pub fn set_ecn(&mut self, value: Ecn) -> bool {
        set_ecn(&mut self.data, value)
    }

    pub fn dscp(&self) -> Option<u8> {
        dscp(&self.data)
    }
}

/// IP version from the first nibble, if the packet is long enough to have
/// a whole header of that version.
pub fn ip_version(data: &[u8]) -> Option<u8> {
    match data.first()? >> 4 {
        4 if data.len() >= 20 => Some(4),
        6 if data.len() >= 40 => Some(6),
        _ => None,
    }
}

/// The full traffic class / TOS byte.
fn traffic_class(data: &[u8]) -> Option<u8> {
    match ip_version(data)? {
        4 => Some(data[1]),
        _ => Some((data[0] << 4) | (data[1] >> 4)),
    }
}

pub fn ecn(data: &[u8]) -> Option<Ecn> {
    traffic_class(data).map(Ecn::from_bits)
}

pub fn dscp(data: &[u8]) -> Option<u8> {
    traffic_class(data).map(|tc| tc >> 2)
}

/// Rewrites the ECN bits in place; false if this is not an IP packet.
pub fn set_ecn(data: &mut [u8], value: Ecn) -> bool {
    match traffic_class(data) {
        Some(tc) => set_traffic_class(data, (tc & !0b11) | value as u8),
        None => false,
    }
}

/// Rewrites the DSCP (the upper six bits of the traffic class), keeping ECN.
pub fn set_dscp(data: &mut [u8], dscp: u8) -> bool {
    match traffic_class(data) {
        Some(tc) => set_traffic_class(data, (dscp << 2) | (tc & 0b11)),
        None => false,
    }
}

/// Rewrites the 16-bit word at `offset` of an IPv4 header (which the
/// caller has checked is one, and holds the word) to `word`, updating the
/// header checksum for that change alone, as RFC 1624 (eqn. 3) gives:
/// HC' = ~(~HC + ~m + m'). Eqn. 3 rather than the shorter eqn. 2 because
/// it never leaves the checksum at 0xffff where a full recomputation
/// gives 0x0000.
pub fn set_ipv4_word(header: &mut [u8], offset: usize, word: u16) {
    let old_word = u16::from_be_bytes([header[offset], header[offset + 1]]);
    header[offset..offset + 2].copy_from_slice(&word.to_be_bytes());
    let old_checksum = u16::from_be_bytes([header[10], header[11]]);
    let mut sum = (!old_checksum) as u32 + (!old_word) as u32 + word as u32;
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    header[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// Rewrites the whole TOS / traffic class byte (for IPv4 with its header
/// checksum, see [`set_ipv4_word`]). IPv6 has no header checksum.
fn set_traffic_class(data: &mut [u8], tc: u8) -> bool {
    match ip_version(data) {
        Some(4) => {
            set_ipv4_word(data, 0, u16::from_be_bytes([data[0], tc]));
            true
        }
        Some(6) => {
            // The traffic class straddles the low nibble of byte 0 and the
            // high nibble of byte 1.
            data[0] = (data[0] & 0xf0) | (tc >> 4);
            data[1] = (data[1] & 0x0f) | (tc << 4);
            true
        }
        _ => false,
    }
}

/// The IPv4 header checksum computed from scratch (RFC 791), for tests and
/// for checking that incremental updates agree.
pub fn ipv4_header_checksum(header: &[u8]) -> u16 {
    let ihl = ((header[0] & 0x0f) as usize * 4).min(header.len());
    let mut sum: u32 = 0;
    for (i, pair) in header[..ihl].chunks(2).enumerate() {
        if i == 5 {
            continue; // the checksum field itself
        }
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += word as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Where the transport header starts and which protocol it is, walking the
/// IPv6 extension headers that may precede it (RFC 8200 §4: hop-by-hop,
/// routing, fragment, destination options; RFC 4302: AH). None for a
/// later fragment, and for a packet cut short inside its IP headers: the
/// IPv4 header with its options, and each extension header, must be
/// there whole.
pub fn transport(data: &[u8]) -> Option<(u8, usize)> {
    match ip_version(data)? {
        4 => {
            let ihl = (data[0] & 0x0f) as usize * 4;
            let fragment_offset = u16::from_be_bytes([data[6], data[7]]) & 0x1fff;
            (ihl >= 20 && ihl <= data.len() && fragment_offset == 0).then_some((data[9], ihl))
        }
        _ => {
            let mut next = data[6];
            let mut offset = 40;
            for _ in 0..8 {
                let len = match next {
                    0 | 43 | 60 => (*data.get(offset + 1)? as usize + 1) * 8,
                    44 => 8,
                    51 => (*data.get(offset + 1)? as usize + 2) * 4,
                    _ => return Some((next, offset)),
                };
                data.get(offset..offset + len)?;
                next = data[offset];
                offset += len;
            }
            None
        }
    }
}

fn addresses(data: &[u8]) -> &[u8] {
    match ip_version(data) {
        Some(4) => &data[12..20],
        Some(6) => &data[8..40],
        _ => &[],
    }
}

/// Fast, deterministic mixing (a multiply-rotate hash); quality is ample for
/// bucketing flows and following packets, and it costs a few ns.
struct Mixer(u64);

impl Mixer {
    fn add(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }

    fn finish(self) -> u32 {
        let h = self.0 ^ (self.0 >> 29);
        (h ^ (h >> 32)) as u32
    }
}

/// Hash of (addresses, protocol, ports): the flow a packet belongs to.
/// Packets that are not IP hash their first bytes, so they still spread.
pub fn flow_hash(data: &[u8]) -> u32 {
    let mut mixer = Mixer(0x243f_6a88_85a3_08d3);
    match transport(data) {
        Some((protocol, offset)) => {
            mixer.add(addresses(data));
            mixer.add(&[protocol]);
            if matches!(protocol, 6 | 17 | 132 | 136) {
                if let Some(ports) = data.get(offset..offset + 4) {
                    mixer.add(ports);
                }
            }
        }
        None => mixer.add(&data[..data.len().min(20)]),
    }
    mixer.finish()
}

/// Hashes of the source and of the destination address alone, for queues
/// that isolate hosts rather than flows (cake's srchost, dsthost and
/// triple-isolate modes). Not IP: both zero, so all such packets share one
/// host, as in Linux.
pub fn host_hashes(data: &[u8]) -> (u32, u32) {
    let (src, dst) = match ip_version(data) {
        Some(4) => (&data[12..16], &data[16..20]),
        Some(6) => (&data[8..24], &data[24..40]),
        _ => return (0, 0),
    };
    let hash = |address: &[u8], seed: u64| {
        let mut mixer = Mixer(seed);
        mixer.add(address);
        mixer.finish()
    };
    (
        hash(src, 0xa409_3822_299f_31d0),
        hash(dst, 0x082e_fa98_ec4e_6c89),
    )
}

/// The TCP header of a packet: (offset of the header in `data`, its length).
pub fn tcp_header(data: &[u8]) -> Option<(usize, usize)> {
    let (protocol, offset) = transport(data)?;
    if protocol != 6 {
        return None;
    }
    let data_offset = (*data.get(offset + 12)? >> 4) as usize * 4;
    (data_offset >= 20 && offset + data_offset <= data.len()).then_some((offset, data_offset))
}

/// Hash of the fields that network address translation leaves alone, so one
/// packet has the same fingerprint in every shell it crosses.
pub fn fingerprint(data: &[u8]) -> u32 {
    let mut mixer = Mixer(0x1319_8a2e_0370_7344);
    mixer.add(&(data.len() as u32).to_le_bytes());
    match ip_version(data) {
        Some(4) => mixer.add(&data[4..6]), // identification
        Some(6) => mixer.add(&[data[1] & 0x0f, data[2], data[3]]), // flow label
        _ => {}
    }
    if let Some((protocol, offset)) = transport(data) {
        mixer.add(&[protocol]);
        let invariant = match protocol {
            6 => offset + 4..offset + 14,      // TCP seq, ack, offset, flags
            17 => offset + 8..offset + 24,     // UDP payload head
            1 | 58 => offset + 6..offset + 16, // ICMP sequence and data head
            _ => offset..offset + 16,
        };
        let end = invariant.end.min(data.len());
        if invariant.start < end {
            mixer.add(&data[invariant.start..end]);
        }
    } else {
        mixer.add(&data[..data.len().min(32)]);
    }
    mixer.finish()
}

/// Builders of well-formed packets for tests and benchmarks in every crate.
pub mod build {
    /// An IPv4/UDP packet of `total_len` bytes (at least 28) with a correct
    /// header checksum.
    pub fn ipv4_udp(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        tos: u8,
        total_len: usize,
    ) -> Vec<u8> {
        let total_len = total_len.max(28);
        let mut p = vec![0u8; total_len];
        p[0] = 0x45;
        p[1] = tos;
        p[2..4].copy_from_slice(&(total_len as u16).to_be_bytes());
        p[4..6].copy_from_slice(&0x1c46u16.to_be_bytes());
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p[24..26].copy_from_slice(&((total_len - 20) as u16).to_be_bytes());
        let checksum = super::ipv4_header_checksum(&p[..20]);
        p[10..12].copy_from_slice(&checksum.to_be_bytes());
        p
    }

    /// An IPv6/UDP packet of `total_len` bytes (at least 48).
    pub fn ipv6_udp(
        src: [u8; 16],
        dst: [u8; 16],
        sport: u16,
        dport: u16,
        traffic_class: u8,
        total_len: usize,
    ) -> Vec<u8> {
        let total_len = total_len.max(48);
        let mut p = vec![0u8; total_len];
        p[0] = 0x60 | (traffic_class >> 4);
        p[1] = traffic_class << 4;
        p[4..6].copy_from_slice(&((total_len - 40) as u16).to_be_bytes());
        p[6] = 17;
        p[7] = 64;
        p[8..24].copy_from_slice(&src);
        p[24..40].copy_from_slice(&dst);
        p[40..42].copy_from_slice(&sport.to_be_bytes());
        p[42..44].copy_from_slice(&dport.to_be_bytes());
        p[44..46].copy_from_slice(&((total_len - 40) as u16).to_be_bytes());
        p
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_ecn_and_dscp_from_both_families() {
        let v4 = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, (46 << 2) | 0b10, 100);
        assert_eq!(ecn(&v4), Some(Ecn::Ect0));
        assert_eq!(dscp(&v4), Some(46));
        let v6 = ipv6_udp([1; 16], [2; 16], 1, 2, (10 << 2) | 0b01, 100);
        assert_eq!(ecn(&v6), Some(Ecn::Ect1));
        assert_eq!(dscp(&v6), Some(10));
        assert_eq!(ecn(&[0x45, 0, 0]), None);
    }

    /// Found by fuzzing: a fragment header cut after its first byte was
    /// walked as if whole, placing TCP past the end of the packet.
    #[test]
    fn headers_cut_short_have_no_transport() {
        let mut v6 = ipv6_udp([1; 16], [2; 16], 1, 2, 0, 48);
        v6[6] = 44; // a fragment header follows, then TCP
        v6.truncate(40);
        v6.extend_from_slice(&[6, 0, 0, 1]); // half of the fragment header
        assert_eq!(transport(&v6), None);
        v6.extend_from_slice(&[0, 0, 0, 7]);
        assert_eq!(transport(&v6), Some((6, 48)));
        // A hop-by-hop header claiming 16 bytes with 8 present.
        let mut hop = ipv6_udp([1; 16], [2; 16], 1, 2, 0, 48);
        hop[6] = 0;
        hop[40..42].copy_from_slice(&[17, 1]);
        assert_eq!(transport(&hop), None);
        hop[41] = 0;
        assert_eq!(transport(&hop), Some((17, 48)));
        // IPv4 whose options run past the packet.
        let mut v4 = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 28);
        v4[0] = 0x4f;
        assert_eq!(transport(&v4), None);
        assert_eq!(tcp_header(&v4), None);
    }

    #[test]
    fn ipv6_marking_leaves_dscp_and_flow_label() {
        let mut v6 = ipv6_udp([1; 16], [2; 16], 1, 2, (10 << 2) | 0b10, 100);
        v6[1] |= 0x0f;
        v6[2] = 0xab;
        assert!(set_ecn(&mut v6, Ecn::Ce));
        assert_eq!(ecn(&v6), Some(Ecn::Ce));
        assert_eq!(dscp(&v6), Some(10));
        assert_eq!((v6[1] & 0x0f, v6[2]), (0x0f, 0xab));
    }

    #[test]
    fn dscp_rewrite_keeps_ecn_and_the_checksum() {
        let mut v4 = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, (46 << 2) | 0b10, 100);
        assert!(set_dscp(&mut v4, 0));
        assert_eq!((dscp(&v4), ecn(&v4)), (Some(0), Some(Ecn::Ect0)));
        assert_eq!(
            ipv4_header_checksum(&v4[..20]),
            u16::from_be_bytes([v4[10], v4[11]])
        );
        let mut v6 = ipv6_udp([1; 16], [2; 16], 1, 2, (10 << 2) | 0b01, 100);
        v6[1] |= 0x0f;
        assert!(set_dscp(&mut v6, 46));
        assert_eq!(
            (dscp(&v6), ecn(&v6), v6[0] >> 4, v6[1] & 0x0f),
            (Some(46), Some(Ecn::Ect1), 6, 0x0f)
        );
    }

    #[test]
    fn host_hashes_follow_one_address_each() {
        let a = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 0, 100);
        let b = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 3], 2000, 81, 0, 100);
        let (a_src, a_dst) = host_hashes(&a);
        let (b_src, b_dst) = host_hashes(&b);
        assert_eq!(a_src, b_src);
        assert_ne!(a_dst, b_dst);
        assert_eq!(host_hashes(&[0u8; 10]), (0, 0));
    }

    #[test]
    fn flow_hash_separates_ports_and_ignores_payload() {
        let a = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 0, 100);
        let mut b = a.clone();
        b[60] = 0xff;
        let c = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1001, 80, 0, 100);
        assert_eq!(flow_hash(&a), flow_hash(&b));
        assert_ne!(flow_hash(&a), flow_hash(&c));
    }

    #[test]
    fn fingerprint_survives_address_and_port_translation() {
        let mut a = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 0, 100);
        a[40] = 7;
        let mut b = a.clone();
        b[12..16].copy_from_slice(&[192, 168, 1, 1]);
        b[20..22].copy_from_slice(&4000u16.to_be_bytes());
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let mut c = a.clone();
        c[40] = 8;
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    proptest! {
        /// Every rewrite of the ECN field leaves a header whose checksum is
        /// what a full recomputation gives (RFC 1624's pitfall: 0x0000/0xffff).
        #[test]
        fn ipv4_checksum_stays_right_after_every_marking(
            header in proptest::collection::vec(any::<u8>(), 20),
            marks in proptest::collection::vec(0u8..4, 1..6),
        ) {
            let mut p = header.clone();
            p[0] = 0x45;
            let checksum = ipv4_header_checksum(&p);
            p[10..12].copy_from_slice(&checksum.to_be_bytes());
            for m in marks {
                prop_assert!(set_ecn(&mut p, Ecn::from_bits(m)));
                prop_assert_eq!(ecn(&p), Some(Ecn::from_bits(m)));
                let stored = u16::from_be_bytes([p[10], p[11]]);
                // One's-complement has two zeros; a verifier sums the whole
                // header including the checksum and expects 0xffff.
                let mut sum: u32 = p.chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
                while sum > 0xffff { sum = (sum & 0xffff) + (sum >> 16); }
                prop_assert_eq!(sum, 0xffff, "stored {:#x} recomputed {:#x}", stored, ipv4_header_checksum(&p));
            }
        }
    }
}
