//! The path dynamics as users write them — `--jitter 5ms`, `--square
//! 40ms:190ms:10s`, `--rate-steps 0s=100mbit,10s=20mbit`, `--gemodel 1%
//! 30%` — read into this crate's descriptions. The shells' flags and the
//! experiment files' keys are two spellings of the same texts, so both
//! front ends hand their texts here and only format the errors their own
//! way (`delay: --jitter: …` or `x.toml: key hosts.a.up.jitter: …`).
//!
//! Nothing here draws a random number: a walk or exponential outages take
//! the seed of the link they end up on (`Dynamics::seed`), resolved once
//! where the link is built.

use crate::{
    DelayDynamics, Distribution, JitterSpec, Outages, Pattern, QueueStep, Schedule, Server,
    ShaperSpec, SlotSpec,
};
use emu_core::time::{format_duration, parse_duration, Nanos};
use emu_core::Rate;
use std::fmt;
use std::path::{Path, PathBuf};

/// What is wrong with which option (named as its flag, without dashes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub option: &'static str,
    pub problem: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{}: {}", self.option, self.problem)
    }
}

fn err(option: &'static str, problem: impl fmt::Display) -> OptionError {
    OptionError {
        option,
        problem: problem.to_string(),
    }
}

/// The delay's dynamics (the `delay` shell's options beyond TIME).
#[derive(Debug, Clone, Default)]
pub struct DelayOptions {
    pub jitter: Option<String>,
    pub correlation: Option<String>,
    pub distribution: Option<String>,
    pub reorder: bool,
    pub square: Option<String>,
    pub steps: Option<String>,
    pub walk: Option<String>,
    pub delay_trace: Option<PathBuf>,
    pub interpolate: bool,
    /// Play steps or a delay trace once and hold the last value.
    pub once: bool,
}

/// The server's dynamics (the `link` shell's options beyond RATE).
#[derive(Debug, Clone, Default)]
pub struct LinkOptions {
    pub rate_steps: Option<String>,
    pub rate_trace: Option<PathBuf>,
    pub outage: Option<String>,
    pub onoff: Option<String>,
    pub onoff_exp: Option<String>,
    pub aggregate: Option<String>,
    /// netem's slot words, e.g. `800us 10ms packets 42`.
    pub slot: Option<String>,
    /// `TIME=QUEUE,...` from 0s: the queue, replaced at each time.
    pub queue_steps: Option<String>,
    /// `htb [burst BYTES]`: the rate enforced as htb does, not serialized.
    pub shaper: Option<String>,
}

/// The loss model and mangling (the `loss` shell's options beyond PROB).
#[derive(Debug, Clone, Default)]
pub struct LossOptions {
    pub gemodel: Option<Vec<String>>,
    pub state: Option<Vec<String>>,
    pub burst: Option<String>,
    pub duplicate: Option<String>,
    pub corrupt: Option<String>,
}

/// A probability written as tc users write it: `1%` or `0.01`.
pub fn probability(option: &'static str, text: &str) -> Result<f64, OptionError> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match value {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        Ok(_) => Err(err(
            option,
            format!("'{text}' is not a probability: it is outside 0 to 100% (write 1% or 0.01)"),
        )),
        Err(_) => Err(err(
            option,
            format!("'{text}' is not a probability (write 1% or 0.01)"),
        )),
    }
}

/// At most one of `given` (option names, and whether each was given):
/// the first two given are named in the error, reported on the first.
fn at_most_one(given: &[(&'static str, bool)], what: &str) -> Result<(), OptionError> {
    let mut chosen = given.iter().filter(|g| g.1).map(|g| g.0);
    match (chosen.next(), chosen.next()) {
        (Some(first), Some(second)) => Err(err(
            first,
            format!("cannot be used with --{second}: one {what} at a time"),
        )),
        _ => Ok(()),
    }
}

fn duration(option: &'static str, text: &str) -> Result<Nanos, OptionError> {
    if text.trim_start().starts_with('-') {
        return Err(err(
            option,
            format!("'{text}' is negative; a time is 0 or more (e.g. 5ms)"),
        ));
    }
    parse_duration(text).map_err(|e| err(option, e))
}

fn positive_duration(option: &'static str, text: &str) -> Result<Nanos, OptionError> {
    match duration(option, text)? {
        0 => Err(err(option, format!("'{text}' must be above 0"))),
        d => Ok(d),
    }
}

/// Splits `A:B:C` into `min..=max` fields.
fn fields<'a>(
    option: &'static str,
    text: &'a str,
    min: usize,
    max: usize,
    form: &str,
) -> Result<Vec<&'a str>, OptionError> {
    let parts: Vec<&str> = text.split(':').map(str::trim).collect();
    if parts.len() < min || parts.len() > max {
        return Err(err(option, format!("'{text}' is not {form}")));
    }
    Ok(parts)
}

/// Reads a file of "TIME VALUE" lines (`#` comments) into schedule points.
fn schedule_file(
    option: &'static str,
    path: &Path,
    value: impl Fn(&str) -> Result<u64, String>,
) -> Result<Vec<(Nanos, u64)>, OptionError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(option, format!("cannot read {}: {e}", path.display())))?;
    let mut points = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |problem: String| {
            err(
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
        crate::schedule::check_next_time(&points, time).map_err(at)?;
        points.push((time, val));
    }
    if points.is_empty() {
        return Err(err(
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

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}

impl DelayOptions {
    /// Whether a schedule gives the delay (so a constant one may be left out).
    pub fn has_schedule(&self) -> bool {
        self.square.is_some()
            || self.steps.is_some()
            || self.delay_trace.is_some()
            || self.walk.is_some()
    }

    /// Whether the dynamics draw random numbers (and so need a seed).
    pub fn is_random(&self) -> bool {
        self.jitter.is_some() || self.walk.is_some()
    }

    /// The dynamics, and words for a description. `base` is the constant
    /// delay, where a walk starts if given.
    // Long: each option's checks and reading, in the order their errors are reported; a check
    // stays beside the option it guards.
    pub fn parse(&self, base: Option<Nanos>) -> Result<(DelayDynamics, Vec<String>), OptionError> {
        at_most_one(
            &[
                ("square", self.square.is_some()),
                ("steps", self.steps.is_some()),
                ("walk", self.walk.is_some()),
                ("delay-trace", self.delay_trace.is_some()),
            ],
            "delay schedule",
        )?;
        if self.correlation.is_some() && self.jitter.is_none() {
            return Err(err("correlation", "needs --jitter"));
        }
        if self.distribution.is_some() && self.jitter.is_none() {
            return Err(err("distribution", "needs --jitter"));
        }
        if self.interpolate && self.delay_trace.is_none() {
            return Err(err("interpolate", "needs --delay-trace"));
        }
        let mut words = Vec::new();
        let repeat = !self.once;
        let schedule = if let Some(text) = &self.square {
            let o = "square";
            let parts = fields(
                o,
                text,
                3,
                4,
                "LOW:HIGH:PERIOD[:DUTY] (e.g. 40ms:190ms:10s)",
            )?;
            let low = duration(o, parts[0])?;
            let high = duration(o, parts[1])?;
            let period = positive_duration(o, parts[2])?;
            let duty = match parts.get(3) {
                Some(d) => probability(o, d)?,
                None => 0.5,
            };
            words.push(format!("square {text}"));
            Some(Schedule::square(low, high, period, duty))
        } else if let Some(text) = &self.steps {
            let points = crate::schedule::parse_steps(text, time_value, delay_value)
                .map_err(|e| err("steps", e))?;
            words.push(format!("steps {text}"));
            Some(Schedule::steps(points, repeat, false))
        } else if let Some(path) = &self.delay_trace {
            let points = schedule_file("delay-trace", path, delay_value)?;
            words.push(format!("delay-trace {}", file_name(path)));
            Some(Schedule::steps(points, repeat, self.interpolate))
        } else if let Some(text) = &self.walk {
            let o = "walk";
            let parts = fields(
                o,
                text,
                4,
                4,
                "MIN:MAX:STEP:EVERY (e.g. 20ms:100ms:1ms:10ms)",
            )?;
            let min = duration(o, parts[0])?;
            let max = duration(o, parts[1])?;
            let step = positive_duration(o, parts[2])?;
            let every = positive_duration(o, parts[3])?;
            if min > max {
                return Err(err(
                    o,
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
            })
        } else {
            None
        };
        let jitter = match &self.jitter {
            None => None,
            Some(text) => {
                let sigma = duration("jitter", text)?;
                let correlation = match &self.correlation {
                    Some(c) => probability("correlation", c)?,
                    None => 0.0,
                };
                let distribution = match &self.distribution {
                    Some(name) => Distribution::parse(name).map_err(|e| err("distribution", e))?,
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
                slot: None,
            },
            words,
        ))
    }
}

/// What the server's options give a direction.
#[derive(Debug, Clone, Default)]
pub struct LinkDynamics {
    /// A rate schedule, in place of a constant rate or a trace.
    pub server: Option<Server>,
    pub outages: Option<Outages>,
    pub aggregate: Option<Nanos>,
    pub slot: Option<SlotSpec>,
    /// The queue to start with and its replacements (`--queue-steps`).
    pub queue_steps: Option<(aqm::QueueSpec, Vec<QueueStep>)>,
    /// htb's shaping in place of serialization (`--shaper`).
    pub shaper: Option<ShaperSpec>,
    pub words: Vec<String>,
}

impl LinkDynamics {
    /// The rule of rate schedules, for the shells' flags and the
    /// experiment files alike: a schedule gives the rate of each direction
    /// it applies to, so such a direction takes no rate or trace of its
    /// own. True if a direction the dynamics apply to (`applies`) was
    /// given one as well (`own`): every front end refuses it, in its own
    /// words.
    pub fn rate_given_twice(&self, applies: bool, own: bool) -> bool {
        self.server.is_some() && applies && own
    }

    /// The server of a direction the dynamics apply to: the schedule's,
    /// where there is one, else `own`.
    pub fn server_or(&self, own: Server) -> Server {
        self.server.clone().unwrap_or(own)
    }

    /// The rule of shapers, for every front end: htb shapes a rate (a
    /// constant one or a schedule), so a direction with a shaper and a
    /// trace or no rate at all is refused. True if `server` breaks it.
    pub fn shaper_without_rate(&self, server: &Server) -> bool {
        self.shaper.is_some() && !matches!(server, Server::Rate(_) | Server::Schedule(_))
    }
}

impl LinkOptions {
    /// Whether the dynamics draw random numbers (and so need a seed).
    pub fn is_random(&self) -> bool {
        self.onoff_exp.is_some() || self.slot.is_some()
    }

    /// `once`: play a rate schedule once and hold its last rate.
    // Long: one reading per option of the `link` shell, in the order the
    // description lists them, each with its own error; split, each part
    // would take the same words and options back.
    pub fn parse(&self, once: bool) -> Result<LinkDynamics, OptionError> {
        at_most_one(
            &[
                ("rate-steps", self.rate_steps.is_some()),
                ("rate-trace", self.rate_trace.is_some()),
            ],
            "rate schedule",
        )?;
        at_most_one(
            &[
                ("outage", self.outage.is_some()),
                ("onoff", self.onoff.is_some()),
                ("onoff-exp", self.onoff_exp.is_some()),
            ],
            "pattern of outages",
        )?;
        at_most_one(
            &[
                ("aggregate", self.aggregate.is_some()),
                ("slot", self.slot.is_some()),
            ],
            "way of releasing in bursts",
        )?;
        let mut words = Vec::new();
        let server = if let Some(text) = &self.rate_steps {
            let points = crate::schedule::parse_steps(text, time_value, rate_value)
                .map_err(|e| err("rate-steps", e))?;
            words.push(format!("rate-steps {text}"));
            Some(Server::Schedule(Schedule::steps(points, !once, false)))
        } else if let Some(path) = &self.rate_trace {
            let points = schedule_file("rate-trace", path, rate_value)?;
            words.push(format!("rate-trace {}", path.display()));
            Some(Server::Schedule(Schedule::steps(points, !once, false)))
        } else {
            None
        };
        let pair = |option: &'static str, text: &str| -> Result<(Nanos, Nanos), OptionError> {
            let parts = fields(option, text, 2, 2, "two times A:B (e.g. 10s:2s)")?;
            Ok((duration(option, parts[0])?, duration(option, parts[1])?))
        };
        let outages = if let Some(text) = &self.outage {
            let mut items = Vec::new();
            for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                items.push(pair("outage", item)?);
            }
            words.push(format!("outage {text}"));
            Some(Outages::list(items).map_err(|e| err("outage", e))?)
        } else if let Some(text) = &self.onoff {
            let (up, down) = pair("onoff", text)?;
            if up == 0 || down == 0 {
                return Err(err("onoff", "both times must be above 0"));
            }
            words.push(format!("onoff {text}"));
            Some(Outages::Periodic { up, down })
        } else if let Some(text) = &self.onoff_exp {
            let (mean_up, mean_down) = pair("onoff-exp", text)?;
            if mean_up == 0 || mean_down == 0 {
                return Err(err("onoff-exp", "both means must be above 0"));
            }
            words.push(format!("onoff-exp {text}"));
            Some(Outages::Exponential { mean_up, mean_down })
        } else {
            None
        };
        let aggregate = match &self.aggregate {
            Some(text) => {
                words.push(format!("aggregate {text}"));
                Some(positive_duration("aggregate", text)?)
            }
            None => None,
        };
        let slot = match &self.slot {
            Some(text) => {
                let spec = SlotSpec::parse(text).map_err(|e| err("slot", e))?;
                words.push(spec.describe());
                Some(spec)
            }
            None => None,
        };
        let queue_steps = match &self.queue_steps {
            Some(text) => {
                let steps = crate::queue_steps::parse(text).map_err(|e| err("queue-steps", e))?;
                words.push(format!("queue-steps {text}"));
                crate::queue_steps::split(steps)
            }
            None => None,
        };
        let shaper = match &self.shaper {
            Some(text) => {
                let spec = ShaperSpec::parse(text).map_err(|e| err("shaper", e))?;
                words.push(format!("shaper {spec}"));
                Some(spec)
            }
            None => None,
        };
        Ok(LinkDynamics {
            server,
            outages,
            aggregate,
            slot,
            queue_steps,
            shaper,
            words,
        })
    }
}

/// What the loss options give a direction.
#[derive(Debug, Clone, Default)]
pub struct LossDynamics {
    /// A bursty loss model, in place of independent loss.
    pub pattern: Option<Pattern>,
    pub duplicate: f64,
    pub corrupt: f64,
}

impl LossOptions {
    /// Whether a Markov model (which gives the loss itself) is chosen.
    pub fn is_markov(&self) -> bool {
        self.gemodel.is_some() || self.state.is_some()
    }

    /// The loss pattern given `mean` (the mean loss rate, which `burst`
    /// needs), the duplicate and corrupt probabilities.
    // Long: each loss model's checks and reading, in the order their errors are reported; a check
    // stays beside the model it guards.
    pub fn parse(&self, mean: Option<f64>) -> Result<LossDynamics, OptionError> {
        at_most_one(
            &[
                ("gemodel", self.gemodel.is_some()),
                ("state", self.state.is_some()),
                ("burst", self.burst.is_some()),
            ],
            "loss model",
        )?;
        let p = |option: &'static str, values: &[String], i: usize| {
            values.get(i).map(|v| probability(option, v)).transpose()
        };
        let pattern = if let Some(values) = &self.gemodel {
            if values.is_empty() || values.len() > 4 {
                return Err(err(
                    "gemodel",
                    "takes 1 to 4 probabilities: P [R [1-H [1-K]]]",
                ));
            }
            let gp = p("gemodel", values, 0)?.unwrap_or(0.0);
            Some(Pattern::GilbertElliott {
                p: gp,
                r: p("gemodel", values, 1)?.unwrap_or(1.0 - gp),
                bad_loss: p("gemodel", values, 2)?.unwrap_or(1.0),
                good_loss: p("gemodel", values, 3)?.unwrap_or(0.0),
            })
        } else if let Some(values) = &self.state {
            if values.is_empty() || values.len() > 5 {
                return Err(err(
                    "state",
                    "takes 1 to 5 probabilities: P13 [P31 [P32 [P23 [P14]]]]",
                ));
            }
            let p13 = p("state", values, 0)?.unwrap_or(0.0);
            let p31 = p("state", values, 1)?.unwrap_or(1.0 - p13);
            let p32 = p("state", values, 2)?.unwrap_or(0.0);
            let p23 = p("state", values, 3)?.unwrap_or(1.0);
            let p14 = p("state", values, 4)?.unwrap_or(0.0);
            if p13 + p14 > 1.0 || p31 + p32 > 1.0 {
                return Err(err(
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
                        "burst",
                        format!("'{text}' is not a mean burst length of 1 packet or more"),
                    )
                })?;
            let Some(loss) = mean.filter(|m| *m > 0.0) else {
                return Err(err(
                    "burst",
                    "needs PROB, the mean loss rate (e.g. emu loss 1% --burst 4)",
                ));
            };
            if loss >= 1.0 {
                return Err(err("burst", "PROB must be below 100% for bursts to end"));
            }
            // Bad state share p / (p + r) = loss, with r = 1 / length.
            let r = 1.0 / length;
            let gp = loss * r / (1.0 - loss);
            if gp > 1.0 {
                return Err(err(
                    "burst",
                    format!("a mean loss of {loss} in bursts of {length} cannot be reached: use shorter bursts"),
                ));
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
            Some(t) => probability("duplicate", t)?,
            None => 0.0,
        };
        let corrupt = match &self.corrupt {
            Some(t) => probability("corrupt", t)?,
            None => 0.0,
        };
        Ok(LossDynamics {
            pattern,
            duplicate,
            corrupt,
        })
    }

    /// Words for a description.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_square_wave_and_a_rate_step_read_as_the_shells_write_them() {
        let delay = DelayOptions {
            square: Some("40ms:190ms:10s".into()),
            ..Default::default()
        };
        let (dynamics, words) = delay.parse(None).unwrap();
        let mut cursor = dynamics.schedule.unwrap().cursor(0, 0, 0);
        assert_eq!(cursor.value_at(4_999_999_999), 40_000_000);
        assert_eq!(cursor.value_at(5_000_000_000), 190_000_000);
        assert_eq!(words, vec!["square 40ms:190ms:10s".to_string()]);
        let link = LinkOptions {
            rate_steps: Some("0s=100mbit,10s=20mbit".into()),
            ..Default::default()
        };
        let Some(Server::Schedule(schedule)) = link.parse(true).unwrap().server else {
            panic!("a rate schedule");
        };
        assert_eq!(
            schedule.cursor(0, 0, 0).value_at(11_000_000_000),
            20_000_000
        );
    }

    #[test]
    fn errors_name_the_option_and_conflicts_are_refused() {
        let e = DelayOptions {
            square: Some("1:2:3".into()),
            steps: Some("0s=1ms".into()),
            ..Default::default()
        }
        .parse(None)
        .unwrap_err();
        assert!(e.problem.contains("cannot be used with"), "{e}");
        let e = LossOptions {
            duplicate: Some("x".into()),
            ..Default::default()
        }
        .parse(None)
        .unwrap_err();
        assert_eq!(e.option, "duplicate");
        assert!(e
            .to_string()
            .starts_with("--duplicate: 'x' is not a probability"));
        let e = LossOptions {
            burst: Some("4".into()),
            ..Default::default()
        }
        .parse(Some(0.0))
        .unwrap_err();
        assert!(e.problem.contains("needs PROB"), "{e}");
    }
}
