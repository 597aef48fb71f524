//! The options that make a shell's path change over time — jitter and delay
//! schedules on `delay`, rate schedules, outages and aggregation on `link`,
//! bursty loss, duplication and corruption on `loss` — handed as texts to
//! `link::options`, which reads them for the shells and the experiment
//! files alike. Each shell's parser flattens its group in and calls one
//! function here, so the shells' own parsers stay as they were.

use super::output::UsageError;
use clap::Args;
use emu_core::time::Nanos;
use link::options::{
    DelayOptions, LinkDynamics, LinkOptions, LossDynamics, LossOptions, OptionError,
};
use link::DelayDynamics;
use std::path::PathBuf;

/// `delay`'s options beyond a constant delay.
#[derive(Args, Default)]
pub struct DelayDynamicsArgs {
    /// Random variation of the delay: netem's jitter (the deviation for
    /// normal and table distributions, the half-width for uniform).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub jitter: Option<String>,
    /// Lag-1 correlation of successive packets' jitter, e.g. 25% or 0.25.
    #[arg(
        long,
        value_name = "PERCENT",
        requires = "jitter",
        allow_hyphen_values = true
    )]
    pub correlation: Option<String>,
    /// Shape of the jitter: uniform, normal, pareto, paretonormal or a
    /// distribution file in netem's format [default: normal].
    #[arg(long, value_name = "NAME|FILE", requires = "jitter")]
    pub distribution: Option<String>,
    /// Let packets overtake each other when their delays cross (netem's
    /// behaviour); by default a packet never leaves before the one ahead.
    #[arg(long)]
    pub reorder: bool,
    /// A square wave: LOW for (1 - DUTY) of each PERIOD, then HIGH [DUTY: 50%].
    #[arg(long, value_name = "LOW:HIGH:PERIOD[:DUTY]", group = "delay_schedule")]
    pub square: Option<String>,
    /// Delay steps at times from the start, e.g. "0s=40ms,10s=190ms,20s=40ms";
    /// they repeat with the last time as the period unless --once.
    #[arg(long, value_name = "TIME=DELAY,...", group = "delay_schedule")]
    pub steps: Option<String>,
    /// A bounded random walk: every EVERY the delay moves STEP up or down
    /// with equal chance, within [MIN, MAX]; it starts at TIME (or MIN).
    #[arg(long, value_name = "MIN:MAX:STEP:EVERY", group = "delay_schedule")]
    pub walk: Option<String>,
    /// A file of "TIME DELAY" lines (e.g. "10.5s 190ms"), first time 0,
    /// increasing; repeating with the last time as period unless --once.
    #[arg(long, value_name = "FILE", group = "delay_schedule")]
    pub delay_trace: Option<PathBuf>,
    /// Move the delay linearly between a --delay-trace's points instead of
    /// holding each until the next.
    #[arg(long, requires = "delay_trace")]
    pub interpolate: bool,
    /// Play --steps or --delay-trace once and hold the last delay.
    #[arg(long)]
    pub once: bool,
    /// Seed of jitter, the random walk, duplication and corruption [default: from the clock, recorded in the log].
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `link`'s options beyond a constant rate or a delivery trace.
#[derive(Args, Default)]
pub struct LinkDynamicsArgs {
    /// Rate steps at times from the start, e.g. "0s=100mbit,10s=20mbit,20s=100mbit",
    /// in both directions; they repeat with the last time as period unless --once.
    #[arg(long, value_name = "TIME=RATE,...", group = "rate_schedule")]
    pub rate_steps: Option<String>,
    /// A file of "TIME RATE" lines (e.g. "10s 20mbit"), first time 0,
    /// increasing; repeating with the last time as period unless --once.
    #[arg(long, value_name = "FILE", group = "rate_schedule")]
    pub rate_trace: Option<PathBuf>,
    /// The link is down from START for LENGTH (more: comma-separated):
    /// nothing is sent, arrivals queue or are dropped by the queue.
    #[arg(long, value_name = "START:LENGTH,...", group = "outages")]
    pub outage: Option<String>,
    /// Up for UP, then down for DOWN, repeating (mm-intermittent's pattern,
    /// but packets wait in the queue instead of being dropped).
    #[arg(long, value_name = "UP:DOWN", group = "outages")]
    pub onoff: Option<String>,
    /// Up and down for exponentially distributed times of these means
    /// (mm-onoff's pattern, on the link itself).
    #[arg(long, value_name = "MEAN_UP:MEAN_DOWN", group = "outages")]
    pub onoff_exp: Option<String>,
    /// Release what the link has served in bursts, every INTERVAL (as Wi-Fi
    /// and cellular MACs aggregate frames).
    #[arg(long, value_name = "INTERVAL")]
    pub aggregate: Option<String>,
    /// netem's slot model: served packets leave only in transmission
    /// slots, "MIN [MAX] [packets N] [bytes B]" or "distribution D DELAY
    /// JITTER [packets N] [bytes B]" (e.g. "800us 10ms packets 42").
    #[arg(long, value_name = "WORDS", conflicts_with = "aggregate")]
    pub slot: Option<String>,
    /// The queue changes at set times, as `tc qdisc replace` would change
    /// it: "0s=dualpi2,20s=pie noecn,40s=dualpi2" (first at 0s; the old
    /// queue's packets are dropped at each change).
    #[arg(long, value_name = "TIME=QUEUE,...")]
    pub queue_steps: Option<String>,
    /// Enforce the rate as Linux's htb does on a fast device, not as a
    /// serializing link: a packet leaves as soon as the token bucket is
    /// out of debt, with no serialization time, so a burst of BYTES may
    /// pass at once after an idle moment. "htb" (tc's default burst of
    /// 1600 bytes) or "htb burst BYTES".
    #[arg(long, value_name = "htb [burst BYTES]")]
    pub shaper: Option<String>,
    /// Seed of --onoff-exp, duplication and corruption [default: from the clock, recorded in the log].
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `loss`'s options beyond independent loss.
#[derive(Args, Default)]
pub struct LossDynamicsArgs {
    /// Gilbert-Elliott loss, netem's `loss gemodel p [r [1-h [1-k]]]`:
    /// P good→bad, R bad→good [1-P], loss in bad [100%], loss in good [0%].
    // No hyphen values: an option of several values would take the `--`
    // that ends the shell as one. A value that starts with a hyphen is
    // refused as an unknown option instead of as a probability.
    #[arg(long, num_args = 1..=4, value_name = "P R 1-H 1-K", group = "markov")]
    pub gemodel: Option<Vec<String>>,
    /// netem's 4-state loss, `loss state p13 [p31 [p32 [p23 [p14]]]]`
    /// (defaults: p31 = 1-p13, p32 = 0, p23 = 100%, p14 = 0).
    #[arg(long, num_args = 1..=5, value_name = "P13 P31 P32 P23 P14", group = "markov")]
    pub state: Option<Vec<String>>,
    /// Losses come in bursts of this mean length (packets); PROB is the mean
    /// loss rate. Short for the Gilbert model with R = 1/MEAN.
    #[arg(long, value_name = "MEAN", group = "markov")]
    pub burst: Option<String>,
    /// Probability that a packet is sent twice, e.g. 1% or 0.01.
    #[arg(long, value_name = "PROB", allow_hyphen_values = true)]
    pub duplicate: Option<String>,
    /// Probability that one bit past the IP header is flipped, e.g. 0.1%.
    #[arg(long, value_name = "PROB", allow_hyphen_values = true)]
    pub corrupt: Option<String>,
}

/// An option's error as the shell's message: `delay: --jitter: ...`.
fn usage(shell: &str) -> impl Fn(OptionError) -> UsageError + '_ {
    move |e| UsageError(format!("{shell}: {e}"))
}

/// Which directions a shell's path dynamics apply to (`--dynamics-on`):
/// Mahimahi's mm-loss and mm-onoff name one direction, and so can every
/// emu shell. The direction left out keeps the shell's constant part (its
/// delay, independent loss at PROB, its rate or trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DynamicsOn {
    #[default]
    Both,
    Uplink,
    Downlink,
}

impl DynamicsOn {
    /// Whether direction `d` (0 uplink, 1 downlink) gets the dynamics.
    pub fn applies(self, d: usize) -> bool {
        match self {
            DynamicsOn::Both => true,
            DynamicsOn::Uplink => d == 0,
            DynamicsOn::Downlink => d == 1,
        }
    }

    /// The word the shell's description gets (none for both).
    pub fn word(self) -> Option<&'static str> {
        match self {
            DynamicsOn::Both => None,
            DynamicsOn::Uplink => Some("on uplink"),
            DynamicsOn::Downlink => Some("on downlink"),
        }
    }
}

/// Duplication and corruption, on `delay` and `link` (on `loss` they sit
/// in its own group): netem's `duplicate` and `corrupt`, on any shell.
#[derive(Args, Default)]
pub struct MangleArgs {
    /// Probability that a packet is sent twice, e.g. 1% or 0.01.
    #[arg(long, value_name = "PROB", allow_hyphen_values = true)]
    pub duplicate: Option<String>,
    /// Probability that one bit past the IP header is flipped, e.g. 0.1%.
    #[arg(long, value_name = "PROB", allow_hyphen_values = true)]
    pub corrupt: Option<String>,
}

impl MangleArgs {
    /// The duplicate and corrupt probabilities, with words for the
    /// shell's description.
    pub fn parse(&self, shell: &str) -> Result<(f64, f64, Vec<String>), UsageError> {
        let mut words = Vec::new();
        let mut read = |option: &'static str, text: &Option<String>| -> Result<f64, UsageError> {
            match text {
                Some(t) => {
                    words.push(format!("{option} {t}"));
                    probability(shell, option, t)
                }
                None => Ok(0.0),
            }
        };
        let duplicate = read("duplicate", &self.duplicate)?;
        let corrupt = read("corrupt", &self.corrupt)?;
        Ok((duplicate, corrupt, words))
    }

    /// Whether the seed is drawn from: duplication or corruption is on.
    pub fn is_random(&self) -> bool {
        self.duplicate.is_some() || self.corrupt.is_some()
    }
}

/// A probability written as tc users write it: `1%` or `0.01`.
pub fn probability(shell: &str, option: &'static str, text: &str) -> Result<f64, UsageError> {
    link::options::probability(option, text).map_err(usage(shell))
}

impl DelayDynamicsArgs {
    fn options(&self) -> DelayOptions {
        DelayOptions {
            jitter: self.jitter.clone(),
            correlation: self.correlation.clone(),
            distribution: self.distribution.clone(),
            reorder: self.reorder,
            square: self.square.clone(),
            steps: self.steps.clone(),
            walk: self.walk.clone(),
            delay_trace: self.delay_trace.clone(),
            interpolate: self.interpolate,
            once: self.once,
        }
    }

    /// Whether TIME may be left out (a schedule gives the delay).
    pub fn has_schedule(&self) -> bool {
        self.options().has_schedule()
    }

    /// Whether jitter or a walk draws from the seed.
    pub fn is_random(&self) -> bool {
        self.options().is_random()
    }

    /// The dynamics, and words for the shell's description.
    pub fn parse(&self, base: Option<Nanos>) -> Result<(DelayDynamics, Vec<String>), UsageError> {
        if self.once && self.steps.is_none() && self.delay_trace.is_none() {
            return Err(UsageError(
                "delay: --once needs --steps or --delay-trace".into(),
            ));
        }
        as_invoker("delay", || {
            self.options().parse(base).map_err(usage("delay"))
        })
    }
}

impl LinkDynamicsArgs {
    fn options(&self) -> LinkOptions {
        LinkOptions {
            rate_steps: self.rate_steps.clone(),
            rate_trace: self.rate_trace.clone(),
            outage: self.outage.clone(),
            onoff: self.onoff.clone(),
            onoff_exp: self.onoff_exp.clone(),
            aggregate: self.aggregate.clone(),
            slot: self.slot.clone(),
            queue_steps: self.queue_steps.clone(),
            shaper: self.shaper.clone(),
        }
    }

    /// Whether random outages draw from the seed.
    pub fn is_random(&self) -> bool {
        self.options().is_random()
    }

    pub fn parse(&self, once: bool) -> Result<LinkDynamics, UsageError> {
        as_invoker("link", || self.options().parse(once).map_err(usage("link")))
    }
}

impl LossDynamicsArgs {
    fn options(&self) -> LossOptions {
        LossOptions {
            gemodel: self.gemodel.clone(),
            state: self.state.clone(),
            burst: self.burst.clone(),
            duplicate: self.duplicate.clone(),
            corrupt: self.corrupt.clone(),
        }
    }

    /// The loss pattern given `mean` (PROB, the mean loss rate), and the
    /// duplicate and corrupt probabilities.
    pub fn parse(&self, mean: Option<f64>) -> Result<LossDynamics, UsageError> {
        as_invoker("loss", || self.options().parse(mean).map_err(usage("loss")))
    }

    pub fn is_markov(&self) -> bool {
        self.options().is_markov()
    }

    /// Words for the description.
    pub fn words(&self) -> Vec<String> {
        self.options().words()
    }
}

/// Parses with the file access of the user behind sudo or a setuid emu:
/// options that name a file (`--delay-trace`, `--rate-trace`,
/// `--distribution`) must never read a file the user may not, and an
/// error quoting its first line would hand it over.
fn as_invoker<T>(
    shell: &str,
    parse: impl FnOnce() -> Result<T, UsageError>,
) -> Result<T, UsageError> {
    shells::privilege::as_invoker(parse).map_err(|e| {
        UsageError(format!(
            "{shell}: reading its files as the invoking user: {e}"
        ))
    })?
}
