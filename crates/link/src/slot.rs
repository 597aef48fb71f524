//! netem's slot model (`slot MIN MAX [packets N] [bytes B]` and `slot
//! distribution D DELAY JITTER [packets N] [bytes B]`): packets that have
//! served their delay leave only while a transmission slot is open, as on
//! a MAC that sends in bursts (Wi-Fi, DOCSIS).
//!
//! The rule is netem's (sch_netem.c, `netem_dequeue` and `get_slot_next`),
//! which acts each time the queue is polled — when a packet comes in and
//! when its timer fires:
//!
//! - The first slot opens when the link starts, with full budgets.
//! - At a poll at time `t`, if the next opening lies before the due time
//!   of the earliest packet waiting, a new opening is drawn from `t`
//!   (`t` plus a uniform draw in [MIN, MAX), or DELAY ± JITTER along the
//!   distribution) and the budgets are refilled. A slot therefore serves
//!   only packets that were due when it opened; one that falls due later
//!   waits for a slot drawn afresh.
//! - While the earliest packet is due and the slot is open, it leaves; it
//!   spends one packet and its bytes of the slot's budgets, and a budget
//!   at or below 0 draws the next opening from `t` (the packet that
//!   overdraws the bytes still leaves).
//! - Nothing is dropped: packets wait for the next slot. Packets due at
//!   the same instant leave in the order they entered.
//!
//! Cost: a link without a slot pays nothing; with one, each packet waits
//! in one more sorted queue and each poll is O(packets released).

use crate::distribution::{normal_cdf, standard_normal, Distribution};
use emu_core::time::{format_duration, parse_duration};
use emu_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// How far after a poll the next slot opens.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotOpening {
    /// Uniform in [min, max) (netem's `slot MIN MAX`; `slot MIN` is MIN..MIN).
    Uniform { min: Nanos, max: Nanos },
    /// `delay + jitter × d` for a draw d of the distribution, at least 0
    /// (netem's `slot distribution D DELAY JITTER`).
    Distribution {
        distribution: Distribution,
        delay: Nanos,
        jitter: Nanos,
    },
}

/// A slot model as the user wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotSpec {
    pub opening: SlotOpening,
    /// Most packets a slot sends (None: no limit, as netem's 0).
    pub packets: Option<u32>,
    /// Most bytes a slot sends (None: no limit); the packet that reaches
    /// the budget still leaves.
    pub bytes: Option<u64>,
}

impl SlotSpec {
    /// Reads netem's words: `MIN [MAX] [packets N] [bytes B]` or
    /// `distribution D DELAY JITTER [packets N] [bytes B]`.
    pub fn parse(text: &str) -> Result<SlotSpec, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let form = "MIN [MAX] [packets N] [bytes B] or distribution D DELAY JITTER [packets N] [bytes B] (e.g. 800us 10ms packets 42)";
        let time = |word: &str| -> Result<Nanos, String> {
            if word.starts_with('-') {
                return Err(format!("'{word}' is negative; slot times are 0 or more"));
            }
            parse_duration(word).map_err(|e| format!("'{word}': {e} (write {form})"))
        };
        let (opening, rest) = match words.as_slice() {
            ["distribution", name, delay, jitter, rest @ ..] => {
                let distribution = Distribution::parse(name).map_err(|e| e.to_string())?;
                let opening = SlotOpening::Distribution {
                    distribution,
                    delay: time(delay)?,
                    jitter: time(jitter)?,
                };
                (opening, rest)
            }
            ["distribution", ..] => {
                return Err(format!(
                    "'{text}': the distribution form takes D DELAY JITTER (write {form})"
                ))
            }
            [min, rest @ ..] => {
                let min = time(min)?;
                let (max, rest) = match rest {
                    [max, tail @ ..] if !matches!(*max, "packets" | "bytes") => (time(max)?, tail),
                    _ => (min, rest),
                };
                if min > max {
                    return Err(format!(
                        "MIN {} is above MAX {}",
                        format_duration(min),
                        format_duration(max)
                    ));
                }
                (SlotOpening::Uniform { min, max }, rest)
            }
            [] => return Err(format!("it is empty (write {form})")),
        };
        let mut spec = SlotSpec {
            opening,
            packets: None,
            bytes: None,
        };
        let mut rest = rest.iter();
        while let Some(word) = rest.next() {
            let value = rest
                .next()
                .ok_or_else(|| format!("'{word}' needs a number after it (write {form})"))?;
            let number = value.parse::<u64>().ok().filter(|n| *n > 0);
            let number =
                number.ok_or_else(|| format!("{word} '{value}' is not a whole number above 0"))?;
            match *word {
                "packets" if spec.packets.is_none() => {
                    spec.packets = Some(
                        u32::try_from(number)
                            .map_err(|_| format!("packets '{value}' is above {}", u32::MAX))?,
                    );
                }
                "bytes" if spec.bytes.is_none() => spec.bytes = Some(number),
                "packets" | "bytes" => return Err(format!("{word} is given twice")),
                _ => return Err(format!("'{word}' is not packets or bytes (write {form})")),
            }
        }
        Ok(spec)
    }

    /// The words of a description, netem's spelling.
    pub fn describe(&self) -> String {
        let format_duration = |d: Nanos| format_duration(d).replace(' ', "");
        let mut text = match &self.opening {
            SlotOpening::Uniform { min, max } => {
                format!("slot {} {}", format_duration(*min), format_duration(*max))
            }
            SlotOpening::Distribution {
                distribution,
                delay,
                jitter,
            } => format!(
                "slot distribution {} {} {}",
                distribution.name(),
                format_duration(*delay),
                format_duration(*jitter)
            ),
        };
        if let Some(n) = self.packets {
            text += &format!(" packets {n}");
        }
        if let Some(b) = self.bytes {
            text += &format!(" bytes {b}");
        }
        text
    }
}

/// A packet held by the gate: when it is due, what it costs a slot.
struct Held<T> {
    due: Nanos,
    bytes: u64,
    item: T,
}

/// The slot gate of one direction: packets enter at the time they start
/// their delay, with the time it ends, and leave when a slot lets them.
pub(crate) struct SlotGate<T> {
    spec: SlotSpec,
    rng: ChaCha8Rng,
    /// When the current or next slot opens.
    slot_next: Nanos,
    packets_left: i64,
    bytes_left: i64,
    /// Packets not yet in the gate, in order of the time they enter.
    entering: VecDeque<(Nanos, Held<T>)>,
    /// Packets in the gate, by due time (ties in order of entry).
    waiting: VecDeque<Held<T>>,
    /// Latest time the gate has run to.
    clock: Nanos,
}

impl<T> SlotGate<T> {
    /// A gate whose first slot opens at `start`.
    pub(crate) fn new(spec: SlotSpec, start: Nanos, seed: u64, stream: u64) -> SlotGate<T> {
        // Mixed with a constant so the slots never repeat another
        // mechanism's draws from the same seed and stream.
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x736c_6f74);
        rng.set_stream(stream);
        let mut gate = SlotGate {
            spec,
            rng,
            slot_next: start,
            packets_left: 0,
            bytes_left: 0,
            entering: VecDeque::new(),
            waiting: VecDeque::new(),
            clock: start,
        };
        gate.refill();
        gate
    }

    /// Packets held (entering or waiting for a slot).
    pub(crate) fn len(&self) -> usize {
        self.entering.len() + self.waiting.len()
    }

    /// A packet starts its delay at `at` (no earlier than the last one)
    /// and is due at `due`; it costs a slot `bytes`.
    pub(crate) fn enter(&mut self, at: Nanos, due: Nanos, bytes: u64, item: T) {
        let at = at
            .max(self.clock)
            .max(self.entering.back().map_or(0, |e| e.0));
        self.entering.push_back((at, Held { due, bytes, item }));
    }

    /// The next time the gate acts: a packet entering, or the waiting
    /// packet's due time or slot opening, whichever is later.
    pub(crate) fn next_event(&self) -> Option<Nanos> {
        let entry = self.entering.front().map(|e| e.0);
        let wake = self.wake();
        match (entry, wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn wake(&self) -> Option<Nanos> {
        self.waiting.front().map(|h| h.due.max(self.slot_next))
    }

    /// Runs the gate to `now`: `release(time, item)` for each packet that
    /// leaves, in order.
    pub(crate) fn run_until(&mut self, now: Nanos, mut release: impl FnMut(Nanos, T)) {
        while let Some(t) = self.next_event().filter(|t| *t <= now) {
            while self.entering.front().is_some_and(|e| e.0 <= t) {
                let (_, held) = self.entering.pop_front().expect("checked");
                let position = self.waiting.partition_point(|h| h.due <= held.due);
                self.waiting.insert(position, held);
            }
            self.poll(t, &mut release);
        }
        self.clock = self.clock.max(now);
    }

    /// netem's dequeue at time `t`.
    fn poll(&mut self, t: Nanos, release: &mut impl FnMut(Nanos, T)) {
        while let Some(due) = self.waiting.front().map(|h| h.due) {
            if self.slot_next < due {
                self.open_next(t);
            }
            if due > t || self.slot_next > t {
                return;
            }
            let held = self.waiting.pop_front().expect("checked");
            self.packets_left -= 1;
            self.bytes_left = self.bytes_left.saturating_sub(held.bytes as i64);
            if self.packets_left <= 0 || self.bytes_left <= 0 {
                self.open_next(t);
            }
            release(t, held.item);
        }
    }

    fn refill(&mut self) {
        self.packets_left = self.spec.packets.map_or(i64::MAX, i64::from);
        self.bytes_left = self
            .spec
            .bytes
            .map_or(i64::MAX, |b| b.min(i64::MAX as u64) as i64);
    }

    /// The next slot opens a draw after `t`, with full budgets.
    fn open_next(&mut self, t: Nanos) {
        let wait = match &self.spec.opening {
            SlotOpening::Uniform { min, max } => {
                min + (((max - min) as u128 * self.rng.gen::<u32>() as u128) >> 32) as Nanos
            }
            SlotOpening::Distribution {
                distribution,
                delay,
                jitter,
            } => {
                let z = standard_normal(&mut self.rng);
                let u = normal_cdf(z).clamp(0.0, 1.0 - f64::EPSILON);
                let value = *delay as f64 + *jitter as f64 * distribution.standard_value(u, z);
                value.max(0.0).round() as Nanos
            }
        };
        self.slot_next = t + wait;
        self.refill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Nanos = 1_000;
    const MS: Nanos = 1_000_000;

    fn fixed(wait: Nanos, packets: Option<u32>, bytes: Option<u64>) -> SlotSpec {
        SlotSpec {
            opening: SlotOpening::Uniform {
                min: wait,
                max: wait,
            },
            packets,
            bytes,
        }
    }

    /// Runs packets `(enter, due, bytes)` through a gate; their release times.
    fn releases(spec: SlotSpec, packets: &[(Nanos, Nanos, u64)]) -> Vec<(usize, Nanos)> {
        let mut gate = SlotGate::new(spec, 0, 1, 0);
        let mut out = Vec::new();
        for (i, &(at, due, bytes)) in packets.iter().enumerate() {
            gate.run_until(at, |t, item| out.push((item, t)));
            gate.enter(at, due, bytes, i);
        }
        while let Some(t) = gate.next_event() {
            gate.run_until(t, |t, item| out.push((item, t)));
        }
        assert_eq!(gate.len(), 0);
        out
    }

    #[test]
    fn netems_words_read_and_bad_ones_are_refused() {
        let spec = SlotSpec::parse("800us 10ms packets 42").unwrap();
        assert_eq!(
            spec.opening,
            SlotOpening::Uniform {
                min: 800 * US,
                max: 10 * MS
            }
        );
        assert_eq!((spec.packets, spec.bytes), (Some(42), None));
        assert_eq!(spec.describe(), "slot 800us 10ms packets 42");
        let one = SlotSpec::parse("2ms bytes 3000").unwrap();
        assert_eq!(
            one.opening,
            SlotOpening::Uniform {
                min: 2 * MS,
                max: 2 * MS
            }
        );
        assert_eq!(one.bytes, Some(3000));
        let dist = SlotSpec::parse("distribution pareto 5ms 1ms packets 8").unwrap();
        assert!(
            matches!(dist.opening, SlotOpening::Distribution { delay, jitter, .. } if delay == 5 * MS && jitter == MS)
        );
        for bad in [
            "",
            "10ms 1ms",
            "1ms packets",
            "1ms packets 0",
            "1ms frames 3",
            "1ms packets 2 packets 3",
            "distribution normal 5ms",
            "-1ms",
        ] {
            assert!(SlotSpec::parse(bad).is_err(), "{bad:?} was read");
        }
    }

    #[test]
    fn a_slot_serves_what_was_due_when_it_opened_and_a_later_packet_waits_for_a_fresh_draw() {
        // The first slot opens at 0; a packet due at 1 ms (entered at 0)
        // finds the opening before its due time, so a slot is drawn from
        // the poll at 0: it opens at 3 ms.
        let out = releases(fixed(3 * MS, None, None), &[(0, MS, 100)]);
        assert_eq!(out, [(0, 3 * MS)]);
        // Packets due before the opening all leave in it; one entered after
        // the opening (due 6 ms) draws a new slot from its entry at 5 ms.
        let out = releases(
            fixed(3 * MS, None, None),
            &[(0, MS, 100), (MS, 2 * MS, 100), (5 * MS, 6 * MS, 100)],
        );
        assert_eq!(out, [(0, 3 * MS), (1, 3 * MS), (2, 8 * MS)]);
    }

    #[test]
    fn a_spent_packet_budget_closes_the_slot_and_the_rest_wait_for_the_next() {
        let packets: Vec<_> = (0..5).map(|_| (0, MS, 100)).collect();
        let out = releases(fixed(3 * MS, Some(2), None), &packets);
        // Slot at 3 ms sends 2, the next opens 3 ms after it, and so on.
        let times: Vec<Nanos> = out.iter().map(|o| o.1).collect();
        assert_eq!(times, [3 * MS, 3 * MS, 6 * MS, 6 * MS, 9 * MS]);
        let order: Vec<usize> = out.iter().map(|o| o.0).collect();
        assert_eq!(order, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_packet_that_reaches_the_byte_budget_still_leaves() {
        let packets: Vec<_> = (0..4).map(|_| (0, MS, 1000)).collect();
        let out = releases(fixed(2 * MS, None, Some(1500)), &packets);
        let times: Vec<Nanos> = out.iter().map(|o| o.1).collect();
        // 1000 leaves 500; the second overdraws it and still goes.
        assert_eq!(times, [2 * MS, 2 * MS, 4 * MS, 4 * MS]);
    }

    #[test]
    fn uniform_openings_fall_between_min_and_max() {
        let mut gate: SlotGate<()> = SlotGate::new(SlotSpec::parse("800us 10ms").unwrap(), 0, 7, 0);
        let waits: Vec<Nanos> = (0..10_000)
            .map(|i| {
                let t = i * 20 * MS;
                gate.open_next(t);
                gate.slot_next - t
            })
            .collect();
        assert!(waits.iter().all(|w| (800 * US..10 * MS).contains(w)));
        let mean = waits.iter().sum::<Nanos>() as f64 / waits.len() as f64;
        assert!((mean - 5.4e6).abs() < 0.1e6, "{mean}");
    }

    #[test]
    fn distribution_openings_follow_delay_and_jitter() {
        let mut gate: SlotGate<()> = SlotGate::new(
            SlotSpec::parse("distribution normal 5ms 1ms").unwrap(),
            0,
            7,
            0,
        );
        let waits: Vec<f64> = (0..20_000)
            .map(|_| {
                gate.open_next(0);
                gate.slot_next as f64
            })
            .collect();
        let mean = waits.iter().sum::<f64>() / waits.len() as f64;
        let sd =
            (waits.iter().map(|w| (w - mean).powi(2)).sum::<f64>() / waits.len() as f64).sqrt();
        assert!((mean - 5e6).abs() < 0.05e6, "{mean}");
        assert!((sd - 1e6).abs() < 0.05e6, "{sd}");
    }
}
