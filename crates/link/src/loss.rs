//! Packet loss patterns, each seeded so a run with the same seed loses
//! exactly the same packets:
//! - independent (Bernoulli) loss with a probability;
//! - a link that switches on and off with exponentially distributed on and
//!   off times (Mahimahi's mm-onoff), dropping everything while off;
//! - the same with fixed on and off times (mm-intermittent);
//! - Gilbert-Elliott's two-state Markov chain (netem's `loss gemodel`);
//! - the four-state Markov chain of netem's `loss state` (good reception,
//!   reception in a burst, loss in a burst, isolated loss).
//!
//! ChaCha8 is used because its output for a given seed and stream is fixed
//! by its specification, across platforms and crate versions.

use emu_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What loses packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    /// Each packet independently with this probability.
    Bernoulli(f64),
    /// On for an exponential time of mean `mean_on`, then off for one of
    /// mean `mean_off`, and so on; packets are dropped while off.
    OnOff { mean_on: Nanos, mean_off: Nanos },
    /// On for `on`, off for `off`, repeating.
    Periodic { on: Nanos, off: Nanos },
    /// Gilbert-Elliott, drawn per packet as the kernel's `loss_gilb_ell()`
    /// does: from the good state the chain moves to bad with probability
    /// `p`, from bad to good with `r`; the packet is lost with probability
    /// `bad_loss` (netem's 1-h) if the chain was bad, `good_loss` (1-k) if
    /// it was good, before the move.
    GilbertElliott {
        p: f64,
        r: f64,
        bad_loss: f64,
        good_loss: f64,
    },
    /// netem's four states, moved per packet as `loss_4state()` does; the
    /// packet is lost if the chain lands in state 3 (lost in a burst) or 4
    /// (isolated loss). From 1: to 3 with `p13`, to 4 with `p14`. From 2: to
    /// 3 with `p23`. From 3: to 1 with `p31`, to 2 with `p32`. From 4: to 1.
    FourState {
        p13: f64,
        p31: f64,
        p32: f64,
        p23: f64,
        p14: f64,
    },
}

impl Pattern {
    /// True if this pattern never loses anything.
    pub fn is_none(&self) -> bool {
        match *self {
            Pattern::Bernoulli(p) => p <= 0.0,
            Pattern::OnOff { mean_off, .. } => mean_off == 0,
            Pattern::Periodic { off, .. } => off == 0,
            Pattern::GilbertElliott {
                p,
                bad_loss,
                good_loss,
                ..
            } => good_loss <= 0.0 && (p <= 0.0 || bad_loss <= 0.0),
            Pattern::FourState { p13, p14, .. } => p13 <= 0.0 && p14 <= 0.0,
        }
    }

    /// Whether the pattern has states worth logging as they change.
    pub fn has_states(&self) -> bool {
        matches!(
            self,
            Pattern::GilbertElliott { .. } | Pattern::FourState { .. }
        )
    }
}

#[derive(Debug, Clone)]
pub struct Loss {
    pattern: Pattern,
    rng: ChaCha8Rng,
    /// For switching patterns: whether the link is on, and when it next
    /// switches. As in Mahimahi, a switching link starts off and switches
    /// on at once, at the time the shell starts.
    on: bool,
    next_switch: Option<Nanos>,
    /// The Markov chains' state: 1 good, 2 bad (Gilbert-Elliott); 1 to 4
    /// as netem numbers them (four states). Both start in state 1.
    state: u8,
}

impl Loss {
    /// `stream` separates the two directions of one shell (and shells of one
    /// run) so they draw independent sequences from one user-given seed.
    pub fn new(probability: f64, seed: u64, stream: u64) -> Loss {
        Loss::with_pattern(Pattern::Bernoulli(probability), seed, stream)
    }

    pub fn with_pattern(pattern: Pattern, seed: u64, stream: u64) -> Loss {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Loss {
            pattern,
            rng,
            on: false,
            next_switch: None,
            state: 1,
        }
    }

    pub fn pattern(&self) -> Pattern {
        self.pattern
    }

    /// Makes independent loss lose with probability `p` from now on,
    /// keeping the random stream; false (and nothing changed) for a loss
    /// pattern of another kind.
    pub fn set_probability(&mut self, p: f64) -> bool {
        match &mut self.pattern {
            Pattern::Bernoulli(probability) => {
                *probability = p;
                true
            }
            _ => false,
        }
    }

    /// The Markov chain's current state (see the field), 1 for other patterns.
    pub fn state(&self) -> u8 {
        self.state
    }

    /// Sets the time switching patterns start from.
    pub fn start(&mut self, at: Nanos) {
        self.next_switch = Some(at);
    }

    fn duration(&mut self, mean: Nanos, exponential: bool) -> Nanos {
        if !exponential {
            return mean;
        }
        let u: f64 = self.rng.gen::<f64>();
        // Inverse transform; bounded as Mahimahi bounds it (2^30 ms).
        ((-(1.0 - u).ln()) * mean as f64).min((1u64 << 30) as f64 * 1e6) as Nanos
    }

    /// Draws for one packet at `now`: true means drop it.
    #[inline]
    pub fn lose(&mut self, now: Nanos) -> bool {
        let (on_time, off_time, exponential) = match self.pattern {
            Pattern::Bernoulli(p) => return p > 0.0 && self.rng.gen::<f64>() < p,
            Pattern::OnOff { mean_on, mean_off } => (mean_on, mean_off, true),
            Pattern::Periodic { on, off } => (on, off, false),
            Pattern::GilbertElliott {
                p,
                r,
                bad_loss,
                good_loss,
            } => {
                let was_bad = self.state == 2;
                let moves = self.rng.gen::<f64>() < if was_bad { r } else { p };
                if moves {
                    self.state = if was_bad { 1 } else { 2 };
                }
                let loss = if was_bad { bad_loss } else { good_loss };
                return loss > 0.0 && self.rng.gen::<f64>() < loss;
            }
            Pattern::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => {
                let u = self.rng.gen::<f64>();
                self.state = match self.state {
                    1 if u < p13 => 3,
                    1 if u < p13 + p14 => 4,
                    1 => 1,
                    2 if u < p23 => 3,
                    2 => 2,
                    3 if u < p31 => 1,
                    3 if u < p31 + p32 => 2,
                    3 => 3,
                    _ => 1,
                };
                return self.state >= 3;
            }
        };
        if on_time == 0 && off_time == 0 {
            return false; // no phase has any length (refused at parse time)
        }
        let mut next = *self.next_switch.get_or_insert(now);
        while next <= now {
            self.on = !self.on;
            next += self.duration(if self.on { on_time } else { off_time }, exponential);
        }
        self.next_switch = Some(next);
        !self.on
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn periodic_is_on_then_off_on_schedule() {
        let mut loss = Loss::with_pattern(Pattern::Periodic { on: 2 * S, off: S }, 1, 0);
        loss.start(0);
        let dropped: Vec<bool> = [0, S, 2 * S, 2 * S + S / 2, 3 * S, 5 * S + 1]
            .iter()
            .map(|&t| loss.lose(t))
            .collect();
        assert_eq!(dropped, vec![false, false, true, true, false, true]);
    }

    #[test]
    fn on_off_times_are_exponential_with_their_means() {
        let mut loss = Loss::with_pattern(
            Pattern::OnOff {
                mean_on: S,
                mean_off: S / 4,
            },
            7,
            0,
        );
        loss.start(0);
        // Sample every millisecond for 2000 s: the fraction of time off is
        // mean_off / (mean_on + mean_off) = 20%.
        let ms = 1_000_000;
        let off = (0..2_000_000u64).filter(|i| loss.lose(i * ms)).count();
        let fraction = off as f64 / 2_000_000.0;
        assert!((fraction - 0.2).abs() < 0.02, "off {fraction}");
    }

    #[test]
    fn bernoulli_with_a_seed_repeats() {
        let draw = |seed| {
            let mut l = Loss::new(0.3, seed, 1);
            (0..100).map(|_| l.lose(0)).collect::<Vec<_>>()
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
    }

    /// Runs of equal values: (value, length) in order.
    fn runs(lost: &[bool]) -> Vec<(bool, usize)> {
        let mut runs: Vec<(bool, usize)> = Vec::new();
        for &l in lost {
            match runs.last_mut() {
                Some((v, n)) if *v == l => *n += 1,
                _ => runs.push((l, 1)),
            }
        }
        runs
    }

    fn draws(pattern: Pattern, n: usize) -> Vec<bool> {
        let mut loss = Loss::with_pattern(pattern, 2024, 3);
        (0..n).map(|_| loss.lose(0)).collect()
    }

    /// Pearson's chi-square of observed counts against expected ones.
    fn chi_square(observed: &[f64], expected: &[f64]) -> f64 {
        observed
            .iter()
            .zip(expected)
            .map(|(o, e)| (o - e).powi(2) / e)
            .sum()
    }

    #[test]
    fn gilbert_has_its_mean_loss_burst_length_and_geometric_gaps() {
        let (p, r) = (0.02, 0.25);
        let lost = draws(
            Pattern::GilbertElliott {
                p,
                r,
                bad_loss: 1.0,
                good_loss: 0.0,
            },
            2_000_000,
        );
        // Stationary share of the bad state: p / (p + r).
        let mean = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        assert!((mean - p / (p + r)).abs() < 0.003, "mean loss {mean}");
        let runs = runs(&lost);
        // Drop the first and last runs, cut by the sample's edges.
        let runs = &runs[1..runs.len() - 1];
        let bursts: Vec<usize> = runs.iter().filter(|r| r.0).map(|r| r.1).collect();
        let burst = bursts.iter().sum::<usize>() as f64 / bursts.len() as f64;
        assert!((burst - 1.0 / r).abs() < 0.05, "mean burst {burst}");
        // Gaps between bursts: P(n) = (1-p)^(n-1) p. Bins 1..=K by tens,
        // then the tail; chi-square against the critical value of its
        // degrees of freedom at 0.1% (a fixed seed makes this exact).
        let gaps: Vec<usize> = runs.iter().filter(|r| !r.0).map(|r| r.1).collect();
        let total = gaps.len() as f64;
        let edges: Vec<usize> = (0..=20).map(|i| 1 + 10 * i).collect();
        let mut observed = vec![0.0; edges.len()];
        let mut expected = vec![0.0; edges.len()];
        for &g in &gaps {
            let bin = edges.iter().rposition(|&e| g >= e).unwrap();
            observed[bin] += 1.0;
        }
        let survival = |n: usize| (1.0 - p).powi(n as i32 - 1); // P(gap >= n)
        for (i, &e) in edges.iter().enumerate() {
            let upper = edges.get(i + 1).map_or(0.0, |&next| survival(next));
            expected[i] = (survival(e) - upper) * total;
        }
        let statistic = chi_square(&observed, &expected);
        // 20 degrees of freedom, 0.1%: 45.31.
        assert!(statistic < 45.31, "chi-square {statistic}");
        // The test can fail: gaps of a wrong p are far off.
        let wrong: Vec<f64> = edges
            .iter()
            .enumerate()
            .map(|(i, &e)| {
                let s = |n: usize| (1.0 - 0.03f64).powi(n as i32 - 1);
                (s(e) - edges.get(i + 1).map_or(0.0, |&n| s(n))) * total
            })
            .collect();
        assert!(chi_square(&observed, &wrong) > 45.31);
    }

    #[test]
    fn gilbert_elliott_loses_in_both_states_by_their_rates() {
        let (p, r, bad_loss, good_loss) = (0.05, 0.2, 0.6, 0.01);
        let lost = draws(
            Pattern::GilbertElliott {
                p,
                r,
                bad_loss,
                good_loss,
            },
            2_000_000,
        );
        let bad = p / (p + r);
        let expected = bad * bad_loss + (1.0 - bad) * good_loss;
        let mean = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        assert!((mean - expected).abs() < 0.003, "{mean} vs {expected}");
    }

    #[test]
    fn four_states_match_the_chains_stationary_distribution() {
        let (p13, p31, p32, p23, p14) = (0.01, 0.3, 0.2, 0.1, 0.005);
        // The chain's transition matrix, rows = from state 1..4.
        let m = [
            [1.0 - p13 - p14, 0.0, p13, p14],
            [0.0, 1.0 - p23, p23, 0.0],
            [p31, p32, 1.0 - p31 - p32, 0.0],
            [1.0, 0.0, 0.0, 0.0],
        ];
        let mut pi = [0.25; 4];
        for _ in 0..100_000 {
            let mut next = [0.0; 4];
            for (i, row) in m.iter().enumerate() {
                for (j, v) in row.iter().enumerate() {
                    next[j] += pi[i] * v;
                }
            }
            pi = next;
        }
        let mut loss = Loss::with_pattern(
            Pattern::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            },
            11,
            0,
        );
        let n = 2_000_000;
        let mut visits = [0usize; 4];
        let mut lost = 0;
        let mut stays_in_3 = Vec::new();
        let mut run = 0;
        for _ in 0..n {
            lost += loss.lose(0) as usize;
            let s = loss.state() as usize;
            visits[s - 1] += 1;
            if s == 3 {
                run += 1;
            } else if run > 0 {
                stays_in_3.push(run);
                run = 0;
            }
        }
        let mean = lost as f64 / n as f64;
        assert!((mean - (pi[2] + pi[3])).abs() < 0.002, "{mean} vs {pi:?}");
        for s in 0..4 {
            let share = visits[s] as f64 / n as f64;
            assert!(
                (share - pi[s]).abs() < 0.004,
                "state {} {share} vs {}",
                s + 1,
                pi[s]
            );
        }
        // A stay in state 3 is geometric with mean 1 / (p31 + p32).
        let stay = stays_in_3.iter().sum::<usize>() as f64 / stays_in_3.len() as f64;
        assert!((stay - 1.0 / (p31 + p32)).abs() < 0.05, "stay {stay}");
    }
}
