//! The deficit-mode shaper of cake, in the reduced form the SCE project's
//! lightweight queues carry (twin_codel_af, lfq_cobalt): one virtual clock,
//! `time_next_packet`, that each sent packet pushes on by its size (after
//! link-layer compensation) at the configured rate. A packet may leave
//! once the clock is not in the future; an idle queue's clock is pulled up
//! to `now`, so idle time banks no credit. No failsafe and no tins.
//!
//! Cost: O(1) per packet.

use crate::cake::overhead::Overhead;
use crate::cake::tins::shaper_rate;
use emu_core::{Nanos, Packet};

#[derive(Debug, Clone)]
pub struct DeficitShaper {
    rate_ns: u64,
    rate_shift: u32,
    overhead: Overhead,
    time_next_packet: Nanos,
}

impl DeficitShaper {
    /// A shaper of `bandwidth` bytes/s (0: unlimited) charging packets
    /// their size after `overhead`.
    pub fn new(bandwidth: u64, overhead: Overhead) -> DeficitShaper {
        let (rate_ns, rate_shift) = shaper_rate(bandwidth);
        DeficitShaper {
            rate_ns,
            rate_shift,
            overhead,
            time_next_packet: 0,
        }
    }

    /// On an arrival to an empty queue: a clock in the past moves to `now`.
    pub fn unstale(&mut self, now: Nanos) {
        self.time_next_packet = self.time_next_packet.max(now);
    }

    /// Whether the shaper holds packets back at `now`.
    pub fn holds(&self, now: Nanos) -> bool {
        self.time_next_packet > now
    }

    /// When the next packet may leave, for a shaped queue.
    pub fn next_ready(&self) -> Option<Nanos> {
        (self.rate_ns != 0).then_some(self.time_next_packet)
    }

    /// Charges a packet that was sent.
    pub fn advance(&mut self, packet: &Packet) {
        if self.rate_ns != 0 {
            let len = self
                .overhead
                .adjusted(packet.frame_len() as u32, packet.link_header as u32);
            self.time_next_packet += (len as u64 * self.rate_ns) >> self.rate_shift;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;

    #[test]
    fn each_packet_costs_its_serialisation_time_and_idle_banks_nothing() {
        // 1 MB/s: a 1000-byte packet takes 1 ms.
        let mut s = DeficitShaper::new(1_000_000, Overhead::default());
        let p = Packet::new(ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0, 1000), 0);
        assert_eq!(p.frame_len(), 1000);
        s.unstale(10_000_000);
        assert!(!s.holds(10_000_000));
        s.advance(&p);
        assert!(s.holds(10_999_999) && !s.holds(11_000_000));
        assert_eq!(s.next_ready(), Some(11_000_000));
        s.unstale(50_000_000);
        assert_eq!(s.next_ready(), Some(50_000_000), "no credit from idle time");
        let unlimited = DeficitShaper::new(0, Overhead::default());
        assert_eq!(unlimited.next_ready(), None);
    }
}
