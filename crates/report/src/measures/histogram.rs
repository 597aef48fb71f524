//! Exact distributions in memory bounded by their range, not their count.
//!
//! A ten-minute gigabit run has hundreds of millions of packets; keeping
//! every delay to sort it would take gigabytes. Delays are counted per
//! microsecond instead (a delay of up to a second has at most a million
//! distinct values), so every percentile below is exact to the microsecond
//! whatever the number of packets, and each percentile definition in use
//! (nearest rank, numpy's `nearest`, Mahimahi's truncated index) can be
//! reproduced rank for rank.

use std::collections::HashMap;

/// Counts of values, quantized to `unit` nanoseconds.
#[derive(Debug, Clone)]
pub struct Histogram {
    unit: u64,
    counts: HashMap<u64, u64>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

/// Which rank a percentile names: the tools we reproduce disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    /// The textbook nearest rank: the ⌈q·n⌉-th smallest value.
    NearestRank,
    /// numpy's `percentile(..., interpolation='nearest')`, which Pantheon
    /// uses: index q·(n−1) rounded half to even, from 0.
    NumpyNearest,
    /// Mahimahi's graph scripts: index ⌊q·n⌋ from 0 (Perl truncates a
    /// fractional array index).
    Truncated,
}

impl Rank {
    /// The 0-based index of percentile `q` (0..=1) among `n` sorted values.
    pub fn index(self, q: f64, n: u64) -> u64 {
        debug_assert!(n > 0);
        let index = match self {
            Rank::NearestRank => ((q * n as f64).ceil() as u64).max(1) - 1,
            Rank::NumpyNearest => round_half_even(q * (n - 1) as f64),
            Rank::Truncated => (q * n as f64) as u64,
        };
        index.min(n - 1)
    }
}

fn round_half_even(x: f64) -> u64 {
    let floor = x.floor();
    let diff = x - floor;
    let up = diff > 0.5 || (diff == 0.5 && (floor as u64) % 2 == 1);
    floor as u64 + up as u64
}

impl Histogram {
    /// Values quantized down to multiples of `unit` ns.
    pub fn new(unit: u64) -> Histogram {
        Histogram {
            unit: unit.max(1),
            counts: HashMap::new(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Microsecond resolution, for delays in nanoseconds.
    pub fn micros() -> Histogram {
        Histogram::new(1_000)
    }

    pub fn add(&mut self, value: u64) {
        self.add_many(value, 1);
    }

    pub fn add_many(&mut self, value: u64, times: u64) {
        if times == 0 {
            return;
        }
        let key = value / self.unit;
        *self.counts.entry(key).or_insert(0) += times;
        self.count += times;
        self.sum += value as u128 * times as u128;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Mean of the values as added (not quantized).
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The distinct quantized values in order, with their counts.
    fn sorted(&self) -> Vec<(u64, u64)> {
        let mut values: Vec<(u64, u64)> = self.counts.iter().map(|(&k, &c)| (k, c)).collect();
        values.sort_unstable();
        values
    }

    /// Several percentiles at once (one sort), each as a quantized value.
    pub fn percentiles(&self, rank: Rank, qs: &[f64]) -> Vec<Option<u64>> {
        if self.count == 0 {
            return vec![None; qs.len()];
        }
        let values = self.sorted();
        qs.iter()
            .map(|&q| {
                let wanted = rank.index(q, self.count);
                let mut seen = 0;
                for &(key, count) in &values {
                    seen += count;
                    if seen > wanted {
                        return Some(key * self.unit);
                    }
                }
                values.last().map(|&(key, _)| key * self.unit)
            })
            .collect()
    }

    pub fn percentile(&self, rank: Rank, q: f64) -> Option<u64> {
        self.percentiles(rank, &[q])[0]
    }

    /// The cumulative distribution as at most `points` (value, fraction ≤
    /// value) pairs, always including the largest value.
    pub fn cdf(&self, points: usize) -> Vec<(u64, f64)> {
        let values = self.sorted();
        let step = (values.len() / points.max(1)).max(1);
        let mut out = Vec::new();
        let mut seen = 0;
        for (i, &(key, count)) in values.iter().enumerate() {
            seen += count;
            if i % step == 0 || i + 1 == values.len() {
                out.push((key * self.unit, seen as f64 / self.count as f64));
            }
        }
        out
    }

    pub fn clear(&mut self) {
        *self = Histogram::new(self.unit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_each_definition() {
        // n = 20: nearest rank ⌈19⌉ = 19th → index 18; numpy 0.95·19 =
        // 18.05 → 18; truncated ⌊19⌋ = 19.
        assert_eq!(Rank::NearestRank.index(0.95, 20), 18);
        assert_eq!(Rank::NumpyNearest.index(0.95, 20), 18);
        assert_eq!(Rank::Truncated.index(0.95, 20), 19);
        // n = 11: nearest ⌈10.45⌉ = 11 → 10; numpy 9.5 → 10 (half to
        // even); truncated ⌊10.45⌋ = 10.
        assert_eq!(Rank::NearestRank.index(0.95, 11), 10);
        assert_eq!(Rank::NumpyNearest.index(0.95, 11), 10);
        // numpy rounds 0.5·(4−1) = 1.5 to 2 and 0.5·(6−1) = 2.5 to 2.
        assert_eq!(Rank::NumpyNearest.index(0.5, 4), 2);
        assert_eq!(Rank::NumpyNearest.index(0.5, 6), 2);
        assert_eq!(Rank::NearestRank.index(0.0, 5), 0);
        assert_eq!(Rank::Truncated.index(1.0, 5), 4);
    }

    #[test]
    fn percentiles_of_a_known_sequence() {
        // Delays 1..=100 ms, each once, shuffled by a stride.
        let mut h = Histogram::micros();
        for i in 0..100u64 {
            h.add(((i * 37) % 100 + 1) * 1_000_000);
        }
        let ms = |v: Option<u64>| v.unwrap() / 1_000_000;
        assert_eq!(ms(h.percentile(Rank::NearestRank, 0.5)), 50);
        assert_eq!(ms(h.percentile(Rank::NearestRank, 0.95)), 95);
        assert_eq!(ms(h.percentile(Rank::NearestRank, 0.99)), 99);
        // numpy: 0.95·99 = 94.05 → index 94 → 95 ms; 0.5·99 = 49.5 → 50 (even) → 51 ms.
        assert_eq!(ms(h.percentile(Rank::NumpyNearest, 0.5)), 51);
        assert_eq!(ms(h.percentile(Rank::Truncated, 0.95)), 96);
        assert_eq!(h.mean(), Some(50.5e6));
        assert_eq!((h.min(), h.max()), (Some(1_000_000), Some(100_000_000)));
        let cdf = h.cdf(1000);
        assert_eq!(cdf.len(), 100);
        assert_eq!(cdf[9], (10_000_000, 0.1));
    }

    #[test]
    fn values_are_kept_to_the_microsecond() {
        let mut h = Histogram::micros();
        h.add(1_999);
        h.add(2_000);
        h.add_many(2_500, 2);
        assert_eq!(h.count(), 4);
        assert_eq!(h.percentile(Rank::NearestRank, 0.25), Some(1_000));
        assert_eq!(h.percentile(Rank::NearestRank, 1.0), Some(2_000));
        assert_eq!(h.mean(), Some((1_999.0 + 2_000.0 + 5_000.0) / 4.0));
    }
}
