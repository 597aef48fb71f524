//! Cake's ACK filter (cake_ack_filter): when a pure TCP ACK joins a flow
//! queue that already holds an older ACK of the same connection which the
//! new one makes redundant, the older one is dropped. The rules keep every
//! bit of information the sender needs: only pure ACKs with no unknown
//! options, no newer timestamps, no larger cumulative ACK and no SACK
//! block the new ACK does not cover; a change of ECE/CWR (or the SCE echo)
//! between eligible ACKs stops the search. The normal filter needs two
//! eligible ACKs before it drops the oldest; the aggressive one drops a
//! single eligible ACK if it directly precedes the new one.

use emu_core::packet::{ip_version, tcp_header};

const FLAG_ACK: u32 = 0x0010_0000;
const FLAG_SYN: u32 = 0x0002_0000;
/// ECE, CWR and the SCE echo (the former NS bit).
const FLAGS_ECN: u32 = 0x00C0_0000 | 0x0100_0000;
/// Every flag but ECE/CWR: only ACK may be set on a droppable ACK.
const FLAGS_CHECKED: u32 = 0x0F3F_0000;

const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_SACK: u8 = 5;
const OPT_TIMESTAMP: u8 = 8;
const OPT_MD5: u8 = 19;

/// A parsed TCP segment: the parts the filter compares.
struct Segment<'a> {
    addresses: &'a [u8],
    ports: &'a [u8],
    flags: u32,
    ack: u32,
    options: &'a [u8],
    payload: usize,
    version: u8,
}

fn segment(data: &[u8]) -> Option<Segment<'_>> {
    let version = ip_version(data)?;
    let (offset, header_len) = tcp_header(data)?;
    let tcp = &data[offset..offset + header_len];
    let ip_payload = match version {
        4 => u16::from_be_bytes([data[2], data[3]]) as usize - (data[0] & 0x0f) as usize * 4,
        _ => u16::from_be_bytes([data[4], data[5]]) as usize + 40 - offset,
    };
    Some(Segment {
        addresses: if version == 4 {
            &data[12..20]
        } else {
            &data[8..40]
        },
        ports: &tcp[0..4],
        flags: u32::from_be_bytes([tcp[12], tcp[13], tcp[14], tcp[15]]),
        ack: u32::from_be_bytes([tcp[8], tcp[9], tcp[10], tcp[11]]),
        options: &tcp[20..],
        payload: ip_payload.saturating_sub(header_len),
        version,
    })
}

/// The options of a segment as (kind, body); stops at malformed ones.
fn options(bytes: &[u8]) -> impl Iterator<Item = Result<(u8, &[u8]), ()>> + '_ {
    let mut rest = bytes;
    std::iter::from_fn(move || loop {
        let (&kind, tail) = rest.split_first()?;
        match kind {
            OPT_EOL => return None,
            OPT_NOP => rest = tail,
            _ => {
                let size = *tail.first()? as usize;
                if size < 2 || size > rest.len() {
                    rest = &[];
                    return Some(Err(()));
                }
                let body = &rest[2..size];
                rest = &rest[size..];
                return Some(Ok((kind, body)));
            }
        }
    })
}

fn find_option(bytes: &[u8], kind: u8) -> Option<&[u8]> {
    options(bytes)
        .map_while(Result::ok)
        .find(|(k, _)| *k == kind)
        .map(|(_, body)| body)
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// Sequence comparison modulo 2^32.
fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

fn timestamps(s: &Segment) -> (u32, u32) {
    match find_option(s.options, OPT_TIMESTAMP) {
        Some(body) if body.len() == 8 => (be32(body), be32(&body[4..])),
        _ => (0, 0),
    }
}

/// cake_tcph_may_drop: a pure ACK whose options hold nothing the newer
/// ACK (with timestamps `tsval`, `tsecr`) does not also carry.
fn may_drop(s: &Segment, tsval: u32, tsecr: u32) -> bool {
    if s.flags & FLAGS_CHECKED != FLAG_ACK {
        return false;
    }
    for option in options(s.options) {
        let Ok((kind, body)) = option else {
            return true;
        };
        match kind {
            OPT_MD5 => {}
            OPT_SACK if (body.len() + 2) % 8 != 2 => return false,
            OPT_SACK => {}
            OPT_TIMESTAMP => {
                if body.len() != 8 || after(be32(body), tsval) || after(be32(&body[4..]), tsecr) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

fn sack_blocks(s: &Segment) -> Vec<(u32, u32)> {
    find_option(s.options, OPT_SACK)
        .map(|body| {
            body.chunks_exact(8)
                .map(|b| (be32(b), be32(&b[4..])))
                .collect()
        })
        .unwrap_or_default()
}

/// cake_tcph_sack_compare: −1 if `a` SACKs something `b` does not (or
/// carries a D-SACK), 1 if `b` SACKs more bytes, 0 if they are the same.
fn sack_compare(a: &Segment, b: &Segment) -> i32 {
    let (blocks_a, blocks_b) = (sack_blocks(a), sack_blocks(b));
    match (blocks_a.is_empty(), blocks_b.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        _ => {}
    }
    let mut bytes_a = 0u32;
    for &(start_a, end_a) in &blocks_a {
        if after(a.ack, start_a) {
            return -1; // D-SACK: never drop
        }
        bytes_a = bytes_a.wrapping_add(end_a.wrapping_sub(start_a));
        let covered = blocks_b
            .iter()
            .any(|&(start_b, end_b)| !after(start_b, start_a) && !after(end_a, end_b));
        if !covered {
            return -1;
        }
    }
    let bytes_b = blocks_b.iter().fold(0u32, |sum, &(start, end)| {
        sum.wrapping_add(end.wrapping_sub(start))
    });
    if bytes_b > bytes_a {
        1
    } else {
        0
    }
}

/// Given a flow queue's packets in order (the newest last), the index of
/// an older ACK the newest makes redundant, if any.
pub fn redundant_ack<'a>(
    queue: impl Iterator<Item = &'a [u8]> + Clone,
    aggressive: bool,
) -> Option<usize> {
    let newest_data = queue.clone().last()?;
    let count = queue.clone().count();
    if count < 2 {
        return None;
    }
    let newest = segment(newest_data)?;
    if newest.flags & (FLAG_ACK | FLAG_SYN) != FLAG_ACK {
        return None;
    }
    let (tsval, tsecr) = timestamps(&newest);
    let mut eligible: Option<(usize, u32)> = None;
    let mut found = 0;
    for (index, data) in queue.take(count - 1).enumerate() {
        let Some(check) = segment(data) else { continue };
        if check.version != newest.version
            || check.ports != newest.ports
            || check.addresses != newest.addresses
        {
            continue;
        }
        if let Some((_, flags)) = eligible {
            if check.flags & FLAGS_ECN != flags {
                eligible = None;
                found -= 1;
            }
        }
        if !may_drop(&check, tsval, tsecr) || check.payload != 0 || after(check.ack, newest.ack) {
            continue;
        }
        let sack = sack_compare(&check, &newest);
        if sack < 0 || (check.ack == newest.ack && sack == 0) {
            continue;
        }
        if eligible.is_none() {
            eligible = Some((index, check.flags & FLAGS_ECN));
        }
        found += 1;
        if found > 1 {
            return eligible.map(|(i, _)| i);
        }
    }
    match eligible {
        Some((index, flags))
            if aggressive && index + 2 == count && flags == newest.flags & FLAGS_ECN =>
        {
            Some(index)
        }
        _ => None,
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// An IPv4 TCP segment with `payload` bytes and the given options.
    pub fn tcp(sport: u16, flags: u8, ack: u32, payload: usize, options: &[u8]) -> Vec<u8> {
        let tcp_len = 20 + options.len();
        let total = 20 + tcp_len + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 2]);
        p[16..20].copy_from_slice(&[10, 0, 0, 1]);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&80u16.to_be_bytes());
        p[28..32].copy_from_slice(&ack.to_be_bytes());
        p[32] = ((tcp_len / 4) as u8) << 4;
        p[33] = flags;
        p[40..40 + options.len()].copy_from_slice(options);
        let checksum = emu_core::packet::ipv4_header_checksum(&p[..20]);
        p[10..12].copy_from_slice(&checksum.to_be_bytes());
        p
    }

    const ACK: u8 = 0x10;

    fn run(queue: &[Vec<u8>], aggressive: bool) -> Option<usize> {
        redundant_ack(queue.iter().map(|p| p.as_slice()), aggressive)
    }

    #[test]
    fn drops_the_oldest_of_two_redundant_acks() {
        let q = vec![
            tcp(1, ACK, 100, 0, &[]),
            tcp(1, ACK, 200, 0, &[]),
            tcp(1, ACK, 300, 0, &[]),
        ];
        assert_eq!(run(&q, false), Some(0));
        // One eligible ACK is only dropped by the aggressive filter.
        assert_eq!(run(&q[1..], false), None);
        assert_eq!(run(&q[1..], true), Some(0));
    }

    #[test]
    fn keeps_acks_that_carry_information() {
        let newest = tcp(1, ACK, 300, 0, &[]);
        // Data, a SYN, a larger ACK, another connection, ECE changes.
        for older in [
            tcp(1, ACK, 100, 10, &[]),
            tcp(1, ACK | 0x02, 100, 0, &[]),
            tcp(1, ACK, 400, 0, &[]),
            tcp(2, ACK, 100, 0, &[]),
        ] {
            let q = vec![older.clone(), older, newest.clone()];
            assert_eq!(run(&q, true), None);
        }
        let q = vec![
            tcp(1, ACK, 100, 0, &[]),
            tcp(1, ACK | 0x40, 200, 0, &[]),
            newest.clone(),
        ];
        assert_eq!(run(&q, false), None, "ECE differs between the candidates");
        // An older ACK SACKing a block the newer one does not cover.
        let sack = |start: u32, end: u32| {
            let mut o = vec![1, 1, OPT_SACK, 10];
            o.extend_from_slice(&start.to_be_bytes());
            o.extend_from_slice(&end.to_be_bytes());
            o
        };
        let q = vec![
            tcp(1, ACK, 100, 0, &sack(500, 600)),
            tcp(1, ACK, 300, 0, &sack(700, 800)),
        ];
        assert_eq!(run(&q, true), None);
        let q = vec![
            tcp(1, ACK, 100, 0, &sack(500, 600)),
            tcp(1, ACK, 300, 0, &sack(500, 800)),
        ];
        assert_eq!(run(&q, true), Some(0));
    }
}
