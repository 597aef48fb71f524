//! The shape of jitter: netem's four named distributions and tables in
//! netem's file format.
//!
//! A netem distribution table is the inverse cumulative distribution of a
//! zero-mean, unit-deviation variable, sampled at evenly spaced quantiles
//! and scaled by 8192 (`NETEM_DIST_SCALE` in the kernel's sch_netem.c). A
//! file holds those integers separated by white space; `#` starts a comment.
//! netem turns a uniform draw `u` into `mean + sigma * table[u * size] /
//! 8192` (`tabledist()`); emu does the same, and draws the normal
//! distribution exactly instead of from a table.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// netem's fixed-point scale of table entries.
pub const TABLE_SCALE: f64 = 8192.0;
/// Entries of the built-in pareto and paretonormal tables (as netem's).
const BUILT_IN_SIZE: usize = 4096;
/// The largest table netem accepts (`NETEM_DIST_MAX`).
const MAX_TABLE: usize = 16384;

/// How jitter is distributed around the mean delay.
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Uniform on [mean - sigma, mean + sigma] (netem's default without a table).
    Uniform,
    /// Normal with deviation sigma.
    Normal,
    /// An inverse CDF table, in netem's units (value × 8192 per sigma).
    Table { name: String, table: Arc<[i16]> },
}

impl Distribution {
    /// A named distribution (`uniform`, `normal`, `pareto`, `paretonormal`),
    /// or else a file in netem's table format.
    pub fn parse(text: &str) -> Result<Distribution, DistributionError> {
        Ok(match text {
            "uniform" => Distribution::Uniform,
            "normal" => Distribution::Normal,
            "pareto" => Distribution::Table {
                name: "pareto".into(),
                table: pareto_table().into(),
            },
            "paretonormal" => Distribution::Table {
                name: "paretonormal".into(),
                table: paretonormal_table().into(),
            },
            path => Distribution::load(Path::new(path))?,
        })
    }

    pub fn load(path: &Path) -> Result<Distribution, DistributionError> {
        let text = std::fs::read_to_string(path).map_err(|e| DistributionError {
            source: path.display().to_string(),
            problem: format!(
                "cannot read it ({e}); give uniform, normal, pareto, paretonormal or a netem .dist file"
            ),
        })?;
        let table = parse_table(&text).map_err(|problem| DistributionError {
            source: path.display().to_string(),
            problem,
        })?;
        Ok(Distribution::Table {
            name: path.display().to_string(),
            table: table.into(),
        })
    }

    pub fn name(&self) -> &str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Normal => "normal",
            Distribution::Table { name, .. } => name,
        }
    }

    /// The standardized value (in units of sigma) at quantile `u` in [0, 1),
    /// given also the standard normal `z` with Φ(z) = u, which the normal
    /// distribution uses directly.
    #[inline]
    pub fn standard_value(&self, u: f64, z: f64) -> f64 {
        match self {
            Distribution::Uniform => 2.0 * u - 1.0,
            Distribution::Normal => z,
            Distribution::Table { table, .. } => {
                let index = ((u * table.len() as f64) as usize).min(table.len() - 1);
                table[index] as f64 / TABLE_SCALE
            }
        }
    }
}

/// A distribution name or file that could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct DistributionError {
    pub source: String,
    pub problem: String,
}

impl fmt::Display for DistributionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "distribution {}: {}", self.source, self.problem)
    }
}

impl std::error::Error for DistributionError {}

/// Reads netem's table format: signed 16-bit integers separated by white
/// space, `#` to the end of a line is a comment.
pub fn parse_table(text: &str) -> Result<Vec<i16>, String> {
    let mut table = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("");
        for word in content.split_whitespace() {
            let value: i16 = word.parse().map_err(|_| {
                format!(
                    "line {}: '{word}' is not an integer from -32768 to 32767 (a netem table holds the inverse CDF scaled by 8192)",
                    number + 1
                )
            })?;
            table.push(value);
        }
    }
    if table.is_empty() {
        return Err("holds no values (a netem table holds the inverse CDF scaled by 8192)".into());
    }
    if table.len() > MAX_TABLE {
        return Err(format!(
            "holds {} values; netem's limit is {MAX_TABLE}",
            table.len()
        ));
    }
    Ok(table)
}

/// Box–Muller: one standard normal from two uniforms.
pub(crate) fn standard_normal(rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    use rand::Rng;
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
    let u2: f64 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Φ, the standard normal CDF, via erfc (Numerical Recipes' Chebyshev fit,
/// relative error below 1.2e-7 everywhere).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Φ⁻¹ by bisection on Φ: only used to build tables, so exactness matters
/// more than speed.
pub fn normal_quantile(u: f64) -> f64 {
    let (mut lo, mut hi) = (-10.0f64, 10.0f64);
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < u {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Pareto with shape 3 (netem's choice), standardized to mean 0 and
/// deviation 1: X = (1-u)^(-1/3) has mean 3/2 and variance 3/4.
fn pareto_standard(u: f64) -> f64 {
    ((1.0 - u).powf(-1.0 / 3.0) - 1.5) / 0.75f64.sqrt()
}

fn to_table(values: impl Iterator<Item = f64>) -> Vec<i16> {
    values
        .map(|v| (v * TABLE_SCALE).round().clamp(-32768.0, 32767.0) as i16)
        .collect()
}

fn quantiles() -> impl Iterator<Item = f64> {
    (0..BUILT_IN_SIZE).map(|i| (i as f64 + 0.5) / BUILT_IN_SIZE as f64)
}

fn pareto_table() -> Vec<i16> {
    to_table(quantiles().map(pareto_standard))
}

/// netem's paretonormal: a quarter normal, three quarters pareto (both
/// standardized, independent), standardized again. Its quantiles come from
/// a fixed grid of 256 × 256 equally likely pairs, sorted.
fn paretonormal_table() -> Vec<i16> {
    const GRID: usize = 256;
    let grid: Vec<f64> = (0..GRID).map(|i| (i as f64 + 0.5) / GRID as f64).collect();
    let scale = (0.25f64 * 0.25 + 0.75 * 0.75).sqrt();
    let mut mix: Vec<f64> = grid
        .iter()
        .flat_map(|&a| {
            let normal = normal_quantile(a);
            grid.iter()
                .map(move |&b| (0.25 * normal + 0.75 * pareto_standard(b)) / scale)
        })
        .collect();
    mix.sort_by(f64::total_cmp);
    let step = mix.len() / BUILT_IN_SIZE;
    to_table((0..BUILT_IN_SIZE).map(|i| mix[i * step + step / 2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_and_quantile_agree_with_tables() {
        // Φ(1) = 0.841345, Φ(1.959964) = 0.975 (standard tables).
        assert!((normal_cdf(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!(normal_quantile(0.5).abs() < 1e-6);
    }

    #[test]
    fn built_in_tables_are_inverse_cdfs() {
        // Pareto with shape 3, standardized: Q(u) = ((1-u)^(-1/3) - 3/2) / √(3/4).
        let pareto = pareto_table();
        // Entry i holds the quantile at the middle of its slice, (i + ½) / n.
        for i in [409, 2048, 3686, 4055] {
            let u = (i as f64 + 0.5) / BUILT_IN_SIZE as f64;
            let expected = ((1.0 - u).powf(-1.0 / 3.0) - 1.5) / 0.75f64.sqrt();
            let got = pareto[i] as f64 / TABLE_SCALE;
            assert!((got - expected).abs() < 0.01, "u {u}: {got} vs {expected}");
        }
        let mix = paretonormal_table();
        for table in [&pareto, &mix] {
            assert!(
                table.windows(2).all(|w| w[0] <= w[1]),
                "an inverse CDF rises"
            );
            // netem's 16-bit entries cut the tail at 4 sigma, which pulls
            // the mean a little below 0 and the variance below 1.
            let values: Vec<f64> = table.iter().map(|&v| v as f64 / TABLE_SCALE).collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
            assert!(mean.abs() < 0.1, "mean {mean}");
            assert!((0.5..1.0).contains(&var), "variance {var}");
        }
        // The mixture is lighter-tailed and more symmetric than pareto.
        assert!(mix[BUILT_IN_SIZE / 10] < pareto[BUILT_IN_SIZE / 10]);
    }

    #[test]
    fn table_files_in_netems_format() {
        assert_eq!(
            parse_table("# a comment\n-8192 0 # mid\n  8192\n").unwrap(),
            vec![-8192, 0, 8192]
        );
        assert!(parse_table("1 2 x3").unwrap_err().contains("line 1: 'x3'"));
        assert!(parse_table("40000").unwrap_err().contains("'40000'"));
        assert!(parse_table("# nothing\n")
            .unwrap_err()
            .contains("no values"));
        let missing = Distribution::parse("/nonexistent/x.dist").unwrap_err();
        assert!(missing
            .to_string()
            .contains("/nonexistent/x.dist: cannot read it"));
    }
}
