//! Duplication and corruption of packets (netem's `duplicate P` and
//! `corrupt P`), each with its own seeded draw per packet.
//!
//! Corruption flips one random bit past the IP header, as netem flips one
//! bit in the packet's data, so the IP header stays readable (the packet is
//! still routed and logged by its flow) and the transport checksum at the
//! receiver catches it.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Clone)]
pub struct Mangle {
    duplicate: f64,
    corrupt: f64,
    rng: ChaCha8Rng,
}

impl Mangle {
    pub fn new(duplicate: f64, corrupt: f64, seed: u64, stream: u64) -> Mangle {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6475_706c_6963_6174);
        rng.set_stream(stream);
        Mangle {
            duplicate,
            corrupt,
            rng,
        }
    }

    /// Draws whether this packet is sent twice.
    #[inline]
    pub fn duplicates(&mut self) -> bool {
        self.duplicate > 0.0 && self.rng.gen::<f64>() < self.duplicate
    }

    /// Draws whether this packet is corrupted, and if so flips one bit of
    /// it past the IP header. False if it was not (or has no payload).
    #[inline]
    pub fn corrupt(&mut self, data: &mut [u8]) -> bool {
        if self.corrupt <= 0.0 || self.rng.gen::<f64>() >= self.corrupt {
            return false;
        }
        let header = match data.first().map(|b| b >> 4) {
            Some(4) => ((data[0] & 0x0f) as usize * 4).max(20),
            Some(6) => 40,
            _ => 0,
        };
        if data.len() <= header {
            return false;
        }
        let bit = self.rng.gen_range(0..(data.len() - header) * 8);
        data[header + bit / 8] ^= 1 << (bit % 8);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;

    #[test]
    fn corruption_flips_one_bit_past_the_ip_header() {
        let mut mangle = Mangle::new(0.0, 1.0, 1, 0);
        let original = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 200);
        for _ in 0..1000 {
            let mut data = original.clone();
            assert!(mangle.corrupt(&mut data));
            let flipped: u32 = data
                .iter()
                .zip(&original)
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            assert_eq!(flipped, 1);
            assert_eq!(data[..20], original[..20], "the IP header is intact");
        }
    }

    #[test]
    fn duplication_and_corruption_happen_at_their_rates() {
        let mut mangle = Mangle::new(0.1, 0.05, 4, 0);
        let n = 200_000;
        let duplicated = (0..n).filter(|_| mangle.duplicates()).count() as f64 / n as f64;
        let mut data = vec![0x45u8; 100];
        let corrupted = (0..n).filter(|_| mangle.corrupt(&mut data)).count() as f64 / n as f64;
        assert!((duplicated - 0.1).abs() < 0.003, "{duplicated}");
        assert!((corrupted - 0.05).abs() < 0.003, "{corrupted}");
    }
}
