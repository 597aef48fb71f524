//! Segmentation offload, done here instead of in the kernel.
//!
//! With offload on, a TUN device hands over TCP segments of up to 64 KiB
//! with a virtio-net header saying how to cut them (GSO) and where a
//! checksum is still to be filled in. One read then replaces dozens, which
//! is what lets a shell keep up with multi-gigabit flows. We cut every such
//! super-packet into the exact MTU-sized packets the kernel would have sent
//! (RFC 793/9293 sequence numbers, RFC 791 identification and checksum),
//! so queues, rates and logs still see real packets.
//!
//! A UDP_SEGMENT sender's batch (where the kernel offloads UDP too) is cut
//! the same way, into the datagrams the kernel would have sent. On the way
//! out, consecutive TCP segments of one flow that are due together are
//! written as one GSO packet, as GRO would merge them.

/// Size of `struct virtio_net_hdr` (without the num_buffers field).
pub const VNET_HDR_LEN: usize = 10;

const F_NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
const GSO_UDP_L4: u8 = 5;
const GSO_ECN: u8 = 0x80;

/// The virtio-net header in front of each packet read with offload on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetHeader {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHeader {
    /// Reads the header; TUN devices use the host's (little-endian) order.
    pub fn parse(bytes: &[u8]) -> Option<VnetHeader> {
        if bytes.len() < VNET_HDR_LEN {
            return None;
        }
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
        Some(VnetHeader {
            flags: bytes[0],
            gso_type: bytes[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    /// The packet behind this header is one packet, not a super-packet.
    pub fn is_plain(&self) -> bool {
        self.gso_type & !GSO_ECN == GSO_NONE
    }
}

/// Why a super-packet could not be cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffloadError {
    /// A GSO type other than TCP or UDP over IPv4/IPv6.
    Unsupported(u8),
    Malformed(&'static str),
}

/// One's-complement sum of `data` added to `initial` (RFC 1071), unfolded
/// (below 2^35 for any `initial` below 2^32).
///
/// Eight bytes at a time as one big-endian 64-bit word, its overflow
/// carried around: 2^16 is 1 modulo 2^16 - 1, so a word counts as the sum
/// of its four 16-bit halves, and 2^64 as 1. Half the additions of
/// summing the halves one by one; it is the checksum of every segment a
/// super-packet is cut into (a tenth of the experiments' fabric's samples
/// at 10 Gbit/s with the halves added one by one).
fn sum16(data: &[u8], initial: u64) -> u64 {
    let mut sum = initial;
    let mut carries = 0u64;
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_be_bytes(chunk.try_into().unwrap());
        let (added, carry) = sum.overflowing_add(word);
        sum = added;
        carries += u64::from(carry);
    }
    let mut sum = (sum >> 32) + (sum & 0xffff_ffff) + carries;
    let rest = chunks.remainder();
    let mut pairs = rest.chunks_exact(2);
    for pair in &mut pairs {
        sum += u16::from_be_bytes([pair[0], pair[1]]) as u64;
    }
    if let [last] = pairs.remainder() {
        sum += (*last as u64) << 8;
    }
    sum
}

fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The Internet checksum of `data` (RFC 1071).
pub fn internet_checksum(data: &[u8]) -> u16 {
    !fold(sum16(data, 0))
}

/// Completes a checksum the sender left partial: the field at
/// `start + offset` holds the pseudo-header sum; the checksum covers
/// everything from `start` to the end.
fn complete_checksum(packet: &mut [u8], start: usize, offset: usize) -> Result<(), OffloadError> {
    let field = start + offset;
    if field + 2 > packet.len() {
        return Err(OffloadError::Malformed("checksum field beyond the packet"));
    }
    let mut checksum = !fold(sum16(&packet[start..], 0));
    if checksum == 0 && offset == 6 {
        checksum = 0xffff; // UDP transmits a computed zero as all ones
    }
    packet[field..field + 2].copy_from_slice(&checksum.to_be_bytes());
    Ok(())
}

/// The pseudo-header sum (RFC 9293 §3.1, RFC 768; RFC 8200 §8.1) for an
/// IPv4 or IPv6 packet carrying `protocol` in `len` bytes.
fn pseudo_header_sum(packet: &[u8], protocol: u8, len: usize) -> u64 {
    let initial = u64::from(protocol) + len as u64;
    match packet[0] >> 4 {
        4 => sum16(&packet[12..20], initial),
        _ => sum16(&packet[8..40], initial),
    }
}

/// Turns what one offload read returned (virtio-net header, then packet)
/// into plain packets with complete checksums, appended to `out`. A packet
/// without GSO comes out as itself, its checksum completed if it was left
/// partial.
pub fn segment(read: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), OffloadError> {
    let header = VnetHeader::parse(read).ok_or(OffloadError::Malformed(
        "shorter than the virtio-net header",
    ))?;
    let packet = &read[VNET_HDR_LEN..];
    match header.gso_type & !GSO_ECN {
        GSO_NONE => {
            let mut plain = packet.to_vec();
            finish_plain(&header, &mut plain)?;
            out.push(plain);
            Ok(())
        }
        GSO_TCPV4 | GSO_TCPV6 => split_tcp(packet, header.gso_size as usize, out),
        GSO_UDP_L4 => split_udp(packet, header.gso_size as usize, out),
        other => Err(OffloadError::Unsupported(other)),
    }
}

/// Makes a plain packet (see [`VnetHeader::is_plain`]) read behind
/// `header` what the wire would carry: its checksum completed if the
/// sender left it partial. For a reader that read the packet into its own
/// buffer rather than cut it out of a read with [`segment`].
pub fn finish_plain(header: &VnetHeader, packet: &mut [u8]) -> Result<(), OffloadError> {
    if header.flags & F_NEEDS_CSUM != 0 {
        complete_checksum(
            packet,
            header.csum_start as usize,
            header.csum_offset as usize,
        )?;
    }
    Ok(())
}

/// The IP header length of a packet, if it is IPv4 or IPv6 carrying
/// `protocol` right after the IP header, long enough for `transport`
/// bytes of its header.
fn ip_header_len(packet: &[u8], protocol: u8, transport: usize) -> Result<usize, OffloadError> {
    let version = packet
        .first()
        .map(|b| b >> 4)
        .ok_or(OffloadError::Malformed("empty packet"))?;
    let ip_len = match version {
        4 if packet.len() >= 20 && packet[9] == protocol => (packet[0] & 0x0f) as usize * 4,
        4 if packet.len() >= 20 => return Err(OffloadError::Malformed("not the GSO protocol")),
        6 if packet.len() >= 40 && packet[6] == protocol => 40,
        6 if packet.len() >= 40 => {
            return Err(OffloadError::Malformed(
                "IPv6 extension headers before the transport",
            ))
        }
        _ => return Err(OffloadError::Malformed("not IPv4 or IPv6")),
    };
    if ip_len < 20 || packet.len() < ip_len + transport {
        return Err(OffloadError::Malformed("no room for the transport header"));
    }
    Ok(ip_len)
}

/// Cuts a UDP super-packet (a UDP_SEGMENT send, or our own merge) into
/// datagrams carrying `size` payload bytes each, the last one the rest, as
/// the kernel's UDP GSO does: the IP header repeated with its length, IPv4
/// identification counting up and header checksum redone; each datagram's
/// UDP length and checksum its own.
fn split_udp(packet: &[u8], size: usize, out: &mut Vec<Vec<u8>>) -> Result<(), OffloadError> {
    const UDP: u8 = 17;
    let ip_len = ip_header_len(packet, UDP, 8)?;
    let headers = ip_len + 8;
    let payload = &packet[headers..];
    if size == 0 || payload.is_empty() {
        return Err(OffloadError::Malformed("UDP segment size or empty payload"));
    }
    let identification = u16::from_be_bytes([packet[4], packet[5]]);
    let first = out.len();
    for (i, chunk) in payload.chunks(size).enumerate() {
        let mut datagram = Vec::with_capacity(headers + chunk.len());
        datagram.extend_from_slice(&packet[..headers]);
        datagram.extend_from_slice(chunk);
        let total = datagram.len();
        if total > 65_535 {
            out.truncate(first);
            return Err(OffloadError::Malformed(
                "a datagram beyond the IP length field",
            ));
        }
        set_ip_length(&mut datagram, ip_len, identification.wrapping_add(i as u16));
        let udp_len = total - ip_len;
        datagram[ip_len + 4..ip_len + 6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        datagram[ip_len + 6..ip_len + 8].fill(0);
        let sum = sum16(
            &datagram[ip_len..],
            pseudo_header_sum(&datagram, UDP, udp_len),
        );
        let mut checksum = !fold(sum);
        if checksum == 0 {
            checksum = 0xffff; // UDP transmits a computed zero as all ones
        }
        datagram[ip_len + 6..ip_len + 8].copy_from_slice(&checksum.to_be_bytes());
        out.push(datagram);
    }
    Ok(())
}

/// Gives a packet cut from a super-packet its own IP length; for IPv4 also
/// its identification `id` and a header checksum to match.
fn set_ip_length(packet: &mut [u8], ip_len: usize, id: u16) {
    let total = packet.len();
    if packet[0] >> 4 == 4 {
        packet[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        packet[4..6].copy_from_slice(&id.to_be_bytes());
        packet[10..12].fill(0);
        let checksum = internet_checksum(&packet[..ip_len]);
        packet[10..12].copy_from_slice(&checksum.to_be_bytes());
    } else {
        packet[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
    }
}

/// Cuts a TCP super-packet into segments carrying `mss` payload bytes each.
fn split_tcp(packet: &[u8], mss: usize, out: &mut Vec<Vec<u8>>) -> Result<(), OffloadError> {
    let ip_len = ip_header_len(packet, 6, 20)?;
    let tcp_len = ((packet[ip_len + 12] >> 4) as usize) * 4;
    let headers = ip_len + tcp_len;
    if tcp_len < 20 || packet.len() < headers || mss == 0 {
        return Err(OffloadError::Malformed("TCP header length or segment size"));
    }
    let payload = &packet[headers..];
    let sequence = u32::from_be_bytes(packet[ip_len + 4..ip_len + 8].try_into().unwrap());
    let identification = u16::from_be_bytes([packet[4], packet[5]]);
    let flags = packet[ip_len + 13];
    let count = payload.len().div_ceil(mss).max(1);
    for (i, chunk) in payload
        .chunks(mss)
        .enumerate()
        .chain(std::iter::once((0, &payload[..0])).filter(|_| payload.is_empty()))
    {
        let mut segment = Vec::with_capacity(headers + chunk.len());
        segment.extend_from_slice(&packet[..headers]);
        segment.extend_from_slice(chunk);
        let total = segment.len();
        set_ip_length(&mut segment, ip_len, identification.wrapping_add(i as u16));
        let tcp = ip_len;
        segment[tcp + 4..tcp + 8]
            .copy_from_slice(&sequence.wrapping_add((i * mss) as u32).to_be_bytes());
        let mut segment_flags = flags;
        if i + 1 < count {
            segment_flags &= !(0x01 | 0x08); // FIN and PSH only on the last
        }
        if i > 0 {
            segment_flags &= !0x80; // CWR only on the first
        }
        segment[tcp + 13] = segment_flags;
        segment[tcp + 16..tcp + 18].fill(0);
        let sum = sum16(&segment[tcp..], pseudo_header_sum(&segment, 6, total - tcp));
        segment[tcp + 16..tcp + 18].copy_from_slice(&(!fold(sum)).to_be_bytes());
        out.push(segment);
    }
    Ok(())
}

/// The IP and TCP header lengths of a plain TCP packet we can merge: IPv4
/// without options or IPv6 without extension headers.
fn tcp_headers(packet: &[u8]) -> Option<(usize, usize)> {
    let ip_len = match packet.first()? >> 4 {
        4 if packet.len() >= 40 && packet[0] == 0x45 && packet[9] == 6 => 20,
        6 if packet.len() >= 60 && packet[6] == 6 => 40,
        _ => return None,
    };
    let tcp_len = ((packet[ip_len + 12] >> 4) as usize) * 4;
    (tcp_len >= 20 && packet.len() >= ip_len + tcp_len).then_some((ip_len, tcp_len))
}

const ACK: u8 = 0x10;
const PSH: u8 = 0x08;

/// True if `next` continues `previous` in a run that started with
/// `first`, such that one GSO packet carries them all. For TCP segments
/// (segment size `payload(first)`) these are the rules of the kernel's
/// GRO: same headers but for lengths, IDs, sequence and checksums;
/// consecutive sequence numbers; full-sized segments but for the last;
/// plain ACKs, PSH allowed on the last only. UDP datagrams are not
/// merged: written as one UDP GSO packet, a flood (iperf3 `-u -b 0`
/// through `delay 0`) reached its receiver at 0.82–0.90 Gbit/s against
/// 1.43–1.45 written one by one, the receiving socket dropping twice as
/// much, on this project's 2-core VM.
pub fn continues_run(first: &[u8], previous: &[u8], next: &[u8]) -> bool {
    let (Some((ip, tcp)), Some(shape_prev), Some(shape_next)) =
        (tcp_headers(first), tcp_headers(previous), tcp_headers(next))
    else {
        return false;
    };
    if shape_prev != (ip, tcp) || shape_next != (ip, tcp) {
        return false;
    }
    let headers = ip + tcp;
    let mss = first.len() - headers;
    let same = |range: std::ops::Range<usize>| first[range.clone()] == next[range];
    let ip_same = if ip == 20 {
        same(0..2) && same(6..10) && same(12..20)
    } else {
        same(0..4) && same(6..40)
    };
    let seq = |p: &[u8]| u32::from_be_bytes(p[ip + 4..ip + 8].try_into().unwrap());
    ip_same
        && same(ip..ip + 4)               // ports
        && same(ip + 8..ip + 12)          // acknowledgment
        && same(ip + 14..ip + 16)         // window
        && same(ip + 18..headers)         // urgent pointer and options (timestamps)
        && first[ip + 13] == ACK
        && previous[ip + 13] == ACK
        && (next[ip + 13] == ACK || next[ip + 13] == ACK | PSH)
        && mss > 0
        && previous.len() - headers == mss
        && next.len() > headers
        && next.len() - headers <= mss
        && seq(next) == seq(previous).wrapping_add(mss as u32)
}

/// Writes into `out` one virtio-net header and the GSO packet that carries
/// the TCP segments of `run` (which `continues_run` accepted pairwise).
/// The TCP checksum is left partial, as a TSO sender leaves it; the kernel
/// treats the packet exactly as the segments it stands for. The run is taken as an iterator so that a
/// pump can merge its due packets where they lie, without gathering them
/// into a list first.
pub fn merge_run<'a>(run: impl IntoIterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
    out.clear();
    let mut run = run.into_iter();
    let first = run.next().expect("a run holds at least one segment");
    let (ip, tcp) = tcp_headers(first).expect("runs hold plain TCP packets");
    let headers = ip + tcp;
    out.extend_from_slice(&[0u8; VNET_HDR_LEN]);
    out.extend_from_slice(first);
    let mut last_flags = first[ip + 13];
    for packet in run {
        out.extend_from_slice(&packet[headers..]);
        last_flags = packet[ip + 13];
    }
    let total = out.len() - VNET_HDR_LEN;
    let mss = first.len() - headers;
    let (vnet, packet) = out.split_at_mut(VNET_HDR_LEN);
    gso_headers(
        vnet,
        &mut packet[..headers],
        (ip, tcp),
        mss,
        total,
        last_flags,
    );
}

/// Writes into `out` the virtio-net header and the IP and TCP headers of
/// the GSO packet that carries the run of `count` TCP segments from
/// `first` to `last` (accepted pairwise by `continues_run`), `bytes` long
/// together: what [`merge_run`] puts in front of the segments' payloads,
/// for a writer that gathers the payloads where they lie instead of
/// copying them. Returns where each segment's payload starts (its header
/// length); `None`, with `out` empty, if `first` is no TCP packet a run
/// could start with.
pub fn merged_headers(
    first: &[u8],
    last: &[u8],
    count: usize,
    bytes: usize,
    out: &mut Vec<u8>,
) -> Option<usize> {
    out.clear();
    let (ip, tcp) = tcp_headers(first)?;
    let headers = ip + tcp;
    let total = bytes - (count - 1) * headers;
    out.extend_from_slice(&[0u8; VNET_HDR_LEN]);
    out.extend_from_slice(&first[..headers]);
    let (vnet, packet) = out.split_at_mut(VNET_HDR_LEN);
    let mss = first.len() - headers;
    gso_headers(vnet, packet, (ip, tcp), mss, total, last[ip + 13]);
    Some(headers)
}

/// Fills `vnet` and fixes up `headers` (the first segment's IP and TCP
/// headers, `ip` and `tcp` bytes long) for a GSO packet of segments of
/// `mss` payload bytes, `total` bytes long, whose last segment carries TCP
/// flags `last_flags`.
fn gso_headers(
    vnet: &mut [u8],
    headers: &mut [u8],
    (ip, tcp): (usize, usize),
    mss: usize,
    total: usize,
    last_flags: u8,
) {
    let v4 = ip == 20;
    vnet[0] = F_NEEDS_CSUM;
    vnet[1] = if v4 { GSO_TCPV4 } else { GSO_TCPV6 };
    vnet[2..4].copy_from_slice(&((ip + tcp) as u16).to_le_bytes());
    vnet[4..6].copy_from_slice(&(mss as u16).to_le_bytes());
    vnet[6..8].copy_from_slice(&(ip as u16).to_le_bytes());
    vnet[8..10].copy_from_slice(&16u16.to_le_bytes());
    if v4 {
        headers[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        headers[10..12].fill(0);
        let checksum = internet_checksum(&headers[..20]);
        headers[10..12].copy_from_slice(&checksum.to_be_bytes());
    } else {
        headers[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
    }
    headers[ip + 13] = last_flags; // PSH of the last segment
    let partial = fold(pseudo_header_sum(headers, 6, total - ip));
    headers[ip + 16..ip + 18].copy_from_slice(&partial.to_be_bytes());
}

/// Largest IP packet one GSO write may carry.
pub const MAX_MERGED: usize = 65_535;

/// Reads as a TUN device with offload hands them over, for the tests here
/// and in the crates that take such reads apart (`shells`' readers), so
/// each does not build its own (feature `fixtures`).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use super::*;

    /// A TCP/IPv4 packet (a super-packet, if `payload` exceeds an MSS) as
    /// a sender with TSO hands it over: one 52-byte header (with the
    /// timestamp option's room), `payload` bytes of a fixed pattern, the
    /// sequence number about to wrap.
    pub fn tcp_v4(payload: usize, flags: u8) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 32 + payload];
        p[0] = 0x45;
        let total = p.len().min(65535) as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[4..6].copy_from_slice(&0xfff0u16.to_be_bytes());
        p[6] = 0x40;
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[100, 64, 0, 2]);
        p[16..20].copy_from_slice(&[100, 64, 0, 1]);
        p[20..22].copy_from_slice(&40000u16.to_be_bytes());
        p[22..24].copy_from_slice(&5201u16.to_be_bytes());
        p[24..28].copy_from_slice(&0xffff_ff00u32.to_be_bytes()); // wraps
        p[32] = 8 << 4;
        p[33] = flags;
        for (i, b) in p[52..].iter_mut().enumerate() {
            *b = (i * 7 % 251) as u8;
        }
        p
    }

    /// `packet` behind a virtio-net header of `gso_type` and `gso_size`
    /// whose checksum is left partial (from the IPv4 header's end, the
    /// TCP checksum's offset).
    pub fn read_with(gso_type: u8, gso_size: u16, packet: &[u8]) -> Vec<u8> {
        let mut read = vec![0u8; VNET_HDR_LEN];
        read[0] = F_NEEDS_CSUM;
        read[1] = gso_type;
        read[4..6].copy_from_slice(&gso_size.to_le_bytes());
        read[6..8].copy_from_slice(&20u16.to_le_bytes());
        read[8..10].copy_from_slice(&16u16.to_le_bytes());
        read.extend_from_slice(packet);
        read
    }

    /// A read of one plain packet.
    pub fn plain_read(packet: &[u8]) -> Vec<u8> {
        read_with(GSO_NONE, 0, packet)
    }

    /// A read of a TCP/IPv4 super-packet to be cut at `mss`.
    pub fn tso_read(mss: u16, packet: &[u8]) -> Vec<u8> {
        read_with(GSO_TCPV4, mss, packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp_checksum_ok(segment: &[u8], ip_len: usize) -> bool {
        fold(sum16(
            &segment[ip_len..],
            pseudo_header_sum(segment, 6, segment.len() - ip_len),
        )) == 0xffff
    }

    #[test]
    fn a_tso_packet_becomes_mss_sized_segments_with_valid_checksums() {
        let original = fixtures::tcp_v4(1448 * 3 + 100, 0x18 | 0x80 | 0x01); // ACK PSH CWR FIN
        let mut out = Vec::new();
        segment(&fixtures::read_with(GSO_TCPV4, 1448, &original), &mut out).unwrap();
        assert_eq!(out.len(), 4);
        assert_eq!(
            out.iter().map(|s| s.len()).collect::<Vec<_>>(),
            vec![1500, 1500, 1500, 152]
        );
        let mut payload = Vec::new();
        for (i, s) in out.iter().enumerate() {
            assert_eq!(
                internet_checksum(&s[..20]),
                0,
                "IP header checksum of segment {i}"
            );
            assert!(tcp_checksum_ok(s, 20), "TCP checksum of segment {i}");
            assert_eq!(u16::from_be_bytes([s[2], s[3]]) as usize, s.len());
            assert_eq!(
                u16::from_be_bytes([s[4], s[5]]),
                0xfff0u16.wrapping_add(i as u16)
            );
            let seq = u32::from_be_bytes(s[24..28].try_into().unwrap());
            assert_eq!(seq, 0xffff_ff00u32.wrapping_add(1448 * i as u32));
            let flags = s[33];
            assert_eq!(flags & 0x80 != 0, i == 0, "CWR on the first only");
            assert_eq!(flags & 0x09 != 0, i == 3, "FIN/PSH on the last only");
            assert!(flags & 0x10 != 0, "ACK on all");
            payload.extend_from_slice(&s[52..]);
        }
        assert_eq!(payload, original[52..]);
    }

    /// The word-at-a-time sum agrees with adding the 16-bit halves one by
    /// one, for every length and alignment of the tail, from all-ones
    /// words (every carry taken) to pseudo-random ones.
    #[test]
    fn the_checksum_is_the_sum_of_sixteen_bit_words() {
        fn by_halves(data: &[u8], initial: u64) -> u16 {
            let mut sum = initial;
            for pair in data.chunks(2) {
                sum += (u64::from(pair[0]) << 8) | u64::from(*pair.get(1).unwrap_or(&0));
            }
            fold(sum)
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let random: Vec<u8> = (0..1600)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let ones = vec![0xffu8; 1600];
        for data in [&random, &ones] {
            for len in (0..40).chain([1447, 1448, 1460, 1599, 1600]) {
                for initial in [0, 0x1_2345, 0xffff_ffff] {
                    assert_eq!(
                        fold(sum16(&data[..len], initial)),
                        by_halves(&data[..len], initial),
                        "{len} bytes from {initial:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn ipv6_super_packets_are_cut_too() {
        let mut p = vec![0u8; 40 + 20 + 3000];
        p[0] = 0x60;
        p[6] = 6;
        p[8..24].copy_from_slice(&[0xfd; 16]);
        p[24..40].copy_from_slice(&[0xfe; 16]);
        p[52] = 5 << 4;
        p[53] = 0x10;
        let mut out = Vec::new();
        segment(&fixtures::read_with(GSO_TCPV6, 1440, &p), &mut out).unwrap();
        assert_eq!(out.len(), 3);
        for s in &out {
            assert_eq!(u16::from_be_bytes([s[4], s[5]]) as usize, s.len() - 40);
            assert!(tcp_checksum_ok(s, 40));
        }
    }

    #[test]
    fn a_plain_packet_gets_its_partial_checksum_completed() {
        let mut p = fixtures::tcp_v4(200, 0x10);
        // As a sender with checksum offload leaves it: pseudo-header sum.
        let partial = fold(pseudo_header_sum(&p, 6, p.len() - 20));
        p[36..38].copy_from_slice(&partial.to_be_bytes());
        let mut out = Vec::new();
        segment(&fixtures::read_with(GSO_NONE, 0, &p), &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert!(tcp_checksum_ok(&out[0], 20));
        // Without the flag the packet passes untouched.
        let mut read = vec![0u8; VNET_HDR_LEN];
        read.extend_from_slice(&p);
        out.clear();
        segment(&read, &mut out).unwrap();
        assert_eq!(out[0], p);
    }

    #[test]
    fn unsupported_and_malformed_reads_are_errors_not_panics() {
        let mut out = Vec::new();
        assert_eq!(
            segment(&[0; 4], &mut out),
            Err(OffloadError::Malformed(
                "shorter than the virtio-net header"
            ))
        );
        assert_eq!(
            segment(
                &fixtures::read_with(3, 1000, &fixtures::tcp_v4(10, 0)),
                &mut out
            ),
            Err(OffloadError::Unsupported(3))
        );
        assert!(segment(
            &fixtures::read_with(GSO_TCPV4, 1000, &[0x45, 0, 0]),
            &mut out
        )
        .is_err());
        assert!(segment(
            &fixtures::read_with(GSO_TCPV4, 0, &fixtures::tcp_v4(10, 0)),
            &mut out
        )
        .is_err());
    }

    #[test]
    fn merging_the_segments_of_a_super_packet_gives_it_back() {
        let original = fixtures::tcp_v4(1448 * 5, 0x10 | 0x08); // ACK PSH
        let mut segments = Vec::new();
        segment(
            &fixtures::read_with(GSO_TCPV4, 1448, &original),
            &mut segments,
        )
        .unwrap();
        for w in segments.windows(2) {
            assert!(continues_run(&segments[0], &w[0], &w[1]));
        }
        let mut merged = Vec::new();
        merge_run(segments.iter().map(Vec::as_slice), &mut merged);
        let header = VnetHeader::parse(&merged).unwrap();
        assert_eq!(
            (
                header.gso_type,
                header.gso_size,
                header.csum_start,
                header.csum_offset
            ),
            (GSO_TCPV4, 1448, 20, 16)
        );
        // Cutting the merged packet again yields the same segments, byte for byte.
        let mut again = Vec::new();
        segment(&merged, &mut again).unwrap();
        let ids = |v: &Vec<Vec<u8>>| v.iter().map(|s| s[4..6].to_vec()).collect::<Vec<_>>();
        assert_eq!(again.len(), segments.len());
        for (a, b) in again.iter().zip(&segments) {
            assert_eq!(a[6..], b[6..], "everything but length/ID matches");
        }
        assert_eq!(ids(&again)[0], ids(&segments)[0]);
    }

    /// The headers for a gathered write, followed by each segment's
    /// payload, are the merged packet byte for byte, for IPv4 and IPv6.
    #[test]
    fn merged_headers_and_the_payloads_are_the_merged_packet() {
        let mut v6 = vec![0u8; 40 + 20 + 1440 * 3 + 7];
        v6[0] = 0x60;
        v6[6] = 6;
        v6[8..24].copy_from_slice(&[0xfd; 16]);
        v6[24..40].copy_from_slice(&[0xfe; 16]);
        v6[52] = 5 << 4;
        v6[53] = 0x10 | 0x08;
        for (gso, original) in [
            (GSO_TCPV4, fixtures::tcp_v4(1448 * 4 + 100, 0x10 | 0x08)),
            (GSO_TCPV6, v6),
        ] {
            let mss = if gso == GSO_TCPV4 { 1448 } else { 1440 };
            let mut segments = Vec::new();
            segment(&fixtures::read_with(gso, mss, &original), &mut segments).unwrap();
            let mut merged = Vec::new();
            merge_run(segments.iter().map(Vec::as_slice), &mut merged);
            let first = &segments[0];
            let (ip, tcp) = tcp_headers(first).unwrap();
            let bytes = segments.iter().map(Vec::len).sum();
            let mut gathered = Vec::new();
            let last = segments.last().unwrap();
            let starts = merged_headers(first, last, segments.len(), bytes, &mut gathered);
            assert_eq!(starts, Some(ip + tcp));
            assert_eq!(gathered.len(), VNET_HDR_LEN + ip + tcp);
            for s in &segments {
                gathered.extend_from_slice(&s[ip + tcp..]);
            }
            assert_eq!(gathered, merged, "GSO type {gso}");
        }
    }

    #[test]
    fn runs_stop_at_gaps_marks_flags_and_other_flows() {
        let original = fixtures::tcp_v4(1448 * 3, 0x10);
        let mut s = Vec::new();
        segment(&fixtures::read_with(GSO_TCPV4, 1448, &original), &mut s).unwrap();
        assert!(continues_run(&s[0], &s[0], &s[1]));
        assert!(!continues_run(&s[0], &s[0], &s[2]), "a gap in sequence");
        let mut marked = s[1].clone();
        crate::packet::set_ecn(&mut marked, crate::Ecn::Ce);
        assert!(
            !continues_run(&s[0], &s[0], &marked),
            "a different ECN mark"
        );
        let mut other_port = s[1].clone();
        other_port[21] ^= 1;
        assert!(!continues_run(&s[0], &s[0], &other_port), "another flow");
        let mut fin = s[1].clone();
        fin[33] |= 0x01;
        assert!(!continues_run(&s[0], &s[0], &fin), "FIN ends a run");
        let short = &s[1][..1000];
        assert!(
            !continues_run(&s[0], short, &s[2]),
            "only the last may be short"
        );
    }

    /// A UDP datagram with its checksum computed here the plain way (a
    /// 32-bit sum of 16-bit words over pseudo-header and datagram), not
    /// with the module's own helpers.
    fn udp_datagram(v4: bool, id: u16, payload: &[u8]) -> Vec<u8> {
        let ip = if v4 { 20 } else { 40 };
        let mut p = vec![0u8; ip + 8 + payload.len()];
        let udp_len = (8 + payload.len()) as u16;
        if v4 {
            p[0] = 0x45;
            let total = p.len() as u16;
            p[2..4].copy_from_slice(&total.to_be_bytes());
            p[4..6].copy_from_slice(&id.to_be_bytes());
            p[6] = 0x40; // DF
            p[8] = 64;
            p[9] = 17;
            p[12..16].copy_from_slice(&[100, 64, 0, 2]);
            p[16..20].copy_from_slice(&[100, 64, 0, 1]);
        } else {
            p[0] = 0x60;
            p[4..6].copy_from_slice(&udp_len.to_be_bytes());
            p[6] = 17;
            p[7] = 64;
            p[8] = 0xfd;
            p[23] = 2;
            p[24] = 0xfd;
            p[39] = 1;
        }
        p[ip..ip + 2].copy_from_slice(&40000u16.to_be_bytes());
        p[ip + 2..ip + 4].copy_from_slice(&5201u16.to_be_bytes());
        p[ip + 4..ip + 6].copy_from_slice(&udp_len.to_be_bytes());
        p[ip + 8..].copy_from_slice(payload);
        if v4 {
            let header_sum: u32 = (0..20)
                .step_by(2)
                .map(|i| u32::from(u16::from_be_bytes([p[i], p[i + 1]])))
                .sum();
            let mut sum = header_sum;
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        }
        let mut words: Vec<u8> = p[if v4 { 12 } else { 8 }..ip].to_vec();
        words.extend_from_slice(&[0, 17]);
        words.extend_from_slice(&udp_len.to_be_bytes());
        words.extend_from_slice(&p[ip..]);
        if words.len() % 2 == 1 {
            words.push(0);
        }
        let mut sum: u32 = words
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let checksum = match !(sum as u16) {
            0 => 0xffff,
            c => c,
        };
        p[ip + 6..ip + 8].copy_from_slice(&checksum.to_be_bytes());
        p
    }

    fn payload(seed: usize, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| ((i * 7 + seed * 13) % 251) as u8)
            .collect()
    }

    /// What a UDP_SEGMENT sender hands a device that offloads UDP: one
    /// header (UDP length of the whole, checksum holding the pseudo-header
    /// sum), the datagrams' payloads back to back.
    fn udp_super_packet(datagrams: &[Vec<u8>], ip: usize) -> Vec<u8> {
        let size = datagrams[0].len() - ip - 8;
        let mut read = vec![0u8; VNET_HDR_LEN];
        read[0] = F_NEEDS_CSUM;
        read[1] = GSO_UDP_L4;
        read[4..6].copy_from_slice(&(size as u16).to_le_bytes());
        read[6..8].copy_from_slice(&(ip as u16).to_le_bytes());
        read[8..10].copy_from_slice(&6u16.to_le_bytes());
        read.extend_from_slice(&datagrams[0]);
        for d in &datagrams[1..] {
            read.extend_from_slice(&d[ip + 8..]);
        }
        let total = read.len() - VNET_HDR_LEN;
        let packet = &mut read[VNET_HDR_LEN..];
        if ip == 20 {
            packet[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        } else {
            packet[4..6].copy_from_slice(&((total - 40) as u16).to_be_bytes());
        }
        packet[ip + 4..ip + 6].copy_from_slice(&((total - ip) as u16).to_be_bytes());
        packet[ip + 6..ip + 8].fill(0xaa); // partial: the cut recomputes it
        read
    }

    #[test]
    fn a_udp_segment_batch_is_cut_into_the_datagrams_byte_for_byte() {
        for v4 in [true, false] {
            let ip: usize = if v4 { 20 } else { 40 };
            let sizes = [1472, 1472, 1472, 1472, 701];
            let datagrams: Vec<Vec<u8>> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| udp_datagram(v4, 0xfffe_u16.wrapping_add(i as u16), &payload(i, n)))
                .collect();
            let mut out = Vec::new();
            segment(&udp_super_packet(&datagrams, ip), &mut out).unwrap();
            assert_eq!(out, datagrams, "v4 {v4}: IDs, lengths and checksums too");
        }
    }

    #[test]
    fn udp_datagrams_do_not_form_runs() {
        let d = |id: u16| udp_datagram(true, id, &payload(id as usize, 1000));
        let (first, second) = (d(7), d(8));
        assert!(!continues_run(&first, &first, &second));
        let tcp = fixtures::tcp_v4(100, 0x10);
        assert!(!continues_run(&tcp, &tcp, &first), "UDP does not join TCP");
    }

    #[test]
    fn checksum_matches_the_rfc_1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
        assert_eq!(
            !internet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
    }
}
