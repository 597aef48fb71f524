//! Congestion marks on real headers.

use crate::Outcome;
use emu_core::log::Mark;
use emu_core::{Ecn, Nanos, Packet};

/// Sets CE on an ECN-capable packet, as Linux's INET_ECN_set_ce does (RFC
/// 3168 §5): ECT(0) and ECT(1) become CE, a packet already CE counts as
/// marked, a Not-ECT packet cannot be marked (the caller drops it instead).
pub fn set_ce(packet: &mut Packet) -> bool {
    match packet.ecn() {
        Some(Ecn::Ect0) | Some(Ecn::Ect1) => packet.set_ecn(Ecn::Ce),
        Some(Ecn::Ce) => true,
        _ => false,
    }
}

/// Signals congestion on a packet the queue keeps: CE on an ECT packet,
/// recorded in `outcome` only if the field changed (a packet that arrived
/// CE stays so, unrecorded). False for a Not-ECT packet, which the caller
/// drops instead.
pub fn mark(packet: &mut Packet, now: Nanos, outcome: &mut Outcome) -> bool {
    if packet.ecn() == Some(Ecn::Ce) {
        return true;
    }
    let marked = set_ce(packet);
    if marked {
        outcome.mark(packet, Mark::Ce, now);
    }
    marked
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;
    use emu_core::packet::ipv4_header_checksum;

    #[test]
    fn only_ect_packets_take_ce_and_the_checksum_stays_right() {
        for (tos, marked, after) in [
            (0b10, true, Ecn::Ce),
            (0b01, true, Ecn::Ce),
            (0b11, true, Ecn::Ce),
            (0b00, false, Ecn::NotEct),
        ] {
            let mut p = Packet::new(
                ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0xb8 | tos, 100),
                0,
            );
            assert_eq!(set_ce(&mut p), marked);
            assert_eq!(p.ecn(), Some(after));
            assert_eq!(
                ipv4_header_checksum(&p.data[..20]),
                u16::from_be_bytes([p.data[10], p.data[11]])
            );
            assert_eq!(p.dscp(), Some(0xb8 >> 2), "DSCP untouched");
        }
    }
}
