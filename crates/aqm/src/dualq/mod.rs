//! The dual queues of the AQM evaluation thesis (2017): an ECT(1) packet
//! goes to the low-latency (L) FIFO, every other packet to the classic (C)
//! FIFO, and the two are served by a scheduler and signalled by an AQM
//! each discipline chooses:
//!
//! - [`uncoupled`]: each FIFO under its own stateless RED or PIE, served
//!   by a round robin weighted by the flow counts;
//! - [`pi2`]: the coupled PI² of draft-ietf-tsvwg-aqm-dualq-coupled-01's
//!   pseudo-code, under a time-shifted FIFO;
//! - [`cred`]: the coupled Curvy RED, with strict priority to L;
//! - [`pie`]: the thesis's coupled PIE, deciding at enqueue, with strict
//!   priority to L.
//!
//! This module holds what they share: the classifier, the pair of FIFOs
//! with one buffer limit over both, and the weighted round robin.

pub mod cred;
pub mod pi2;
pub mod pie;
pub mod uncoupled;

use crate::grammar::Opt;
use crate::Fifo;
use emu_core::size::parse_count;
use emu_core::{Ecn, Nanos, Packet};

/// The two traffic classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Low latency: ECT(1) packets.
    L,
    /// Classic: Not-ECT, ECT(0) and CE packets.
    C,
}

/// The thesis's classifier: ECT(1) to L, everything else to C. (RFC 9332
/// also puts CE in L; the thesis's runs had no CE arriving, and it names
/// ECT(1) alone.)
pub fn classify(packet: &Packet) -> Class {
    if packet.ecn() == Some(Ecn::Ect1) {
        Class::L
    } else {
        Class::C
    }
}

/// The L and C FIFOs, with one buffer limit in packets over both.
#[derive(Debug, Default)]
pub(crate) struct Pair {
    pub(crate) l: Fifo,
    pub(crate) c: Fifo,
}

impl Pair {
    pub(crate) fn fifo(&mut self, class: Class) -> &mut Fifo {
        match class {
            Class::L => &mut self.l,
            Class::C => &mut self.c,
        }
    }

    /// Takes an arrival at `now` into its class's FIFO, or drops it at the
    /// tail if the pair already holds `limit` packets.
    pub(crate) fn admit(
        &mut self,
        packet: Packet,
        limit: u64,
        now: Nanos,
        outcome: &mut crate::Outcome,
    ) -> bool {
        if self.full(limit) {
            outcome.drop(packet, emu_core::log::DropReason::Tail, now);
            return false;
        }
        let class = classify(&packet);
        self.fifo(class).push(packet, now);
        true
    }

    /// Whether an arrival finds the buffer full.
    pub(crate) fn full(&self, limit: u64) -> bool {
        self.packets() as u64 >= limit
    }

    pub(crate) fn packets(&self) -> usize {
        self.l.len() + self.c.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.l.bytes + self.c.bytes
    }
}

/// How long the head of `fifo` has waited at `now`; 0 when it is empty.
pub(crate) fn head_sojourn(fifo: &Fifo, now: Nanos) -> Nanos {
    fifo.packets
        .front()
        .map_or(0, |head| now.saturating_sub(head.enqueued))
}

/// A round robin in packets weighted `l : c` (the flow counts of each
/// class): L is served up to `l` packets, then C up to `c`, and so on. It
/// is work-conserving: a class with nothing queued loses the rest of its
/// turn to the other, so neither capacity the other leaves idle is lost.
#[derive(Debug, Clone)]
pub(crate) struct Wrr {
    weights: [u32; 2],
    turn: Class,
    left: u32,
}

impl Wrr {
    pub(crate) fn new(l: u32, c: u32) -> Wrr {
        let weights = [l.max(1), c.max(1)];
        Wrr {
            weights,
            turn: Class::L,
            left: weights[0],
        }
    }

    fn weight(&self, class: Class) -> u32 {
        self.weights[(class == Class::C) as usize]
    }

    /// The class to serve next, given which hold packets; None if neither.
    pub(crate) fn next(&mut self, has_l: bool, has_c: bool) -> Option<Class> {
        let has = |class| if class == Class::L { has_l } else { has_c };
        if !has_l && !has_c {
            return None;
        }
        if self.left == 0 || !has(self.turn) {
            self.turn = if self.turn == Class::L {
                Class::C
            } else {
                Class::L
            };
            self.left = self.weight(self.turn);
            if !has(self.turn) {
                // The other class is empty too at its turn: back to this one.
                self.turn = if self.turn == Class::L {
                    Class::C
                } else {
                    Class::L
                };
                self.left = self.weight(self.turn);
            }
        }
        self.left -= 1;
        Some(self.turn)
    }
}

/// A 1500-byte UDP packet with the TOS byte `tos` (its low two bits the
/// ECN field), for the tests of the thesis's queues.
#[cfg(test)]
pub(crate) fn test_packet(tos: u8) -> Packet {
    use emu_core::packet::build::ipv4_udp;
    Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, tos, 1500), 0)
}

/// The options every dual queue of the thesis takes besides its own:
/// the buffer over both queues and the seed.
pub(crate) const LIMIT_OPTION: Opt = (
    "limit",
    "PACKETS",
    "1000",
    "most packets held in both queues",
);
pub(crate) const SEED_OPTION: Opt = ("seed", "N", "1", "seed of the random decisions");

/// A packet count that fits a u32, larger ones held at u32::MAX.
pub(crate) fn packet_count(text: &str) -> Result<u32, emu_core::error::ParseError> {
    parse_count(text).map(|n| n.min(u32::MAX as u64) as u32)
}

/// A time for a `describe` line: `15ms`.
pub(crate) fn time(ns: Nanos) -> String {
    emu_core::time::format_duration(ns).replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ect1_is_low_latency() {
        for (tos, class) in [
            (0b01, Class::L),
            (0b10, Class::C),
            (0b00, Class::C),
            (0b11, Class::C),
        ] {
            assert_eq!(classify(&test_packet(tos)), class, "tos {tos:#b}");
        }
    }

    /// Weights 2 : 3 with both classes backlogged give L, L, C, C, C, ...;
    /// an empty class gives its turn away.
    #[test]
    fn the_round_robin_follows_the_weights_and_conserves_work() {
        let mut wrr = Wrr::new(2, 3);
        let order: Vec<Class> = (0..10).filter_map(|_| wrr.next(true, true)).collect();
        use Class::{C, L};
        assert_eq!(order, [L, L, C, C, C, L, L, C, C, C]);
        assert_eq!(wrr.next(false, true), Some(C));
        assert_eq!(wrr.next(false, true), Some(C), "L's turn given to C");
        assert_eq!(wrr.next(true, false), Some(L));
        assert_eq!(wrr.next(false, false), None);
        let mut wrr = Wrr::new(1, 10);
        let l = (0..1100)
            .filter(|_| wrr.next(true, true) == Some(L))
            .count();
        assert_eq!(l, 100, "1 in 11 to L at 1 : 10");
    }
}
