//! The four figures Mahimahi's throughput graph prints for a link log,
//! computed as its script computes them: times in whole milliseconds,
//! sizes as Mahimahi counts them (the IP packet plus its 4-byte TUN
//! header), the duration from the first event to the last, the 95th
//! percentile at index ⌊0.95·n⌋, and the signal delay (the least time in
//! which something sent at each millisecond could have arrived) filled
//! backwards from the last millisecond.

use crate::capacity::{trace_opportunities, Capacity};
use crate::histogram::{Histogram, Rank};
use crate::mahimahi_writer::TUN_HEADER;
use emu_core::Nanos;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MahimahiFigures {
    pub duration_s: f64,
    pub average_capacity_mbps: f64,
    pub average_throughput_mbps: f64,
    pub utilization: f64,
    pub queueing_delay_p95_ms: u64,
    pub signal_delay_p95_ms: u64,
}

fn ms(time: Nanos) -> u64 {
    time / 1_000_000
}

/// What the figures need from one shell's events.
#[derive(Debug, Clone, Default)]
pub struct MmAccumulator {
    first_ms: Option<u64>,
    last_ms: u64,
    departure_bits: u64,
    logged_capacity_bits: u64,
    /// Per-packet delays in ms (Mahimahi's `-` lines).
    delays: Option<Histogram>,
    /// Least delay of a packet that arrived in each ms.
    signal: HashMap<u64, u64>,
}

impl MmAccumulator {
    fn note(&mut self, time: Nanos) {
        let t = ms(time);
        self.first_ms.get_or_insert(t);
        self.first_ms = self.first_ms.map(|f| f.min(t));
        self.last_ms = self.last_ms.max(t);
    }

    pub fn arrival(&mut self, time: Nanos) {
        self.note(time);
    }

    /// A departure of `bytes` IP bytes; `arrived` when it reached the shell.
    pub fn departure(&mut self, time: Nanos, bytes: u32, arrived: Option<Nanos>) {
        self.note(time);
        self.departure_bits += (bytes + TUN_HEADER) as u64 * 8;
        let sent = ms(arrived.unwrap_or(time));
        let delay = ms(time).saturating_sub(sent);
        self.delays
            .get_or_insert_with(|| Histogram::new(1))
            .add(delay);
        let least = self.signal.entry(sent).or_insert(delay);
        *least = (*least).min(delay);
    }

    /// A delivery opportunity for `bytes` IP bytes, as logged.
    pub fn opportunity(&mut self, time: Nanos, bytes: u32) {
        self.note(time);
        self.logged_capacity_bits += (bytes + TUN_HEADER) as u64 * 8;
    }

    /// The figures, None without departures or without a span of time.
    pub fn figures(&self, capacity: &Capacity) -> Option<MahimahiFigures> {
        let first = self.first_ms?;
        let delays = self.delays.as_ref()?;
        let duration_s = (self.last_ms - first) as f64 / 1000.0;
        if duration_s <= 0.0 {
            return None;
        }
        let capacity_bits = match capacity {
            Capacity::Unknown => return None,
            Capacity::Logged => self.logged_capacity_bits,
            Capacity::Rate(bps) => (*bps as f64 * duration_s) as u64,
            Capacity::Trace {
                trace,
                repeat,
                start,
            } => {
                let (from, to) = (first * 1_000_000, (self.last_ms + 1) * 1_000_000);
                trace_opportunities(trace, *repeat, *start, from, to)
                    .map(|(_, bytes)| (bytes + TUN_HEADER) as u64 * 8)
                    .sum()
            }
        };
        let average_capacity_mbps = capacity_bits as f64 / duration_s / 1e6;
        let average_throughput_mbps = self.departure_bits as f64 / duration_s / 1e6;
        Some(MahimahiFigures {
            duration_s,
            average_capacity_mbps,
            average_throughput_mbps,
            utilization: average_throughput_mbps / average_capacity_mbps,
            queueing_delay_p95_ms: delays.percentile(Rank::Truncated, 0.95)?,
            signal_delay_p95_ms: self.signal_delay_p95()?,
        })
    }

    fn signal_delay_p95(&self) -> Option<u64> {
        let low = *self.signal.keys().min()?;
        let high = *self.signal.keys().max()?;
        let mut values = Histogram::new(1);
        let mut next = 0;
        for ts in (low..=high).rev() {
            let value = match self.signal.get(&ts) {
                Some(&d) => d,
                None => next + 1,
            };
            values.add(value);
            next = value;
        }
        values.percentile(Rank::Truncated, 0.95)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn figures_as_the_graph_script_computes_them() {
        let mut acc = MmAccumulator::default();
        // Opportunities of 1500 IP bytes (1504 logged) every ms from 0 to 10.
        for t in 0..=10 {
            acc.opportunity(t * MS, 1500);
        }
        // Two packets: sent at 1 ms and delivered at 4 ms (delay 3), sent
        // at 6 ms and delivered at 7 ms (delay 1).
        acc.arrival(MS);
        acc.departure(4 * MS, 1500, Some(MS));
        acc.arrival(6 * MS);
        acc.departure(7 * MS + 900_000, 1500, Some(6 * MS + 100_000));
        let f = acc.figures(&Capacity::Logged).unwrap();
        assert_eq!(f.duration_s, 0.010);
        assert!((f.average_capacity_mbps - 11.0 * 1504.0 * 8.0 / 0.010 / 1e6).abs() < 1e-9);
        assert!((f.average_throughput_mbps - 2.0 * 1504.0 * 8.0 / 0.010 / 1e6).abs() < 1e-9);
        // Delays [1, 3]: index ⌊0.95·2⌋ = 1 → 3 ms.
        assert_eq!(f.queueing_delay_p95_ms, 3);
        // Signal delay at ms 6 is 1, at 5: 2, 4: 3, 3: 4, 2: 5, and at
        // 1 it is the measured 3. Sorted [1,2,3,3,4,5]: index ⌊5.7⌋ = 5 → 5.
        assert_eq!(f.signal_delay_p95_ms, 5);
    }

    #[test]
    fn a_rate_gives_its_capacity_over_the_span() {
        let mut acc = MmAccumulator::default();
        acc.arrival(0);
        acc.departure(1000 * MS, 1496, Some(0));
        let f = acc.figures(&Capacity::Rate(12_000_000)).unwrap();
        assert!((f.average_capacity_mbps - 12.0).abs() < 1e-9);
        assert!((f.average_throughput_mbps - 1500.0 * 8.0 / 1e6).abs() < 1e-9);
        assert!(acc.figures(&Capacity::Unknown).is_none());
    }
}
