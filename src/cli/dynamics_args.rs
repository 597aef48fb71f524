//! The options that make a shell's path change over time — jitter and delay
//! schedules on `delay`, rate schedules, outages and aggregation on `link`,
//! bursty loss, duplication and corruption on `loss` — parsed into the
//! link crate's descriptions. Each shell's parser flattens its group in and
//! calls one function here, so the shells' own parsers stay as they were.

use super::UsageError;
use clap::Args;
use emu_core::time::{format_duration, parse_duration, Nanos};
use emu_core::Rate;
use link::{DelayDynamics, Distribution, JitterSpec, Outages, Pattern, Schedule, Server};
use std::path::{Path, PathBuf};

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
    /// Seed of --onoff-exp, duplication and corruption [default: from the clock, recorded in the log].
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `loss`'s options beyond independent loss.
#[derive(Args, Default)]
pub struct LossDynamicsArgs {
    /// Gilbert-Elliott loss, netem's `loss gemodel p [r [1-h [1-k]]]`:
    /// P good→bad, R bad→good [1-P], loss in bad [100%], loss in good [0%].
    #[arg(long, num_args = 1..=4, value_name = "P R 1-H 1-K", group = "markov", allow_hyphen_values = true)]
    pub gemodel: Option<Vec<String>>,
    /// netem's 4-state loss, `loss state p13 [p31 [p32 [p23 [p14]]]]`
    /// (defaults: p31 = 1-p13, p32 = 0, p23 = 100%, p14 = 0).
    #[arg(long, num_args = 1..=5, value_name = "P13 P31 P32 P23 P14", group = "markov", allow_hyphen_values = true)]
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
        let mut read = |option: &str, text: &Option<String>| -> Result<f64, UsageError> {
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

fn err(shell: &str, option: &str, problem: impl std::fmt::Display) -> UsageError {
    UsageError(format!("{shell}: --{option}: {problem}"))
}

/// A probability written as tc users write it: `1%` or `0.01`.
pub fn probability(shell: &str, option: &str, text: &str) -> Result<f64, UsageError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        Ok(_) => Err(err(
            shell,
            option,
            format!("'{text}' is not a probability: it is outside 0 to 100% (write 1% or 0.01)"),
        )),
        Err(_) => Err(err(
            shell,
            option,
            format!("'{text}' is not a probability (write 1% or 0.01)"),
        )),
    }
}

fn duration(shell: &str, option: &str, text: &str) -> Result<Nanos, UsageError> {
    if text.trim_start().starts_with('-') {
        return Err(err(
            shell,
            option,
            format!("'{text}' is negative; a time is 0 or more (e.g. 5ms)"),
        ));
    }
    parse_duration(text).map_err(|e| err(shell, option, e))
}

fn positive_duration(shell: &str, option: &str, text: &str) -> Result<Nanos, UsageError> {
    match duration(shell, option, text)? {
        0 => Err(err(shell, option, format!("'{text}' must be above 0"))),
        d => Ok(d),
    }
}

/// Splits `A:B:C` into exactly `min..=max` fields.
fn fields<'a>(
    shell: &str,
    option: &str,
    text: &'a str,
    min: usize,
    max: usize,
    form: &str,
) -> Result<Vec<&'a str>, UsageError> {
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    if parts.len() < min || parts.len() > max {
        return Err(err(shell, option, format!("'{text}' is not {form}")));
    }
    Ok(parts)
}

/// Reads a file of "TIME VALUE" lines (`#` comments) into schedule points.
fn schedule_file(
    shell: &str,
    option: &str,
    path: &Path,
    value: impl Fn(&str) -> Result<u64, String>,
) -> Result<Vec<(Nanos, u64)>, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        err(
            shell,
            option,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let mut points = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |problem: String| {
            err(
                shell,
                option,
                format!("{} line {}: {problem}", path.display(), n + 1),
            )
        };
        let mut words = line.split_whitespace();
        let (Some(time), Some(val), None) = (words.next(), words.next(), words.next()) else {
            return Err(at(format!("'{line}' is not 'TIME VALUE'")));
        };
        let time = parse_duration(time).map_err(|e| at(e.to_string()))?;
        let val = value(val).map_err(at)?;
        link::schedule::check_next_time(&points, time).map_err(at)?;
        points.push((time, val));
    }
    if points.is_empty() {
        return Err(err(
            shell,
            option,
            format!("{} holds no 'TIME VALUE' lines", path.display()),
        ));
    }
    Ok(points)
}

fn delay_value(text: &str) -> Result<u64, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("'{text}' is a negative delay"));
    }
    parse_duration(text).map_err(|e| e.to_string())
}

fn rate_value(text: &str) -> Result<u64, String> {
    Rate::parse(text)
        .map(|r| r.bits_per_sec())
        .map_err(|e| e.to_string())
}

fn time_value(text: &str) -> Result<Nanos, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("'{text}' is a negative time"));
    }
    parse_duration(text).map_err(|e| e.to_string())
}

impl DelayDynamicsArgs {
    /// Whether TIME may be left out (a schedule gives the delay).
    pub fn has_schedule(&self) -> bool {
        self.square.is_some()
            || self.steps.is_some()
            || self.delay_trace.is_some()
            || self.walk.is_some()
    }

    /// The dynamics, and words for the shell's description.
    pub fn parse(
        &self,
        base: Option<Nanos>,
        seed: u64,
    ) -> Result<(DelayDynamics, Vec<String>), UsageError> {
        let s = "delay";
        let mut words = Vec::new();
        let repeat = !self.once;
        let schedule = if let Some(text) = &self.square {
            let parts = fields(
                s,
                "square",
                text,
                3,
                4,
                "LOW:HIGH:PERIOD[:DUTY] (e.g. 40ms:190ms:10s)",
            )?;
            let low = duration(s, "square", parts[0])?;
            let high = duration(s, "square", parts[1])?;
            let period = positive_duration(s, "square", parts[2])?;
            let duty = match parts.get(3) {
                Some(d) => probability(s, "square", d)?,
                None => 0.5,
            };
            words.push(format!("square {text}"));
            Some(Schedule::square(low, high, period, duty))
        } else if let Some(text) = &self.steps {
            let points = link::schedule::parse_steps(text, time_value, delay_value)
                .map_err(|e| err(s, "steps", e))?;
            words.push(format!("steps {text}"));
            Some(Schedule::steps(points, repeat, false))
        } else if let Some(path) = &self.delay_trace {
            let points = schedule_file(s, "delay-trace", path, delay_value)?;
            words.push(format!(
                "delay-trace {}",
                path.file_name().map_or_else(
                    || path.display().to_string(),
                    |f| f.to_string_lossy().into_owned()
                )
            ));
            Some(Schedule::steps(points, repeat, self.interpolate))
        } else if let Some(text) = &self.walk {
            let parts = fields(
                s,
                "walk",
                text,
                4,
                4,
                "MIN:MAX:STEP:EVERY (e.g. 20ms:100ms:1ms:10ms)",
            )?;
            let min = duration(s, "walk", parts[0])?;
            let max = duration(s, "walk", parts[1])?;
            let step = positive_duration(s, "walk", parts[2])?;
            let every = positive_duration(s, "walk", parts[3])?;
            if min > max {
                return Err(err(
                    s,
                    "walk",
                    format!(
                        "MIN {} is above MAX {}",
                        format_duration(min),
                        format_duration(max)
                    ),
                ));
            }
            words.push(format!("walk {text}"));
            Some(Schedule::Walk {
                first: base.unwrap_or(min).clamp(min, max),
                min,
                max,
                step,
                every,
                seed,
            })
        } else {
            None
        };
        if self.once && self.steps.is_none() && self.delay_trace.is_none() {
            return Err(UsageError(
                "delay: --once needs --steps or --delay-trace".into(),
            ));
        }
        let jitter = match &self.jitter {
            None => None,
            Some(text) => {
                let sigma = duration(s, "jitter", text)?;
                let correlation = match &self.correlation {
                    Some(c) => probability(s, "correlation", c)?,
                    None => 0.0,
                };
                let distribution = match &self.distribution {
                    Some(name) => {
                        Distribution::parse(name).map_err(|e| err(s, "distribution", e))?
                    }
                    None => Distribution::Normal,
                };
                words.push(format!(
                    "jitter {} {}{}",
                    format_duration(sigma),
                    distribution.name(),
                    if correlation > 0.0 {
                        format!(" {}%", correlation * 100.0)
                    } else {
                        String::new()
                    }
                ));
                Some(JitterSpec {
                    sigma,
                    correlation,
                    distribution,
                })
            }
        };
        if self.reorder {
            words.push("reorder".into());
        }
        Ok((
            DelayDynamics {
                schedule,
                jitter,
                reorder: self.reorder,
                aggregate: None,
            },
            words,
        ))
    }
}

/// What `link`'s dynamics options give each direction.
pub struct LinkDynamics {
    /// A rate schedule replacing RATE in both directions.
    pub server: Option<Server>,
    pub outages: Option<Outages>,
    pub aggregate: Option<Nanos>,
    pub words: Vec<String>,
}

impl LinkDynamicsArgs {
    pub fn parse(&self, once: bool, seed: u64) -> Result<LinkDynamics, UsageError> {
        let s = "link";
        let mut words = Vec::new();
        let server = if let Some(text) = &self.rate_steps {
            let points = link::schedule::parse_steps(text, time_value, rate_value)
                .map_err(|e| err(s, "rate-steps", e))?;
            words.push(format!("rate-steps {text}"));
            Some(Server::Schedule(Schedule::steps(points, !once, false)))
        } else if let Some(path) = &self.rate_trace {
            let points = schedule_file(s, "rate-trace", path, rate_value)?;
            words.push(format!("rate-trace {}", path.display()));
            Some(Server::Schedule(Schedule::steps(points, !once, false)))
        } else {
            None
        };
        let pair = |option: &str, text: &str| -> Result<(Nanos, Nanos), UsageError> {
            let parts = fields(s, option, text, 2, 2, "two times A:B (e.g. 10s:2s)")?;
            Ok((
                duration(s, option, parts[0])?,
                duration(s, option, parts[1])?,
            ))
        };
        let outages = if let Some(text) = &self.outage {
            let mut items = Vec::new();
            for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                items.push(pair("outage", item)?);
            }
            words.push(format!("outage {text}"));
            Some(Outages::list(items).map_err(|e| err(s, "outage", e))?)
        } else if let Some(text) = &self.onoff {
            let (up, down) = pair("onoff", text)?;
            if up == 0 || down == 0 {
                return Err(err(s, "onoff", "both times must be above 0"));
            }
            words.push(format!("onoff {text}"));
            Some(Outages::Periodic { up, down })
        } else if let Some(text) = &self.onoff_exp {
            let (mean_up, mean_down) = pair("onoff-exp", text)?;
            if mean_up == 0 || mean_down == 0 {
                return Err(err(s, "onoff-exp", "both means must be above 0"));
            }
            words.push(format!("onoff-exp {text}"));
            Some(Outages::Exponential {
                mean_up,
                mean_down,
                seed,
            })
        } else {
            None
        };
        let aggregate = match &self.aggregate {
            Some(text) => {
                words.push(format!("aggregate {text}"));
                Some(positive_duration(s, "aggregate", text)?)
            }
            None => None,
        };
        Ok(LinkDynamics {
            server,
            outages,
            aggregate,
            words,
        })
    }
}

impl LossDynamicsArgs {
    /// The loss pattern given `mean` (PROB, the mean loss rate), with words
    /// for the description, and the duplicate and corrupt probabilities.
    pub fn parse(&self, mean: Option<f64>) -> Result<(Option<Pattern>, f64, f64), UsageError> {
        let s = "loss";
        let p = |option: &str, values: &[String], i: usize| -> Result<Option<f64>, UsageError> {
            values.get(i).map(|v| probability(s, option, v)).transpose()
        };
        let pattern = if let Some(values) = &self.gemodel {
            let gp = p("gemodel", values, 0)?.unwrap_or(0.0);
            Some(Pattern::GilbertElliott {
                p: gp,
                r: p("gemodel", values, 1)?.unwrap_or(1.0 - gp),
                bad_loss: p("gemodel", values, 2)?.unwrap_or(1.0),
                good_loss: p("gemodel", values, 3)?.unwrap_or(0.0),
            })
        } else if let Some(values) = &self.state {
            let p13 = p("state", values, 0)?.unwrap_or(0.0);
            let p31 = p("state", values, 1)?.unwrap_or(1.0 - p13);
            let p32 = p("state", values, 2)?.unwrap_or(0.0);
            let p23 = p("state", values, 3)?.unwrap_or(1.0);
            let p14 = p("state", values, 4)?.unwrap_or(0.0);
            if p13 + p14 > 1.0 || p31 + p32 > 1.0 {
                return Err(err(
                    s,
                    "state",
                    "p13 + p14 and p31 + p32 must each be at most 100% (they leave one state)",
                ));
            }
            Some(Pattern::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            })
        } else if let Some(text) = &self.burst {
            let length: f64 = text
                .trim()
                .parse()
                .ok()
                .filter(|l: &f64| *l >= 1.0 && l.is_finite())
                .ok_or_else(|| {
                    err(
                        s,
                        "burst",
                        format!("'{text}' is not a mean burst length of 1 packet or more"),
                    )
                })?;
            let Some(loss) = mean else {
                return Err(err(
                    s,
                    "burst",
                    "needs PROB, the mean loss rate (e.g. emu loss 1% --burst 4)",
                ));
            };
            if loss >= 1.0 {
                return Err(err(s, "burst", "PROB must be below 100% for bursts to end"));
            }
            // Bad state share p / (p + r) = loss, with r = 1 / length.
            let r = 1.0 / length;
            let gp = loss * r / (1.0 - loss);
            if gp > 1.0 {
                return Err(err(s, "burst", format!("a mean loss of {} in bursts of {length} cannot be reached: use shorter bursts", loss)));
            }
            Some(Pattern::GilbertElliott {
                p: gp,
                r,
                bad_loss: 1.0,
                good_loss: 0.0,
            })
        } else {
            None
        };
        let duplicate = match &self.duplicate {
            Some(t) => probability(s, "duplicate", t)?,
            None => 0.0,
        };
        let corrupt = match &self.corrupt {
            Some(t) => probability(s, "corrupt", t)?,
            None => 0.0,
        };
        Ok((pattern, duplicate, corrupt))
    }

    pub fn is_markov(&self) -> bool {
        self.gemodel.is_some() || self.state.is_some()
    }

    /// Words for the description.
    pub fn words(&self) -> Vec<String> {
        let mut words = Vec::new();
        if let Some(v) = &self.gemodel {
            words.push(format!("gemodel {}", v.join(" ")));
        }
        if let Some(v) = &self.state {
            words.push(format!("state {}", v.join(" ")));
        }
        if let Some(v) = &self.burst {
            words.push(format!("burst {v}"));
        }
        if let Some(v) = &self.duplicate {
            words.push(format!("duplicate {v}"));
        }
        if let Some(v) = &self.corrupt {
            words.push(format!("corrupt {v}"));
        }
        words
    }
}
