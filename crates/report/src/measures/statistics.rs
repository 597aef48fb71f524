//! The small figures taken over a handful of values: Jain's fairness
//! index, mean and sample deviation, and percentiles by nearest rank.
//! Each takes its values in memory: a run's flows, a cell's repetitions,
//! a flow's TCP samples (series of packets go to
//! [`crate::measures::histogram`]).

use serde::{Deserialize, Serialize};

/// Jain's fairness index, (Σx)² / (n Σx²): 1 when all are equal, 1/n when
/// one has everything. None without values or without a positive one.
pub fn jain(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut n, mut sum, mut squares) = (0usize, 0.0, 0.0);
    for x in values {
        n += 1;
        sum += x;
        squares += x * x;
    }
    (n > 0 && squares > 0.0).then(|| sum * sum / (n as f64 * squares))
}

/// The smallest value with at least `q` of the series at or below it
/// (`sorted` in ascending order, not empty).
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// Mean and sample standard deviation (n − 1); the deviation is 0 for one
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub mean: f64,
    pub stddev: f64,
    pub n: usize,
}

impl Spread {
    /// None for no values.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Spread { mean, stddev, n })
    }
}

/// Mean, percentiles (by nearest rank) and extremes of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub samples: usize,
}

impl Distribution {
    /// None for an empty series.
    pub fn of(values: &[f64]) -> Option<Distribution> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Distribution {
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: nearest_rank(&sorted, 0.50),
            p95: nearest_rank(&sorted, 0.95),
            p99: nearest_rank(&sorted, 0.99),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            samples: sorted.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_a_hog() {
        assert_eq!(jain([5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert!((jain([10.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        // (1+2+3)^2 / (3 * 14) = 36/42
        assert!((jain([1.0, 2.0, 3.0]).unwrap() - 36.0 / 42.0).abs() < 1e-12);
        assert_eq!(jain([]), None);
        assert_eq!(jain([0.0, 0.0]), None);
    }

    #[test]
    fn spread_uses_the_sample_deviation() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(Spread::of(&[3.0]).unwrap().stddev, 0.0);
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Distribution::of(&values).unwrap();
        assert_eq!(
            (d.p50, d.p95, d.p99, d.min, d.max),
            (50.0, 95.0, 99.0, 1.0, 100.0)
        );
        assert_eq!(d.mean, 50.5);
        assert_eq!(Distribution::of(&[7.0]).unwrap().p99, 7.0);
    }
}
