//! The four figures Mahimahi's throughput graph prints for a link log,
//! computed as its script computes them: times in whole milliseconds,
//! sizes as Mahimahi counts them (the IP packet plus its 4-byte TUN
//! header), the duration from the first event to the last, the 95th
//! percentile at index ⌊0.95·n⌋, and the signal delay (the least time in
//! which something sent at each millisecond could have arrived) filled
//! backwards from the last millisecond.

use crate::measures::capacity::{trace_opportunities, Capacity};
use crate::measures::histogram::{Histogram, Rank};
use emu_core::Nanos;
use serde::Serialize;
use std::collections::HashMap;

/// Bytes Mahimahi's packet-information header adds to each packet: its
/// logs count it in every size.
pub const TUN_HEADER: u32 = 4;

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

    /// The signal delay has one value per millisecond of the span: the
    /// least delay of what was sent in that millisecond, or, where nothing
    /// was, one more than the next millisecond's. An idle gap of `g`
    /// milliseconds is therefore a rising run `next+1 ..= next+g`. The
    /// runs are kept as runs, and the rank is found by bisecting on the
    /// value, so the cost follows the packets, not the span (a log whose
    /// events lie days apart would otherwise give billions of values).
    fn signal_delay_p95(&self) -> Option<u64> {
        let mut sent: Vec<(u64, u64)> = self.signal.iter().map(|(&t, &d)| (t, d)).collect();
        sent.sort_unstable_by_key(|&(ms, _)| std::cmp::Reverse(ms)); // from the last ms back
        let (high, low) = (sent.first()?.0, sent.last()?.0);
        let mut runs: Vec<(u64, u64)> = Vec::new(); // (first value, length)
        let mut next = sent[0].1;
        for pair in sent.windows(2) {
            let gap = pair[0].0 - pair[1].0 - 1;
            if gap > 0 {
                runs.push((next + 1, gap));
            }
            next = pair[1].1;
        }
        let mut singles: Vec<u64> = sent.iter().map(|&(_, d)| d).collect();
        singles.sort_unstable();
        let at_most = |v: u64| -> u64 {
            let single = singles.partition_point(|&d| d <= v) as u64;
            let in_runs: u64 = runs
                .iter()
                .map(|&(first, len)| (v + 1).saturating_sub(first).min(len))
                .sum();
            single + in_runs
        };
        let index = Rank::Truncated.index(0.95, high - low + 1);
        // The least value with more than `index` values at or below it.
        let (mut lo, mut hi) = (0u64, upper_bound(&singles, &runs));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if at_most(mid) > index {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    }
}

/// The largest value among the single values (sorted) and the runs.
fn upper_bound(singles: &[u64], runs: &[(u64, u64)]) -> u64 {
    let single = singles.last().copied().unwrap_or(0);
    let run = runs
        .iter()
        .map(|&(first, len)| first + len - 1)
        .max()
        .unwrap_or(0);
    single.max(run)
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

    /// The per-millisecond fill, value by value, as the graph script does.
    fn signal_p95_by_filling(signal: &HashMap<u64, u64>) -> u64 {
        let (low, high) = (*signal.keys().min().unwrap(), *signal.keys().max().unwrap());
        let mut values = Vec::new();
        let mut next = 0;
        for ts in (low..=high).rev() {
            let value = signal.get(&ts).copied().unwrap_or(next + 1);
            values.push(value);
            next = value;
        }
        values.sort_unstable();
        values[Rank::Truncated.index(0.95, values.len() as u64) as usize]
    }

    #[test]
    fn the_signal_delay_bisected_over_runs_matches_the_fill() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut random = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for case in 0..300 {
            let mut acc = MmAccumulator::default();
            let packets = 1 + random(40);
            let spread = 1 + random(if case % 3 == 0 { 5_000 } else { 60 });
            for _ in 0..packets {
                let sent = random(spread);
                let delay = random(200);
                acc.departure((sent + delay) * MS, 100, Some(sent * MS));
            }
            assert_eq!(
                acc.signal_delay_p95(),
                Some(signal_p95_by_filling(&acc.signal)),
                "case {case}: {:?}",
                acc.signal
            );
        }
    }

    #[test]
    fn a_gap_of_days_costs_no_more_than_its_packets() {
        let mut acc = MmAccumulator::default();
        let day = 86_400_000u64;
        acc.departure(5 * MS, 100, Some(0));
        acc.departure((30 * day + 2) * MS, 100, Some(30 * day * MS));
        // 30 days of milliseconds: the last one's 2, the gap's rising run
        // 3, 4, 5, ... and the first one's 5. Sorted, 2 3 4 5 5 6 7 ...:
        // past the repeated 5 the value at index i is i + 1.
        let n = 30 * day + 1;
        let index = Rank::Truncated.index(0.95, n);
        assert_eq!(acc.signal_delay_p95(), Some(index + 1));
    }
}
