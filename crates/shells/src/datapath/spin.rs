//! How long before a departure the pump stops sleeping and spins: as long
//! as this machine's timed wake-ups are late, and no longer. A reader that
//! keeps a departure (see `crate::datapath::direction::Waits`) sleeps and spins for it
//! the same way, with an estimate of its own.
//!
//! A thread asked to wake at `t` runs at `t + e`, where `e` (timer slack,
//! the hypervisor, the scheduler) is a few microseconds on bare metal and
//! tens on a virtual machine. Sleeping until `departure - s` and spinning
//! the rest makes the write exact whenever `e < s`; every microsecond of
//! `s` beyond `e` is a microsecond of a core burnt per packet. So `s`
//! follows a high quantile of the wake-up lateness measured on the pump's
//! own sleeps: a stochastic-approximation quantile estimator (each sample
//! above the estimate raises it by `q` steps, each below lowers it by
//! `1 - q`; it settles where a fraction `q` of samples fall below).
//!
//! Fixed steps alone follow too slowly where it matters most: at a few
//! packets a second (a ping, a latency probe) the pump sleeps long, wakes
//! from deep idle later than the short calibration sleeps measured, and a
//! fixed 1 µs step would need hundreds of late packets to cover a 200 µs
//! wake-up. So when late wake-ups come often (more than one sample in ten,
//! recently, where a settled estimate sees one in a hundred), each closes a
//! quarter of the gap at once, and an early one gives back a small share
//! of the surplus: the estimate reaches new lateness within a few packets.
//! A lone outlier (a 5 ms hiccup among a second of 30 µs wake-ups) moves
//! it by one step only: were it to close a quarter of the gap too, one
//! outlier a second would hold the spin at several times the lateness it
//! covers (measured: 142 µs of spin per packet for a p99 lateness of
//! 15 µs, a tenth of a core at 10 Mbit/s).
//!
//! The estimator only learns from timed sleeps, and a pump sleeps on a
//! timer only when the next departure is further away than the spin. Two
//! things keep it from being stuck high, spinning through every gap:
//! - **Calibration.** The pump starts from the lateness of a few short
//!   timed sleeps it takes before the first packet, not from the longest
//!   spin. Started at the longest, a pump whose departures are always
//!   closer than that (a 100 Mbit/s link sends a packet every 120 µs)
//!   never slept on a timer again, and spun a whole core for the run.
//! - **Probes.** The same happens after one long hiccup (a 5 ms stall
//!   raises the estimate to the longest spin). So when the spin has kept
//!   the pump from sleeping for [`PROBE_EVERY`], it sleeps half of the
//!   next wait instead of spinning it. A probe that wakes earlier than the
//!   estimate halves it: a few probes bring a stuck spin down, and the
//!   ordinary samples take over from there. A probe risks at most one
//!   packet written a little late (by its wake-up lateness beyond half the
//!   wait) per [`PROBE_EVERY`].
//!
//! **Slack.** A spin that covers the whole high quantile makes writes
//! exact to a few microseconds, and on a virtual machine, whose timed
//! wake-ups run 20–50 µs late at the 99th percentile, it costs that much
//! of a core before every departure: a third of emu's CPU at 10 Mbit/s.
//! Like the kernel's timer slack, `slack` is the lateness the user accepts:
//! the spin covers only the wake-up lateness beyond it, so a write is at
//! most about `slack` late at the 99th percentile, whatever the host's
//! noise, and a quiet machine hardly spins at all.

use emu_core::time::Nanos;

/// The quantile of the wake-up lateness the spin covers.
const QUANTILE: f64 = 0.99;
/// Step of the estimator, in ns: large enough to follow a change within a
/// second of packets, small against the lateness it tracks.
const STEP_NS: f64 = 1000.0;
/// Bounds of the adaptive spin.
const MIN_SPIN: Nanos = 2_000;
const MAX_SPIN: Nanos = 500_000;
/// Added to the estimate: the time from waking to the first packet write.
const MARGIN: Nanos = 3_000;
/// Share of the gap a late wake-up closes at once, when late wake-ups are
/// frequent.
const ATTACK: f64 = 0.25;
/// How frequent: the recent share of samples above the estimate beyond
/// which late ones close the gap (a settled estimate has 1 - QUANTILE).
const ATTACK_SHARE: f64 = 0.1;
/// Weight of each sample in that recent share (about the last sixteen).
const SHARE_WEIGHT: f64 = 1.0 / 16.0;
/// Share of the surplus an early wake-up gives back.
const DECAY: f64 = 1.0 / 512.0;
/// How long the spin may keep the pump from any timed sleep before it
/// probes with one.
pub const PROBE_EVERY: Nanos = 10_000_000;
/// The shortest wait worth probing: half of it is slept, and a shorter
/// sleep says little about the timer.
const PROBE_MIN_WAIT: Nanos = 40_000;

/// The spin to use before each departure.
#[derive(Debug, Clone)]
pub struct Spin {
    /// `Some` when the user fixed it with `--spin`.
    fixed: Option<Nanos>,
    estimate: f64,
    /// Recent share of samples later than the estimate (a moving average).
    above_share: f64,
    /// When the last timed sleep ended (0: never).
    last_sample: Nanos,
    /// The lateness accepted: taken off the adaptive spin.
    slack: Nanos,
}

impl Spin {
    /// A fixed spin, or (None) one that adapts, starting from the wake-up
    /// lateness of the calibration sleeps in `samples` (see
    /// [`calibration_estimate`]; the longest spin if there are none).
    pub fn new(fixed: Option<Nanos>, samples: &[Nanos]) -> Spin {
        let estimate = match fixed {
            Some(_) => 0.0,
            None => calibration_estimate(samples) as f64,
        };
        Spin {
            fixed,
            estimate,
            above_share: 0.0,
            last_sample: 0,
            slack: 0,
        }
    }

    /// The same spin, accepting writes up to `slack` late: an adaptive spin
    /// covers only the wake-up lateness beyond it (a fixed one is the
    /// user's, and stays).
    pub fn accepting(self, slack: Nanos) -> Spin {
        Spin { slack, ..self }
    }

    /// How long before a departure to start spinning.
    pub fn current(&self) -> Nanos {
        match self.fixed {
            Some(spin) => spin,
            None => ((self.estimate as Nanos) + MARGIN)
                .saturating_sub(self.slack)
                .clamp(MIN_SPIN, MAX_SPIN),
        }
    }

    /// Learns from one timed sleep that ended by its timeout: it was meant
    /// to end at `target` and the thread ran again at `woke`.
    pub fn observe(&mut self, target: Nanos, woke: Nanos) {
        if self.fixed.is_some() {
            return;
        }
        self.last_sample = woke;
        let late = woke.saturating_sub(target) as f64;
        let above = late > self.estimate;
        self.above_share += (f64::from(u8::from(above)) - self.above_share) * SHARE_WEIGHT;
        if above {
            self.estimate += STEP_NS * QUANTILE;
            if self.above_share > ATTACK_SHARE {
                self.estimate += (late - self.estimate) * ATTACK;
            }
        } else {
            self.estimate -= STEP_NS * (1.0 - QUANTILE) + (self.estimate - late) * DECAY;
        }
        self.estimate = self.estimate.clamp(0.0, MAX_SPIN as f64);
    }

    /// Whether to probe (sleep half of `wait` on a timer instead of
    /// spinning it) at `now`: the spin has kept the pump from timed sleeps
    /// for [`PROBE_EVERY`], and the wait is long enough to learn from.
    pub fn probe_due(&self, now: Nanos, wait: Nanos) -> bool {
        self.fixed.is_none()
            && wait >= PROBE_MIN_WAIT
            && now.saturating_sub(self.last_sample) >= PROBE_EVERY
    }

    /// Learns from a probe meant to end at `target` that ran again at
    /// `woke`. Waking earlier than the estimate is strong evidence that the
    /// estimate is stale (every ordinary sleep was blocked by it), so the
    /// estimate halves, down to no less than the probe's own lateness;
    /// waking later is an ordinary sample.
    pub fn observe_probe(&mut self, target: Nanos, woke: Nanos) {
        if self.fixed.is_some() {
            return;
        }
        let late = woke.saturating_sub(target) as f64;
        if late < self.estimate {
            self.last_sample = woke;
            self.estimate = late.max(self.estimate / 2.0);
        } else {
            self.observe(target, woke);
        }
    }
}

/// The share of a core a pump that departs often may spend spinning,
/// taken over a second or so. The estimate above says how long a spin
/// would make a departure exact; this says what that may cost.
///
/// Why a bound: the estimate follows the high quantile of every wake-up,
/// and a pump departing every 120 µs (100 Mbit/s) spun its 15–50 µs
/// before each, about a sixth of a core, for no exactness: held to this
/// share (which leaves it about 10 µs a departure), its packets were
/// written as late as before (p99 19–24 µs against 13–20) and emu used
/// 40–43% of a core instead of 49–52%, in interleaved runs. Sparse
/// departures are not held (see [`BUDGET_GAPS_BELOW`]), and a budget left
/// unspent accumulates, up to two of the longest spins.
pub const BUDGET_SHARE: f64 = 0.05;
/// The most unspent budget kept.
const BUDGET_DEPTH: Nanos = 2 * MAX_SPIN;
/// A pump whose own departures come this far apart or more (on average)
/// spins in full whatever the budget. Between such departures its CPU
/// goes idle, and on a virtual machine an idle CPU halts: the wake-up
/// waits for the hypervisor, late by up to a hundred microseconds or more,
/// and only the full spin covers that. At 10 Mbit/s (1.2 ms between
/// departures) the budget let packets be written 45–1085 µs late at p99,
/// against 8–236 µs (mostly within 50) with the full spin, ten interleaved
/// runs each; the spin there follows the host's noise up to several
/// hundred microseconds, and CPU with it. A pump departing more often
/// keeps its CPU busy, and wakes promptly (see [`BUDGET_SHARE`]).
/// The rate, not the wait at hand, decides: at 10 Mbit/s a pump woken
/// for new packets often finds its next departure a few hundred
/// microseconds off, and must spin for it in full all the same.
pub const BUDGET_GAPS_BELOW: Nanos = 500_000;
/// A spin this short is allowed whatever the budget: a timed sleep as
/// short saves about what the wake-up that ends it costs, and ends late
/// (see [`SHORTEST_SLEEP`]).
/// Measured at 1 Gbit/s, where departures are 12 µs apart: held to the
/// budget alone, the pumps woke 5–20% more often, and in one run of three
/// fell behind for good (packets written 133 µs late on average). With
/// this floor, the wake-ups and lateness of an unbounded spin; at
/// 100 Mbit/s (120 µs apart) the budget's saving stays.
const FREE_SPIN: Nanos = SHORTEST_SLEEP;
/// The shortest timed sleep worth taking instead of looking without
/// sleeping: a shorter one saves about what the wake-up that ends it
/// costs, and ends late.
pub(crate) const SHORTEST_SLEEP: Nanos = 10_000;

/// How long a thread with a departure `wait` away sleeps before spinning
/// `spin`: the rest of the wait, unless that is shorter than
/// [`SHORTEST_SLEEP`] (None: spin the whole wait). With slack the spin can
/// be a few microseconds, and pumps 12 µs apart (1 Gbit/s) would sleep
/// through every gap: the budget's floor ([`FREE_SPIN`]) kept them from
/// that, and without it they woke more often and fell behind.
pub(crate) fn sleep_before(wait: Nanos, spin: Nanos) -> Option<Nanos> {
    wait.checked_sub(spin)
        .filter(|&sleep| sleep >= SHORTEST_SLEEP)
}

/// What an adaptive pump may still spin: a token bucket filled at
/// [`BUDGET_SHARE`] of the time that passes, drawn by the time spun.
#[derive(Debug, Clone)]
pub struct SpinBudget {
    /// Unspent spin, in ns; below zero after a spin longer than allowed
    /// (a departure waited for), repaid before the next spin.
    tokens: f64,
    last: Nanos,
    /// How far apart the pump writes its own departures: when it runs,
    /// which is what keeps its CPU from halting.
    writes: Spacing,
}

impl SpinBudget {
    /// A full budget at `now`.
    pub fn new(now: Nanos) -> SpinBudget {
        SpinBudget {
            tokens: BUDGET_DEPTH as f64,
            last: now,
            // Sparse until shown otherwise: full spins.
            writes: Spacing::between_deliveries(BUDGET_GAPS_BELOW).counting_from(now),
        }
    }

    /// The pump wrote departures of its own model at `now`.
    pub fn departed(&mut self, now: Nanos) {
        self.writes.due(now);
    }

    /// The spin allowed at `now`, at most `wanted`: all of it while
    /// departures come [`BUDGET_GAPS_BELOW`] apart or more, and never
    /// below [`FREE_SPIN`] (or `wanted`, if less).
    pub fn allow(&mut self, wanted: Nanos, now: Nanos) -> Nanos {
        let passed = now.saturating_sub(self.last) as f64;
        self.last = self.last.max(now);
        self.tokens = (self.tokens + passed * BUDGET_SHARE).min(BUDGET_DEPTH as f64);
        if !self.holds() {
            return wanted;
        }
        (self.tokens.max(0.0) as Nanos).clamp(FREE_SPIN.min(wanted), wanted)
    }

    /// Draws `spun` ns from the budget, while it holds the pump: spins of
    /// sparse departures are not its to count. Charging them would leave a
    /// debt without bound (a noisy minute at 10 Mbit/s spins a third of a
    /// core) and hold the pump to the shortest spin for minutes once its
    /// departures came closer.
    pub fn spend(&mut self, spun: Nanos) {
        if self.holds() {
            self.tokens -= spun as f64;
        }
    }

    /// Whether the pump departs often enough for the budget to hold it
    /// (see [`BUDGET_GAPS_BELOW`]).
    fn holds(&self) -> bool {
        self.writes.closer_than(BUDGET_GAPS_BELOW)
    }
}

/// How far apart a thread's departures come: a moving average of about
/// the last sixteen gaps. For the tick, the gaps between due times in the
/// model's time, not the thread's wake-ups, so that how the thread waits
/// does not change what it measures: where the average is below a tick,
/// the thread ticks (see [`Tick`]). For a pump's spin budget, the gaps
/// between its writes (see [`SpinBudget`]).
///
/// A pump's packets due at one instant (a super-packet's segments through
/// a delay) are one wake-up's work, not a rate: it counts only the gaps
/// between distinct due times ([`Spacing::between_instants`]). An
/// experiment's lane counts every gap, a delivery due no later than the
/// one before as none ([`Spacing::between_deliveries`]): its deliveries
/// into several hosts interleave, and counted so, 4 flows through a
/// 1 Gbit/s bottleneck without offload put the worst host's p99 lateness
/// under 200 µs in 15 runs of 16; counting distinct instants only, in 4
/// of 8 (`benches/dumbbell.sh 8 1gbit`, interleaved).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spacing {
    mean_gap: f64,
    last_due: Option<Nanos>,
    /// Whether a due time no later than the last counts (as a gap of 0).
    counts_ties: bool,
}

impl Spacing {
    const WEIGHT: f64 = 1.0 / 16.0;

    /// A pump's spacing, sparse until shown otherwise.
    pub(crate) fn between_instants() -> Spacing {
        Spacing {
            mean_gap: BUDGET_GAPS_BELOW as f64,
            last_due: None,
            counts_ties: false,
        }
    }

    /// A lane's spacing, sparse (`sparse` apart) until shown otherwise.
    pub(crate) fn between_deliveries(sparse: Nanos) -> Spacing {
        Spacing {
            mean_gap: sparse as f64,
            last_due: None,
            counts_ties: true,
        }
    }

    /// Counts the first gap from `start` (a budget's creation) instead of
    /// from the first departure.
    pub(crate) fn counting_from(self, start: Nanos) -> Spacing {
        Spacing {
            last_due: Some(start),
            ..self
        }
    }

    /// Takes one departure's due time.
    pub(crate) fn due(&mut self, due: Nanos) {
        let Some(last) = self.last_due else {
            self.last_due = Some(due);
            return;
        };
        if due > last || self.counts_ties {
            let gap = due.saturating_sub(last) as f64;
            self.mean_gap += (gap - self.mean_gap) * Self::WEIGHT;
            self.last_due = Some(last.max(due));
        }
    }

    /// Whether departures come due closer together than `tick`.
    pub(crate) fn closer_than(&self, tick: Nanos) -> bool {
        self.mean_gap < tick as f64
    }
}

/// The one rule for ticking. Where a thread's departures come closer
/// together than `every` (see [`Spacing`]), it neither spins to each
/// nor sets a timer for each: it sleeps on a timer kept set
/// (`crate::sys::timer::KeptTimer`) `every` after the next due time at the
/// latest, and writes everything due when it wakes, merged. A write is
/// then up to `every` late, besides the wake-up's own lateness; the
/// wake-ups and timer settings saved are one per departure (at 1 Gbit/s
/// a pump at 54% of a core instead of 100%, see docs/performance.md).
///
/// A thread that input wakes while it ticks (a lane, which sleeps on its
/// hosts' devices) ticks for any departure; one that input does not wake
/// (a pump: its readers are not told it sleeps) ticks only for a departure
/// within `every`, and sleeps for a further one as for a sparse one,
/// announced, so that a reader wakes it for what comes due sooner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tick {
    pub every: Nanos,
    pub woken_by_input: bool,
}

impl Tick {
    /// When a thread whose departures are spaced as `spacing` wakes for
    /// the one due at `due`, if it ticks for it: a tick after it.
    pub(crate) fn until(&self, spacing: &Spacing, due: Nanos, now: Nanos) -> Option<Nanos> {
        let near = self.woken_by_input || due <= now.saturating_add(self.every);
        (spacing.closer_than(self.every) && near).then(|| due.saturating_add(self.every))
    }
}

/// How a thread that sleeps on a timer and also watches its devices (a
/// reader keeping a departure, the experiments' fabric thread) waits for
/// a departure; see [`Spin::plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Nothing due: until input.
    Idle,
    /// Asleep until the spin before the departure.
    Timed(Nanos),
    /// Asleep for half the wait, to learn the timer (see
    /// [`Spin::probe_due`]).
    Probe(Nanos),
    /// Not at all: the departure is within the spin.
    Look,
}

impl Spin {
    /// How to wait at `now` for a departure due at `at` (None: none):
    /// asleep until the spin before it, unless that sleep would be shorter
    /// than a wake-up is worth ([`sleep_before`]); a spin stuck long is
    /// probed.
    pub(crate) fn plan(&self, at: Option<Nanos>, now: Nanos) -> Plan {
        self.plan_spinning(self.current(), at, now)
    }

    /// [`Spin::plan`] with `spin` in place of the estimate: a pump spins
    /// what its budget allows (see [`SpinBudget`]).
    pub(crate) fn plan_spinning(&self, spin: Nanos, at: Option<Nanos>, now: Nanos) -> Plan {
        let Some(at) = at else {
            return Plan::Idle;
        };
        let wait = at.saturating_sub(now);
        if let Some(sleep) = sleep_before(wait, spin) {
            Plan::Timed(now + sleep)
        } else if self.probe_due(now, wait) {
            Plan::Probe(now + wait / 2)
        } else {
            Plan::Look
        }
    }

    /// Learns from a wait planned as `plan` that ended with nothing to
    /// read, the thread running again at `woke`. False if it taught
    /// nothing: a look, or a timed wait that ended before its time.
    pub(crate) fn learn(&mut self, plan: Plan, woke: Nanos) -> bool {
        match plan {
            Plan::Timed(target) if woke >= target => self.observe(target, woke),
            Plan::Probe(target) if woke >= target => self.observe_probe(target, woke),
            _ => return false,
        }
        true
    }
}

/// Timed sleeps a thread takes before the first packet to learn how late
/// it wakes on this machine, in its final class and timer slack (a pump,
/// the experiments' fabric thread): 16 of 100 µs, under 3 ms while the
/// command starts.
pub(crate) const CALIBRATION_SLEEPS: usize = 16;
pub(crate) const CALIBRATION_SLEEP: Nanos = 100_000;

/// Where the adaptive spin starts, from the lateness of a few short timed
/// sleeps taken before the first packet: the second largest (about the
/// 90th percentile of sixteen), so that one sleep stretched by the setup
/// going on around it does not set the start. Lateness beyond it (a wake
/// from deep idle) is caught by the estimator within a few packets.
pub fn calibration_estimate(samples: &[Nanos]) -> Nanos {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => MAX_SPIN,
        1 => sorted[0].min(MAX_SPIN),
        n => sorted[n - 2].min(MAX_SPIN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adaptive(estimate: f64) -> Spin {
        Spin {
            fixed: None,
            estimate,
            above_share: 0.0,
            last_sample: 0,
            slack: 0,
        }
    }

    #[test]
    fn the_estimate_settles_on_the_high_quantile_of_the_lateness() {
        let mut spin = adaptive(0.0);
        // Lateness uniform over 0..100 µs: the 99th percentile is 99 µs;
        // the decay towards early samples holds the estimate a little below.
        for i in 0..200_000u64 {
            let late = (i * 7919) % 100_000;
            spin.observe(1_000_000, 1_000_000 + late);
        }
        let estimate = spin.estimate;
        assert!((93_000.0..=100_000.0).contains(&estimate), "{estimate}");
        assert_eq!(spin.current(), estimate as Nanos + MARGIN);
        // A quieter machine brings it down again.
        for _ in 0..200_000 {
            spin.observe(1_000_000, 1_005_000);
        }
        assert!(spin.current() < 10_000, "{}", spin.current());
    }

    /// A sparse flow (a ping) whose sleeps wake 200 µs late is covered
    /// within a handful of packets.
    #[test]
    fn new_lateness_is_covered_within_a_few_packets() {
        let mut spin = adaptive(10_000.0);
        for _ in 0..12 {
            spin.observe(1_000_000, 1_200_000);
        }
        assert!(spin.current() >= 170_000, "{}", spin.current());
    }

    /// Lone outliers among settled wake-ups (here one 5 ms hiccup in every
    /// thousand 20 µs samples) move the spin by a step each, not by a share
    /// of their lateness: the spin stays near the lateness it covers.
    #[test]
    fn lone_outliers_do_not_hold_the_spin_up() {
        let mut spin = adaptive(20_000.0);
        for i in 0..10_000 {
            let late = if i % 1000 == 500 { 5_000_000 } else { 20_000 };
            spin.observe(1_000_000, 1_000_000 + late);
        }
        assert!(spin.current() < 30_000, "{}", spin.current());
    }

    #[test]
    fn an_adaptive_spin_starts_from_its_calibration() {
        let samples = [9_000, 12_000, 10_000, 400_000, 15_000, 11_000];
        let spin = Spin::new(None, &samples);
        // The second largest: the one stretched sleep does not count.
        assert_eq!(spin.current(), 15_000 + MARGIN);
        // No calibration: the longest spin, to be learnt down.
        assert_eq!(Spin::new(None, &[]).current(), MAX_SPIN);
        assert_eq!(Spin::new(None, &[2_000_000]).current(), MAX_SPIN);
    }

    /// A pump whose departures are all closer than its spin never sleeps
    /// on a timer, so ordinary samples never come; probes bring the spin
    /// down to the machine's lateness within a few of them.
    #[test]
    fn a_spin_too_long_to_ever_sleep_is_probed_down() {
        let mut spin = adaptive(MAX_SPIN as f64);
        let mut now = 1_000_000_000;
        // Departures every 120 µs (100 Mbit/s), all within the spin.
        let mut probes = 0;
        for _ in 0..2_000 {
            now += 120_000;
            if spin.probe_due(now, 120_000) {
                probes += 1;
                let target = now + 60_000;
                spin.observe_probe(target, target + 20_000);
            }
        }
        assert!(spin.current() < 40_000, "{}", spin.current());
        // One probe per PROBE_EVERY at most: 240 ms of departures.
        assert!(probes <= 25, "{probes}");
        // Probes stop once ordinary sleeps resume.
        spin.observe(now, now + 20_000);
        assert!(!spin.probe_due(now + 1_000_000, 120_000));
    }

    #[test]
    fn probes_skip_short_waits_and_fixed_spins() {
        let spin = adaptive(MAX_SPIN as f64);
        assert!(!spin.probe_due(1_000_000_000, PROBE_MIN_WAIT - 1));
        assert!(spin.probe_due(1_000_000_000, PROBE_MIN_WAIT));
        let fixed = Spin::new(Some(100_000), &[]);
        assert!(!fixed.probe_due(1_000_000_000, 1_000_000));
    }

    /// A probe that wakes later than the estimate is an ordinary sample:
    /// it raises the estimate, and several raise it fast.
    #[test]
    fn late_probes_raise_the_estimate() {
        let mut spin = adaptive(20_000.0);
        spin.observe_probe(1_000_000, 1_100_000);
        assert!(spin.current() > 20_000 + MARGIN, "{}", spin.current());
        for _ in 0..4 {
            spin.observe_probe(1_000_000, 1_100_000);
        }
        assert!(spin.current() > 40_000, "{}", spin.current());
    }

    /// Departures 400 µs apart (30 Mbit/s), each wanting 100 µs of spin:
    /// the spins are held to the budget's share of the time.
    #[test]
    fn a_budget_holds_long_spins_to_its_share_of_a_core() {
        let gap = 400_000;
        let mut now = 1_000_000_000;
        let mut budget = SpinBudget::new(now);
        let mut spun = 0;
        for _ in 0..1_000 {
            now += gap;
            let allowed = budget.allow(100_000, now);
            budget.spend(allowed);
            budget.departed(now + allowed);
            spun += allowed;
        }
        // The share, the full bucket it started with, and the spins
        // allowed in full while the average gap came down from sparse.
        let limit = (BUDGET_SHARE * (1_000 * gap) as f64 + BUDGET_DEPTH as f64) as Nanos;
        assert!(spun <= limit + 10 * 100_000, "{spun} > {limit}");
        assert!(spun as f64 >= limit as f64 * 0.95, "{spun} < {limit}");
        // What it wanted within the share, it gets.
        now += gap;
        assert_eq!(budget.allow(15_000, now), 15_000);
    }

    /// Departures 1.2 ms apart (10 Mbit/s) leave the CPU to halt between
    /// them: their spins are not held, even with the budget spent.
    #[test]
    fn sparse_departures_spin_in_full() {
        let mut now = 1_000_000_000;
        let mut budget = SpinBudget::new(now);
        budget.spend(10 * MAX_SPIN);
        assert_eq!(budget.allow(200_000, now), 200_000, "sparse from the start");
        for _ in 0..100 {
            now += 1_200_000;
            budget.departed(now);
        }
        assert_eq!(budget.allow(200_000, now), 200_000);
        // Dense departures bring the budget to bear.
        for _ in 0..100 {
            now += 120_000;
            budget.departed(now);
        }
        budget.spend(10 * MAX_SPIN);
        assert_eq!(budget.allow(200_000, now), FREE_SPIN);
    }

    /// Spins of sparse departures, however long, leave no debt: when the
    /// departures come closer, the budget holds them from a full bucket.
    #[test]
    fn sparse_spins_leave_no_debt_for_dense_departures() {
        let mut now = 1_000_000_000;
        let mut budget = SpinBudget::new(now);
        // A noisy minute at 10 Mbit/s: 400 µs spun before every departure.
        for _ in 0..50_000 {
            now += 1_200_000;
            let allowed = budget.allow(400_000, now);
            assert_eq!(allowed, 400_000);
            budget.spend(allowed);
            budget.departed(now + allowed);
        }
        for _ in 0..100 {
            now += 120_000;
            budget.departed(now);
        }
        assert_eq!(budget.allow(50_000, now), 50_000);
    }

    /// After a quiet spell, the longest spin is allowed at once (a ping
    /// after idle), and a debt (a long wait spun) is repaid before the next.
    #[test]
    fn a_quiet_pump_has_its_full_spin_and_a_debt_is_repaid() {
        let mut budget = SpinBudget::new(0);
        // Departures 100 µs apart, then a quiet second: the budget holds
        // (as it does until the next departure shows the gap), and has
        // filled up.
        for k in 1..=50 {
            budget.departed(k * 100_000);
        }
        assert_eq!(budget.allow(MAX_SPIN, 1_000_000_000), MAX_SPIN);
        // A full bucket holds two of the longest spins: spending three
        // leaves a debt of one, repaid in twenty times as long (5%).
        budget.spend(3 * MAX_SPIN);
        assert_eq!(budget.allow(50_000, 1_000_000_000), FREE_SPIN);
        let repaid = 1_000_000_000 + MAX_SPIN * 20;
        assert_eq!(budget.allow(50_000, repaid - 1_000), FREE_SPIN);
        assert_eq!(budget.allow(50_000, repaid + 50_000 * 20), 50_000);
        // It never allows more than wanted, nor less than FREE_SPIN unless
        // less is wanted.
        assert_eq!(budget.allow(1_000, repaid + 10_000_000), 1_000);
    }

    /// Slack comes off the adaptive spin, which still follows the
    /// machine: a noisy host is spun for beyond the slack, a quiet one
    /// hardly at all; a spin the user fixed is left alone.
    #[test]
    fn slack_comes_off_the_spin_and_leaves_it_adaptive() {
        let mut spin = adaptive(40_000.0).accepting(20_000);
        assert_eq!(spin.current(), 40_000 + MARGIN - 20_000);
        for _ in 0..20 {
            spin.observe(1_000_000, 1_200_000);
        }
        let noisy = spin.current();
        assert!(noisy >= 150_000, "{noisy}");
        for _ in 0..200_000 {
            spin.observe(1_000_000, 1_005_000);
        }
        assert_eq!(spin.current(), MIN_SPIN);
        let fixed = Spin::new(Some(30_000), &[]).accepting(20_000);
        assert_eq!(fixed.current(), 30_000);
    }

    /// A timed wait that ran out teaches the estimate; one that ended
    /// before its time (a kernel without nanosecond waits), or a look,
    /// teaches nothing.
    #[test]
    fn only_waits_that_ran_their_time_are_learnt_from() {
        let mut spin = adaptive(10_000.0);
        assert!(!spin.learn(Plan::Timed(1_000_000), 999_999));
        assert!(!spin.learn(Plan::Look, 2_000_000));
        assert_eq!(spin.current(), 10_000 + MARGIN);
        assert!(spin.learn(Plan::Timed(1_000_000), 1_200_000));
        assert!(spin.current() > 10_000 + MARGIN, "{}", spin.current());
    }

    #[test]
    fn sleeps_shorter_than_a_wake_up_is_worth_are_spun() {
        assert_eq!(sleep_before(53_000, 20_000), Some(33_000));
        assert_eq!(
            sleep_before(20_000 + SHORTEST_SLEEP, 20_000),
            Some(SHORTEST_SLEEP)
        );
        assert_eq!(sleep_before(20_000 + SHORTEST_SLEEP - 1, 20_000), None);
        // 1 Gbit/s: 12 µs apart, a 3 µs spin after slack.
        assert_eq!(sleep_before(12_000, 3_000), None);
        assert_eq!(sleep_before(5_000, 20_000), None);
    }

    /// Departures 12 µs apart (1 Gbit/s of full-sized packets) are closer
    /// than a 30 µs tick; 120 µs apart (100 Mbit/s) are not, nor are none
    /// yet; and packets due at one instant (a burst through a delay) do
    /// not make a sparse thread dense.
    #[test]
    fn departures_closer_than_the_tick_are_dense() {
        let tick = 30_000;
        let spaced = |spacing: &mut Spacing, gap: Nanos, from: Nanos| {
            for i in 1..200 {
                spacing.due(from + i * gap);
            }
        };
        let mut dense = Spacing::between_instants();
        assert!(!dense.closer_than(tick));
        spaced(&mut dense, 12_000, 0);
        assert!(dense.closer_than(tick));
        let mut sparse = Spacing::between_instants();
        spaced(&mut sparse, 120_000, 0);
        assert!(!sparse.closer_than(tick));
        let end = 200 * 120_000;
        for _ in 0..100 {
            sparse.due(end);
        }
        assert!(!sparse.closer_than(tick), "a burst due at once is no rate");
        // Bursts of 44 due together, 500 µs apart: sparse.
        let mut bursts = Spacing::between_instants();
        for burst in 1..100 {
            for _ in 0..44 {
                bursts.due(burst * 500_000);
            }
        }
        assert!(!bursts.closer_than(tick));
        // A lane counts ties: deliveries into several hosts interleave.
        // Deliveries 40 µs apart, each followed by one into another host
        // due earlier: a pump would call that sparse, a lane dense.
        let mut lane = Spacing::between_deliveries(20_000_000);
        let mut pump = Spacing::between_instants();
        assert!(!lane.closer_than(tick));
        for i in 1..400 {
            for spacing in [&mut lane, &mut pump] {
                spacing.due(i * 40_000);
                spacing.due(i * 40_000 - 20_000);
            }
        }
        assert!(lane.closer_than(tick), "ties count as no gap");
        assert!(!pump.closer_than(tick));
    }

    /// Dense departures are ticked for, a tick after them; sparse ones are
    /// not. A thread input does not wake ticks only for a departure
    /// within a tick; one input wakes ticks for any.
    #[test]
    fn the_tick_waits_a_tick_after_dense_departures() {
        let (mut dense, sparse) = (Spacing::between_instants(), Spacing::between_instants());
        for i in 1..200 {
            dense.due(i * 12_000);
        }
        let now = 1_000_000;
        let pump = Tick {
            every: 20_000,
            woken_by_input: false,
        };
        assert_eq!(pump.until(&dense, now + 12_000, now), Some(now + 32_000));
        assert_eq!(pump.until(&dense, now + 20_000, now), Some(now + 40_000));
        assert_eq!(pump.until(&dense, now + 20_001, now), None, "too far");
        assert_eq!(pump.until(&sparse, now + 12_000, now), None, "sparse");
        let lane = Tick {
            every: 30_000,
            woken_by_input: true,
        };
        assert_eq!(lane.until(&dense, now + 500_000, now), Some(now + 530_000));
        assert_eq!(lane.until(&sparse, now + 12_000, now), None, "sparse");
    }

    #[test]
    fn a_fixed_spin_does_not_move() {
        let mut spin = Spin::new(Some(123_000), &[1_000]);
        spin.observe(0, 1_000_000);
        assert_eq!(spin.current(), 123_000);
    }
}
