//! Random variation of the propagation delay (netem's `delay TIME JITTER
//! [CORRELATION] [distribution NAME]`).
//!
//! Correlation is where emu departs from netem on purpose. netem mixes each
//! new uniform draw with the previous one (`get_crandom()`), which gives the
//! uniform sequence the asked lag-1 correlation but narrows its spread, so a
//! correlated jitter is smaller than the one asked for and its distribution
//! is no longer the table's. emu instead runs a Gaussian AR(1) process,
//! z' = ρ·z + √(1-ρ²)·ε, whose every value is exactly standard normal, and
//! maps it through Φ to a uniform quantile of the chosen distribution: the
//! marginal distribution is exactly the one asked for and the lag-1
//! correlation is ρ (exactly for `normal`, within 0.01 for the others).

use crate::distribution::{normal_cdf, standard_normal, Distribution};
use emu_core::Nanos;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct JitterSpec {
    /// netem's "jitter": the deviation (normal, tables) or half-width (uniform).
    pub sigma: Nanos,
    /// Lag-1 correlation of successive packets' jitter, 0 to 1.
    pub correlation: f64,
    pub distribution: Distribution,
}

/// A seeded jitter source.
#[derive(Debug, Clone)]
pub struct Jitter {
    spec: JitterSpec,
    rng: ChaCha8Rng,
    /// The AR(1) process's last value (standard normal).
    z: f64,
    innovation: f64,
}

impl Jitter {
    pub fn new(spec: JitterSpec, seed: u64, stream: u64) -> Jitter {
        // Mixed with a constant so jitter never repeats the loss model's draws
        // from the same seed and stream.
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6a69_7474_6572);
        rng.set_stream(stream);
        let z = standard_normal(&mut rng);
        let rho = spec.correlation.clamp(0.0, 1.0);
        Jitter {
            innovation: (1.0 - rho * rho).sqrt(),
            spec,
            rng,
            z,
        }
    }

    pub fn spec(&self) -> &JitterSpec {
        &self.spec
    }

    /// The next packet's jitter in ns (negative shortens the delay).
    pub fn sample(&mut self) -> i64 {
        let rho = self.spec.correlation;
        self.z = rho * self.z + self.innovation * standard_normal(&mut self.rng);
        let u = match self.spec.distribution {
            Distribution::Normal => 0.5, // unused
            _ => normal_cdf(self.z).clamp(0.0, 1.0 - f64::EPSILON),
        };
        let value = self.spec.distribution.standard_value(u, self.z);
        (value * self.spec.sigma as f64).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::normal_quantile;

    const MS: Nanos = 1_000_000;

    fn samples(distribution: Distribution, correlation: f64, n: usize) -> Vec<f64> {
        let mut jitter = Jitter::new(
            JitterSpec {
                sigma: 5 * MS,
                correlation,
                distribution,
            },
            42,
            0,
        );
        (0..n).map(|_| jitter.sample() as f64).collect()
    }

    fn percentile(sorted: &[f64], p: f64) -> f64 {
        sorted[((sorted.len() - 1) as f64 * p).round() as usize]
    }

    fn lag1(values: &[f64]) -> f64 {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let var: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
        let cov: f64 = values
            .windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum();
        cov / var
    }

    #[test]
    fn normal_jitter_has_normal_percentiles_and_the_asked_correlation() {
        for rho in [0.0, 0.25, 0.75] {
            let values = samples(Distribution::Normal, rho, 200_000);
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            for p in [0.05, 0.25, 0.5, 0.75, 0.95] {
                let expected = normal_quantile(p) * 5e6;
                let got = percentile(&sorted, p);
                // The marginal does not narrow with correlation (netem's does).
                assert!(
                    (got - expected).abs() < 0.03 * 5e6,
                    "rho {rho} p{p}: {got} vs {expected}"
                );
            }
            let r = lag1(&values);
            assert!((r - rho).abs() < 0.01, "lag-1 {r} for rho {rho}");
        }
    }

    #[test]
    fn uniform_jitter_spans_plus_minus_sigma() {
        let values = samples(Distribution::Uniform, 0.25, 200_000);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert!(sorted[0] >= -5e6 && *sorted.last().unwrap() <= 5e6);
        for p in [0.1, 0.5, 0.9] {
            let expected = (2.0 * p - 1.0) * 5e6;
            assert!((percentile(&sorted, p) - expected).abs() < 0.02 * 5e6);
        }
        // Pearson correlation of Φ(z) for Gaussian ρ is (6/π)·asin(ρ/2).
        let expected = 6.0 / std::f64::consts::PI * (0.125f64).asin();
        assert!((lag1(&values) - expected).abs() < 0.01);
    }

    #[test]
    fn table_jitter_follows_the_table() {
        let table: Vec<i16> = vec![-8192, 0, 8192, 16384];
        let values = samples(
            Distribution::Table {
                name: "t".into(),
                table: table.into(),
            },
            0.0,
            40_000,
        );
        for (level, want) in [(-5e6, 0.25), (0.0, 0.25), (5e6, 0.25), (10e6, 0.25)] {
            let share = values.iter().filter(|&&v| v == level).count() as f64 / 40_000.0;
            assert!((share - want).abs() < 0.01, "{level}: {share}");
        }
    }
}
