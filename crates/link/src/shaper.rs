//! A rate enforced as Linux's htb enforces it on a fast device, in place
//! of a serializing link: `shaper = "htb"` (`--shaper htb`), optionally
//! `htb burst BYTES`.
//!
//! A serializing link (the default) starts a packet when the one before it
//! has been sent and delivers it when its own bytes are: a packet that
//! arrives 1.4 ms after another at 5 Mbit/s (2.4 ms a packet) waits 1 ms.
//! htb instead keeps a token bucket in time units (sch_htb.c,
//! `htb_charge_class`, `htb_class_mode`):
//!
//! - the bucket fills at one nanosecond a nanosecond up to `buffer`, the
//!   burst's bytes at the current rate;
//! - a packet may leave whenever the bucket is not in debt (tokens at or
//!   above 0), and is charged its bytes at the current rate after it
//!   leaves, so tokens may go below 0;
//! - it leaves at once, as on a veth or a fast NIC: no serialization time
//!   is added, so the path's delay is one packet time shorter than behind
//!   a serializing link at the same rate.
//!
//! So after an idle moment htb lets a packet through at once where a
//! serializer would hold it, and its long-run rate is the same. An AQM
//! that is a child of htb measures the sojourn until htb takes the packet,
//! as here. Without hysteresis (htb's default) the class may send at
//! tokens ≥ 0; that is the rule kept.
//!
//! The default burst is the one `tc` computes when a class gives none:
//! `rate / HZ + mtu` bytes with tc's mtu of 1600 and, on a kernel with
//! high-resolution timers, HZ = 10⁹ — 1600 bytes below 8 Gbit/s.
//!
//! Cost: a subtraction and a comparison a packet; nothing without it.

use emu_core::size::parse_size;
use emu_core::{Nanos, Rate};
use std::fmt;

/// tc's `mtu` when a class gives none, the fixed part of its default burst.
const TC_DEFAULT_MTU: u64 = 1600;
/// The psched clock's ticks a second on a kernel with high-resolution
/// timers, which tc divides the rate by for the rest of the burst.
const TC_HZ: u64 = 1_000_000_000;

/// What `--shaper` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShaperSpec {
    /// The bucket's size in bytes; None takes tc's default at each rate.
    pub burst: Option<u64>,
}

impl ShaperSpec {
    /// Reads `htb` or `htb burst BYTES` (BYTES in tc's size units).
    pub fn parse(text: &str) -> Result<ShaperSpec, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            ["htb"] => Ok(ShaperSpec { burst: None }),
            ["htb", "burst", size] => match parse_size(size) {
                Ok(0) => Err(format!("'{size}': a burst is 1 byte or more")),
                Ok(bytes) => Ok(ShaperSpec { burst: Some(bytes) }),
                Err(e) => Err(e.to_string()),
            },
            _ => Err(format!(
                "'{text}' is not a shaper: write htb or htb burst BYTES (e.g. htb burst 3000)"
            )),
        }
    }

    /// The bucket's bytes at `bits_per_sec`: the given burst, or tc's.
    pub fn burst_at(&self, bits_per_sec: u64) -> u64 {
        self.burst
            .unwrap_or(TC_DEFAULT_MTU + bits_per_sec / 8 / TC_HZ)
    }
}

impl fmt::Display for ShaperSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.burst {
            None => write!(f, "htb"),
            Some(bytes) => write!(f, "htb burst {bytes}"),
        }
    }
}

/// htb's token bucket for one direction, in nanoseconds of sending time.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    spec: ShaperSpec,
    /// Sending time credited (positive) or owed (negative) at `checked`.
    tokens: i128,
    checked: Nanos,
    /// The bucket's size in time at the last rate asked for: (bit/s, ns),
    /// so a constant rate divides once, not once a packet.
    buffer: (u64, Nanos),
}

impl TokenBucket {
    /// A bucket that starts full at `start`, as a new htb class does.
    pub fn new(spec: ShaperSpec, start: Nanos) -> TokenBucket {
        TokenBucket {
            spec,
            tokens: i128::MAX,
            checked: start,
            buffer: (0, 0),
        }
    }

    /// The burst's sending time at `rate`.
    pub fn buffer_at(&mut self, rate: Rate) -> Nanos {
        let bps = rate.bits_per_sec();
        if self.buffer.0 != bps {
            self.buffer = (bps, rate.transmit_time(self.spec.burst_at(bps)));
        }
        self.buffer.1
    }

    pub fn spec(&self) -> ShaperSpec {
        self.spec
    }

    /// Lets a packet leave at `now`, which must be at or after the time
    /// the last call returned: charges its sending time `cost` after
    /// filling the bucket up to `buffer` (the burst's sending time at the
    /// current rate). Returns when the next packet may leave.
    pub fn release(&mut self, now: Nanos, cost: Nanos, buffer: Nanos) -> Nanos {
        let filled = self
            .tokens
            .saturating_add(now.saturating_sub(self.checked) as i128)
            .min(buffer as i128);
        self.tokens = filled - cost as i128;
        self.checked = now;
        now + (-self.tokens).max(0) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;
    const US: Nanos = 1_000;

    #[test]
    fn reads_htb_and_its_burst() {
        assert_eq!(ShaperSpec::parse("htb"), Ok(ShaperSpec { burst: None }));
        assert_eq!(
            ShaperSpec::parse(" htb  burst 3kb "),
            Ok(ShaperSpec { burst: Some(3072) })
        );
        for bad in [
            "",
            "tbf",
            "htb burst",
            "htb burst 0",
            "htb burst x",
            "htb 1600",
        ] {
            assert!(ShaperSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ShaperSpec::parse("htb burst 3000").unwrap().to_string(),
            "htb burst 3000"
        );
    }

    #[test]
    fn the_default_burst_is_tcs() {
        let spec = ShaperSpec { burst: None };
        assert_eq!(spec.burst_at(5_000_000), 1600);
        assert_eq!(spec.burst_at(10_000_000_000), 1601);
        assert_eq!(ShaperSpec { burst: Some(9000) }.burst_at(5_000_000), 9000);
    }

    /// At 5 Mbit/s a 1514-byte frame costs 2422.4 µs and tc's 1600 bytes
    /// are 2560 µs of credit: from idle, two frames leave back to back
    /// (the first leaves 137.6 µs of credit, not in debt), and the third
    /// waits until the debt of the second is paid.
    #[test]
    fn from_idle_a_full_bucket_lets_two_frames_through_at_once() {
        let (cost, buffer) = (2_422_400, 2_560_000);
        let mut bucket = TokenBucket::new(ShaperSpec { burst: None }, 0);
        let t0 = 100 * MS;
        assert_eq!(bucket.release(t0, cost, buffer), t0);
        let next = bucket.release(t0, cost, buffer);
        assert_eq!(next, t0 + 2 * cost - buffer);
        // Sending back to back from then on holds the rate exactly.
        let after = bucket.release(next, cost, buffer);
        assert_eq!(after, next + cost);
    }

    /// A frame 1.4 ms after another, the bucket having refilled for only
    /// part of its burst: it leaves when the debt is paid, earlier than a
    /// serializer (which would hold it until 2422.4 µs after the first).
    #[test]
    fn a_close_follower_waits_only_for_the_debt() {
        let (cost, buffer) = (2_422_400, 2_560_000);
        let mut bucket = TokenBucket::new(ShaperSpec { burst: None }, 0);
        let first = bucket.release(0, cost, buffer);
        let second = bucket.release(first, cost, buffer); // the bucket's burst
        let third_free = bucket.release(second, cost, buffer);
        // Idle for 3 ms after the third is free: 3 ms of credit, capped
        // at the buffer.
        let t = third_free + 3 * MS;
        let fourth = bucket.release(t, cost, buffer);
        assert_eq!(fourth, t, "the fourth has credit {}", buffer - cost);
        let fifth_arrives = t + 1400 * US;
        let fifth_free = bucket.release(fifth_arrives, cost, buffer);
        // Credit at the fifth: buffer - cost + 1.4 ms = 1537.6 µs ≥ 0, so it
        // left on arrival; the next owes 884.8 µs.
        assert_eq!(
            fifth_free,
            fifth_arrives + cost - (buffer - cost + 1400 * US)
        );
    }
}
