//! A value that changes over time — the base delay of a path or the rate of
//! its bottleneck: steps at given times (a square wave is two steps that
//! repeat), a trace of (time, value) points held or interpolated, or a
//! bounded random walk.
//!
//! A [`Schedule`] is the description; a [`Cursor`] reads it forward in
//! time. The model asks a cursor for the value at nondecreasing times, so
//! each query costs O(1) amortized; the log keeps its own cursor over the
//! same schedule (a random walk's cursor draws the same path from the same
//! seed) to record every change when it happens.

use emu_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// `points[i].1` from offset `points[i].0` until the next point. The
    /// first point is at offset 0. With `repeat`, the schedule starts over
    /// at the last point's offset (so the last value is the first one's
    /// stand-in, as a Mahimahi trace's last line is its period); without it,
    /// the last value holds for ever. With `interpolate`, the value moves
    /// linearly from one point to the next.
    Steps {
        points: Arc<[(Nanos, u64)]>,
        repeat: bool,
        interpolate: bool,
    },
    /// Starts at `first`; every `every` it moves up or down by `step` with
    /// equal chance, staying within [min, max] (a bounded random walk).
    Walk {
        first: u64,
        min: u64,
        max: u64,
        step: u64,
        every: Nanos,
    },
}

impl Schedule {
    pub fn constant(value: u64) -> Schedule {
        Schedule::steps(vec![(0, value)], false, false)
    }

    pub fn steps(points: Vec<(Nanos, u64)>, repeat: bool, interpolate: bool) -> Schedule {
        Schedule::Steps {
            points: points.into(),
            repeat,
            interpolate,
        }
    }

    /// A square wave: `low` for the first `1 - duty` of each period, then
    /// `high` for the remaining `duty`, from the start of the shell.
    pub fn square(low: u64, high: u64, period: Nanos, duty: f64) -> Schedule {
        let switch = (period as f64 * (1.0 - duty)).round() as Nanos;
        let points = if switch == 0 {
            vec![(0, high)]
        } else if switch >= period {
            vec![(0, low)]
        } else {
            vec![(0, low), (switch, high), (period, low)]
        };
        Schedule::steps(points, true, false)
    }

    /// The first value (at the start).
    pub fn first(&self) -> u64 {
        match self {
            Schedule::Steps { points, .. } => points[0].1,
            Schedule::Walk { first, .. } => *first,
        }
    }

    /// The value read at `start` and after. A walk draws from `seed` (the
    /// link's, resolved once where the link is built, so a schedule carries
    /// no seed of its own); `stream` separates the walks of two directions
    /// drawn from one seed.
    pub fn cursor(&self, start: Nanos, seed: u64, stream: u64) -> Cursor {
        let state = match self {
            Schedule::Steps { points, .. } => State::Steps {
                period_start: start,
                index: 0,
                period: if points.len() > 1 {
                    points[points.len() - 1].0
                } else {
                    0
                },
            },
            Schedule::Walk { first, every, .. } => {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7761_6c6b);
                rng.set_stream(stream);
                State::Walk {
                    rng: Box::new(rng),
                    value: *first,
                    next: start + every,
                }
            }
        };
        Cursor {
            schedule: self.clone(),
            state,
        }
    }
}

#[derive(Debug, Clone)]
enum State {
    Steps {
        /// Absolute time of offset 0 of the current repetition.
        period_start: Nanos,
        /// The point in force.
        index: usize,
        /// Length of one repetition (0: the schedule is one value).
        period: Nanos,
    },
    Walk {
        rng: Box<ChaCha8Rng>,
        value: u64,
        next: Nanos,
    },
}

/// A schedule read forward in time.
#[derive(Debug, Clone)]
pub struct Cursor {
    schedule: Schedule,
    state: State,
}

impl Cursor {
    /// The value at `t`. Times must not go backwards between calls; an
    /// earlier time reads the value in force at the latest one.
    pub fn value_at(&mut self, t: Nanos) -> u64 {
        match (&self.schedule, &mut self.state) {
            (
                Schedule::Steps {
                    points,
                    repeat,
                    interpolate,
                },
                State::Steps {
                    period_start,
                    index,
                    period,
                },
            ) => {
                if *period == 0 {
                    return points[0].1;
                }
                if *repeat && t >= *period_start + *period {
                    // Skip whole repetitions at once after a quiet spell.
                    let periods = (t - *period_start) / *period;
                    *period_start += periods * *period;
                    *index = 0;
                }
                let last = points.len() - 1;
                while *index < last && *period_start + points[*index + 1].0 <= t {
                    *index += 1;
                }
                let (at, value) = points[*index];
                if *interpolate && *index < last && t > *period_start + at {
                    let (next_at, next_value) = points[*index + 1];
                    let fraction = (t - *period_start - at) as f64 / (next_at - at) as f64;
                    return (value as f64 + (next_value as f64 - value as f64) * fraction).round()
                        as u64;
                }
                value
            }
            (
                Schedule::Walk {
                    min,
                    max,
                    step,
                    every,
                    ..
                },
                State::Walk { rng, value, next },
            ) => {
                while *next <= t {
                    *value = if rng.gen::<bool>() {
                        value.saturating_add(*step).min(*max)
                    } else {
                        value.saturating_sub(*step).max(*min)
                    };
                    *next += *every;
                }
                *value
            }
            _ => unreachable!("a cursor's state matches its schedule"),
        }
    }

    /// The next time after the latest query at which the value may change
    /// (for an interpolated trace: its next point), or None if it never will.
    pub fn next_change(&self) -> Option<Nanos> {
        match (&self.schedule, &self.state) {
            (
                Schedule::Steps { points, repeat, .. },
                State::Steps {
                    period_start,
                    index,
                    period,
                },
            ) => {
                if *period == 0 || (!*repeat && *index == points.len() - 1) {
                    None
                } else {
                    Some(*period_start + points[*index + 1].0)
                }
            }
            (_, State::Walk { next, .. }) => Some(*next),
            _ => unreachable!("a cursor's state matches its schedule"),
        }
    }
}

/// Reads a step list such as `0s=40ms,10s=190ms,20s=40ms`: times (first 0,
/// then strictly increasing), each `=` a value read by `value`.
pub fn parse_steps<T>(
    text: &str,
    parse_time: impl Fn(&str) -> Result<Nanos, String>,
    value: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<(Nanos, T)>, String> {
    let mut points: Vec<(Nanos, T)> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (time, val) = item
            .split_once('=')
            .ok_or_else(|| format!("'{item}' is not TIME=VALUE (e.g. 10s=190ms)"))?;
        let time = parse_time(time.trim())?;
        let val = value(val.trim())?;
        check_next_time(&points, time)?;
        points.push((time, val));
    }
    if points.is_empty() {
        return Err("no steps given (e.g. 0s=40ms,10s=190ms)".into());
    }
    Ok(points)
}

/// The rules every schedule's times follow: the first at 0, then strictly
/// increasing.
pub fn check_next_time<T>(points: &[(Nanos, T)], time: Nanos) -> Result<(), String> {
    match points.last() {
        None if time != 0 => Err(format!(
            "the first time must be 0 (the start of the shell), not {}",
            emu_core::time::format_duration(time)
        )),
        Some(&(previous, _)) if time <= previous => Err(format!(
            "times must increase: {} comes after {}",
            emu_core::time::format_duration(time),
            emu_core::time::format_duration(previous)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;
    const S: Nanos = 1_000_000_000;

    #[test]
    fn square_wave_switches_at_the_exact_nanosecond() {
        let square = Schedule::square(40 * MS, 190 * MS, 2 * S, 0.5);
        let mut c = square.cursor(5, 0, 0);
        assert_eq!(c.value_at(5), 40 * MS);
        assert_eq!(c.next_change(), Some(5 + S));
        assert_eq!(c.value_at(5 + S - 1), 40 * MS);
        assert_eq!(c.value_at(5 + S), 190 * MS);
        assert_eq!(c.value_at(5 + 2 * S - 1), 190 * MS);
        assert_eq!(c.value_at(5 + 2 * S), 40 * MS);
        // After a quiet spell of many periods.
        assert_eq!(c.value_at(5 + 1001 * S - 1), 40 * MS);
        assert_eq!(c.value_at(5 + 1001 * S), 190 * MS);
        let duty = Schedule::square(1, 2, 100, 0.25);
        let mut c = duty.cursor(0, 0, 0);
        assert_eq!((c.value_at(74), c.value_at(75), c.value_at(100)), (1, 2, 1));
    }

    #[test]
    fn steps_repeat_or_hold() {
        let points = vec![(0, 40), (10 * S, 190), (20 * S, 40)];
        let mut once = Schedule::steps(points.clone(), false, false).cursor(0, 0, 0);
        assert_eq!(once.value_at(10 * S - 1), 40);
        assert_eq!(once.value_at(10 * S), 190);
        assert_eq!(once.value_at(100 * S), 40);
        assert_eq!(once.next_change(), None);
        let mut looped =
            Schedule::steps(vec![(0, 1), (10 * S, 2), (20 * S, 3)], true, false).cursor(0, 0, 0);
        assert_eq!(looped.value_at(25 * S), 1);
        assert_eq!(looped.value_at(30 * S), 2);
        assert_eq!(looped.next_change(), Some(40 * S));
    }

    #[test]
    fn interpolated_trace_moves_linearly() {
        let mut c =
            Schedule::steps(vec![(0, 0), (10, 100), (20, 100)], false, true).cursor(0, 0, 0);
        assert_eq!(c.value_at(0), 0);
        assert_eq!(c.value_at(5), 50);
        assert_eq!(c.value_at(10), 100);
        assert_eq!(c.value_at(15), 100);
    }

    #[test]
    fn walk_stays_in_bounds_moves_by_steps_and_repeats_by_seed() {
        let walk = Schedule::Walk {
            first: 50,
            min: 20,
            max: 80,
            step: 5,
            every: 10,
        };
        let mut a = walk.cursor(0, 3, 1);
        let mut b = walk.cursor(0, 3, 1);
        let mut previous = 50;
        let mut seen = std::collections::BTreeSet::new();
        for t in 0..20_000 {
            let v = a.value_at(t);
            assert!((20..=80).contains(&v));
            assert!(v.abs_diff(previous) == 0 || v.abs_diff(previous) == 5);
            if t % 10 != 0 {
                assert_eq!(v, previous, "changes only every 10 ns");
            }
            seen.insert(v);
            previous = v;
        }
        assert_eq!(seen.len(), 13, "visits every level from 20 to 80");
        assert_eq!(b.value_at(19_999), previous, "same seed, same path");
    }

    #[test]
    fn step_lists_are_checked() {
        let time = |s: &str| emu_core::time::parse_duration(s).map_err(|e| e.to_string());
        let value = |s: &str| s.parse::<u64>().map_err(|e| e.to_string());
        assert_eq!(
            parse_steps("0s=1, 10s=2", time, value).unwrap(),
            vec![(0, 1), (10 * S, 2)]
        );
        assert!(parse_steps("0s=1,20s=2,10s=3", time, value)
            .unwrap_err()
            .contains("times must increase"));
        assert!(parse_steps("5s=1", time, value)
            .unwrap_err()
            .contains("first time must be 0"));
        assert!(parse_steps("0s", time, value)
            .unwrap_err()
            .contains("TIME=VALUE"));
    }
}
