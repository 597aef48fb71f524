//! Link rates in bits per second, read in the units `tc` uses, and the
//! serialization time of a packet at a rate.

use crate::error::{scaled_decimal, split_number_unit, ParseError};
use crate::time::{Nanos, NS_PER_SEC};
use std::fmt;

const RATE_HELP: &str = "a rate such as 10mbit, 1.5gbit, 800kbit, 12mbps (bytes/s) or 100000 (bit/s), as tc writes them";

/// A rate in bits per second. Always positive: a zero rate would never
/// serialize anything and is refused at parse time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate {
    bits_per_sec: u64,
}

impl Rate {
    pub fn from_bits_per_sec(bits_per_sec: u64) -> Option<Rate> {
        (bits_per_sec > 0).then_some(Rate { bits_per_sec })
    }

    pub fn bits_per_sec(self) -> u64 {
        self.bits_per_sec
    }

    /// Reads a rate as `tc` does: `bit`/bare = bit/s, `kbit`, `mbit`, `gbit`,
    /// `tbit` (SI, ×1000); the IEC forms `kibit`, `mibit`, `gibit`, `tibit`
    /// (×1024); and the byte forms `bps`, `kbps`, `mbps`, `gbps`, `tbps`
    /// (bytes per second, SI), `kibps`, `mibps`, `gibps`, `tibps`.
    /// Note that `12mbps` is therefore 96 Mbit/s, exactly as in tc.
    pub fn parse(text: &str) -> Result<Rate, ParseError> {
        let lowered = text.trim().to_ascii_lowercase();
        let (number, unit) = split_number_unit(&lowered);
        let multiplier: u128 = match unit {
            "" | "bit" => 1,
            "kbit" => 1_000,
            "mbit" => 1_000_000,
            "gbit" => 1_000_000_000,
            "tbit" => 1_000_000_000_000,
            "kibit" => 1 << 10,
            "mibit" => 1 << 20,
            "gibit" => 1 << 30,
            "tibit" => 1 << 40,
            "bps" => 8,
            "kbps" => 8_000,
            "mbps" => 8_000_000,
            "gbps" => 8_000_000_000,
            "tbps" => 8_000_000_000_000,
            "kibps" => 8 << 10,
            "mibps" => 8 << 20,
            "gibps" => 8 << 30,
            "tibps" => 8 << 40,
            _ => return Err(ParseError::new(text, RATE_HELP)),
        };
        let bits =
            scaled_decimal(number, multiplier).ok_or_else(|| ParseError::new(text, RATE_HELP))?;
        let bits =
            u64::try_from(bits).map_err(|_| ParseError::new(text, "a rate below 18 Ebit/s"))?;
        Rate::from_bits_per_sec(bits).ok_or_else(|| ParseError::new(text, "a rate above zero"))
    }

    /// Time to put `bytes` on the wire at this rate, rounded up to a whole
    /// nanosecond. Use [`Serializer`] for a stream of packets, which carries
    /// the rounding remainder so long runs keep the exact average rate.
    pub fn transmit_time(self, bytes: u64) -> Nanos {
        let numerator = bytes as u128 * 8 * NS_PER_SEC as u128;
        numerator.div_ceil(self.bits_per_sec as u128) as Nanos
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.bits_per_sec;
        let (value, unit) = if bps >= 1_000_000_000 && bps.is_multiple_of(1_000_000) {
            (bps as f64 / 1e9, "gbit")
        } else if bps >= 1_000_000 && bps.is_multiple_of(1_000) {
            (bps as f64 / 1e6, "mbit")
        } else if bps >= 1_000 {
            (bps as f64 / 1e3, "kbit")
        } else {
            (bps as f64, "bit")
        };
        let text = format!("{value:.3}");
        write!(
            f,
            "{}{unit}",
            text.trim_end_matches('0').trim_end_matches('.')
        )
    }
}

/// Serialization of successive packets at one rate, exact over any number of
/// packets: the sub-nanosecond remainder of each packet's time is carried to
/// the next instead of being rounded away.
#[derive(Debug, Clone)]
pub struct Serializer {
    rate: Rate,
    /// Remainder of the last division, in units of 1/(bits_per_sec) ns.
    carry: u128,
}

impl Serializer {
    pub fn new(rate: Rate) -> Self {
        Serializer { rate, carry: 0 }
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Time on the wire for the next packet of `bytes` bytes.
    pub fn next(&mut self, bytes: u64) -> Nanos {
        let bps = self.rate.bits_per_sec as u128;
        let numerator = bytes as u128 * 8 * NS_PER_SEC as u128 + self.carry;
        self.carry = numerator % bps;
        (numerator / bps) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_units() {
        assert_eq!(Rate::parse("10mbit").unwrap().bits_per_sec(), 10_000_000);
        assert_eq!(
            Rate::parse("1.5gbit").unwrap().bits_per_sec(),
            1_500_000_000
        );
        assert_eq!(Rate::parse("800kbit").unwrap().bits_per_sec(), 800_000);
        assert_eq!(Rate::parse("12mbps").unwrap().bits_per_sec(), 96_000_000);
        assert_eq!(Rate::parse("100000").unwrap().bits_per_sec(), 100_000);
        assert_eq!(Rate::parse("1mibit").unwrap().bits_per_sec(), 1 << 20);
        assert_eq!(Rate::parse("10Mbit").unwrap().bits_per_sec(), 10_000_000);
    }

    #[test]
    fn bad_rates_are_refused() {
        for bad in ["", "0mbit", "ten", "10mb", "-1mbit", "10 furlongs"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_full_packet_at_10mbit_takes_1_2_ms() {
        let rate = Rate::parse("10mbit").unwrap();
        assert_eq!(rate.transmit_time(1500), 1_200_000);
    }

    #[test]
    fn serializer_keeps_the_exact_average() {
        // 3 bytes at 7 bit/s do not divide evenly; a million packets must
        // still add up to the exact total.
        let rate = Rate::from_bits_per_sec(7_000_000).unwrap();
        let mut ser = Serializer::new(rate);
        let total: u128 = (0..1_000_000).map(|_| ser.next(3) as u128).sum();
        let exact = 3u128 * 8 * 1_000_000 * 1_000_000_000 / 7_000_000;
        assert!(total.abs_diff(exact) <= 1, "{total} vs {exact}");
    }

    #[test]
    fn display_round_trips_common_rates() {
        for text in ["10mbit", "1.5gbit", "800kbit"] {
            assert_eq!(Rate::parse(text).unwrap().to_string(), text);
        }
    }
}
