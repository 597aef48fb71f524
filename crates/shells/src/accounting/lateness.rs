//! How late each packet was written compared with the time the model said
//! it was due: the emulator's own timing error, measured where it happens.
//! The pump never writes early (it writes only what is due), so the error
//! is one-sided; this records its distribution at 1 µs resolution.

use emu_core::Nanos;

const BUCKETS: usize = 10_000; // 0 to 10 ms in 1 µs steps, then overflow

#[derive(Clone)]
pub struct Lateness {
    buckets: Vec<u64>,
    overflow: u64,
    count: u64,
    sum: u128,
    min: Nanos,
    max: Nanos,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: vec![0; BUCKETS],
            overflow: 0,
            count: 0,
            sum: 0,
            min: Nanos::MAX,
            max: 0,
        }
    }
}

impl Lateness {
    #[inline]
    pub fn record(&mut self, late: Nanos) {
        let bucket = (late / 1_000) as usize;
        match self.buckets.get_mut(bucket) {
            Some(b) => *b += 1,
            None => self.overflow += 1,
        }
        self.count += 1;
        self.sum += late as u128;
        self.min = self.min.min(late);
        self.max = self.max.max(late);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Upper edge (in ns) of the 1 µs bucket holding quantile `q`.
    pub fn quantile_ns(&self, q: f64) -> Nanos {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return ((i as Nanos + 1) * 1_000).min(self.max);
            }
        }
        self.max
    }

    pub fn min_ns(&self) -> Nanos {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn max_ns(&self) -> Nanos {
        self.max
    }

    /// Forgets everything recorded, keeping the buckets' memory.
    pub fn clear(&mut self) {
        self.buckets.iter_mut().for_each(|b| *b = 0);
        self.overflow = 0;
        self.count = 0;
        self.sum = 0;
        self.min = Nanos::MAX;
        self.max = 0;
    }

    pub fn merge(&mut self, other: &Lateness) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.overflow += other.overflow;
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "packets": self.count,
            "mean_ns": self.mean_ns().round(),
            "p50_ns": self.quantile_ns(0.5),
            "p99_ns": self.quantile_ns(0.99),
            "min_ns": self.min_ns(),
            "max_ns": self.max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_known_spread() {
        let mut l = Lateness::default();
        for us in 0..100u64 {
            l.record(us * 1_000 + 500);
        }
        assert_eq!(l.count(), 100);
        assert_eq!(l.min_ns(), 500);
        assert_eq!(l.quantile_ns(0.5), 50_000);
        assert_eq!(l.quantile_ns(0.99), 99_000);
        assert_eq!(l.quantile_ns(1.0), 99_500);
        assert!((l.mean_ns() - 50_000.0).abs() < 1e-6);
        l.record(50_000_000);
        assert_eq!(l.quantile_ns(1.0), 50_000_000);
    }
}
