//! The arguments of each shell, parsed with clap (so each has its own
//! `--help`, completions and a man page), and turned into the `shells`
//! crate's specifications. The first shell is parsed by the top-level
//! parser as a subcommand; every later one (after `--`) by the same
//! subcommand enum through [`parse`], so both read the same options.

use super::dynamics_args::{
    probability, DelayDynamicsArgs, DynamicsOn, LinkDynamicsArgs, LossDynamicsArgs, MangleArgs,
};
use super::output::UsageError;
use aqm::QueueSpec;
use clap::{Args, Parser, Subcommand};
use emu_core::time::{format_duration, parse_duration};
use emu_core::trace::Trace;
use emu_core::Rate;
use link::direction::{DirectionError, DirectionOptions};
use link::options::LinkDynamics;
use link::Server;
use shells::{DirectionSpec, ShellSpec};
use std::path::PathBuf;
use std::sync::Arc;

/// The queue a link gets when none is given: a Linux interface's default
/// transmit queue of 1000 packets, tail-drop (`droptail packets 1000`).
pub const DEFAULT_LINK_QUEUE: QueueSpec = QueueSpec::Droptail(aqm::Limits {
    packets: Some(1000),
    bytes: None,
});

/// The shells, each a subcommand of `emu`.
#[derive(Subcommand)]
pub enum ShellCommand {
    /// One-way propagation delay in both directions.
    #[command(
        allow_negative_numbers = true,
        after_help = "TIME is a decimal number with an optional unit ns, us, ms or s; a bare number is milliseconds.\n\
A packet gets the delay in force when it enters the delay line; packets never overtake each other\n\
unless --reorder, so a fall in delay empties the line in a burst. Jitter, schedules and the walk\n\
apply to both directions.\n\
Examples: emu delay 40 -- ping $EMU_BASE\n          emu delay 40ms --jitter 5ms --correlation 25% -- ping $EMU_BASE\n          emu delay --square 40ms:190ms:10s -- ping $EMU_BASE"
    )]
    Delay(DelayArgs),
    /// A bottleneck: a queue drained at a constant rate or along a delivery trace.
    #[command(
        allow_negative_numbers = true,
        after_help = "Rates are written as tc writes them: 10mbit, 1.5gbit, 800kbit, 12mbps (= bytes/s).\n\
Traces: Mahimahi's format (one integer millisecond per line, each line one 1500-byte\n\
delivery opportunity, repeating with the last timestamp as period) or emu's finer format\n\
(first line '#emu-trace us' or '#emu-trace ns', then 'TIME [BYTES]' per line).\n\
Queues: see `emu queues`; the default is 'droptail packets 1000'.\n\
A shaping queue needs no rate: `emu link --queue \"cake bandwidth 10mbit\"` is cake alone,\n\
as tc sets it up, with no bottleneck but its shaper.\n\
Example: emu link 10mbit --queue \"droptail packets 100\" -- iperf3 -c $EMU_BASE"
    )]
    Link(LinkArgs),
    /// Random loss: independent, in bursts (Gilbert-Elliott, netem's 4 states); duplication, corruption.
    #[command(
        allow_negative_numbers = true,
        after_help = "PROB is a probability written 1% or 0.01.\n\
Every run with the same --seed loses the same packets.\n\
Examples: emu loss 1% -- cmd; emu loss 1% --burst 4 -- cmd; emu loss --gemodel 1% 30% -- cmd"
    )]
    Loss(LossArgs),
}

/// What follows a shell's own arguments: more shells and the command.
#[derive(Args)]
pub struct Inner {
    /// The next shells (each after `--`) and the command to run inside them
    /// [default: your login shell].
    #[arg(last = true, value_name = "SHELL ARGS -- ... -- COMMAND")]
    pub rest: Vec<String>,
}

#[derive(Args)]
pub struct DelayArgs {
    /// Delay applied in each direction (optional with a schedule: its base).
    #[arg(allow_hyphen_values = true)]
    time: Option<String>,
    /// Delay of packets leaving the shell (overrides TIME).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    uplink: Option<String>,
    /// Delay of packets entering the shell (overrides TIME).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    downlink: Option<String>,
    /// Apply the path dynamics options (jitter, schedules, outages,
    /// aggregation, bursty loss, duplication, corruption) to one direction
    /// only; the other keeps the constant part.
    #[arg(long, value_enum, value_name = "DIRECTION", default_value_t = DynamicsOn::Both)]
    dynamics_on: DynamicsOn,
    #[command(flatten)]
    dynamics: DelayDynamicsArgs,
    #[command(flatten)]
    mangle: MangleArgs,
    #[command(flatten)]
    pub inner: Inner,
}

#[derive(Args)]
pub struct LinkArgs {
    /// Rate of both directions. Leave it out with a queue that shapes
    /// (`--queue "cake bandwidth 10mbit"`) to run the shaper alone.
    rate: Option<String>,
    /// Rate of packets leaving the shell.
    #[arg(long, value_name = "RATE", conflicts_with = "uplink_trace")]
    uplink: Option<String>,
    /// Rate of packets entering the shell.
    #[arg(long, value_name = "RATE", conflicts_with = "downlink_trace")]
    downlink: Option<String>,
    /// Delivery trace for packets leaving the shell.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    uplink_trace: Option<PathBuf>,
    /// Delivery trace for packets entering the shell.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    downlink_trace: Option<PathBuf>,
    /// Stop the command when a trace reaches its end instead of repeating it.
    #[arg(long)]
    once: bool,
    /// Bytes charged per packet by the link beyond its frame (IP, + 14 with
    /// --l2 ethernet): e.g. 24 for Ethernet's preamble, FCS and gap.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    overhead: u32,
    /// The link layer queues and the link count bytes of: none (IP bytes,
    /// as the kernel on a TUN device) or ethernet (+14-byte MAC header, as
    /// the kernel's qdiscs on an Ethernet device: a tc line copied from an
    /// Ethernet testbed then charges what it charged there).
    #[arg(long = "l2", value_name = "none|ethernet", default_value = "none")]
    l2: String,
    /// Queue of both directions (see `emu queues`).
    #[arg(long, value_name = "SPEC")]
    queue: Option<String>,
    /// Queue of packets leaving the shell (overrides --queue).
    #[arg(long, value_name = "SPEC")]
    uplink_queue: Option<String>,
    /// Queue of packets entering the shell (overrides --queue).
    #[arg(long, value_name = "SPEC")]
    downlink_queue: Option<String>,
    /// Apply the path dynamics options (jitter, schedules, outages,
    /// aggregation, bursty loss, duplication, corruption) to one direction
    /// only; the other keeps the constant part.
    #[arg(long, value_enum, value_name = "DIRECTION", default_value_t = DynamicsOn::Both)]
    dynamics_on: DynamicsOn,
    #[command(flatten)]
    dynamics: LinkDynamicsArgs,
    #[command(flatten)]
    mangle: MangleArgs,
    #[command(flatten)]
    pub inner: Inner,
}

#[derive(Args)]
pub struct LossArgs {
    /// Loss probability in both directions (with --burst: the mean loss rate).
    prob: Option<String>,
    /// Loss probability of packets leaving the shell (overrides PROB).
    #[arg(long, value_name = "PROB")]
    uplink: Option<String>,
    /// Loss probability of packets entering the shell (overrides PROB).
    #[arg(long, value_name = "PROB")]
    downlink: Option<String>,
    /// Seed of the random generator [default: from the clock, recorded in the log].
    #[arg(long)]
    seed: Option<u64>,
    /// Apply the path dynamics options (jitter, schedules, outages,
    /// aggregation, bursty loss, duplication, corruption) to one direction
    /// only; the other keeps the constant part.
    #[arg(long, value_enum, value_name = "DIRECTION", default_value_t = DynamicsOn::Both)]
    dynamics_on: DynamicsOn,
    #[command(flatten)]
    dynamics: LossDynamicsArgs,
    #[command(flatten)]
    pub inner: Inner,
}

impl ShellCommand {
    /// The shells and command that follow this one (after its `--`).
    pub fn take_rest(&mut self) -> Vec<String> {
        let inner = match self {
            ShellCommand::Delay(a) => &mut a.inner,
            ShellCommand::Link(a) => &mut a.inner,
            ShellCommand::Loss(a) => &mut a.inner,
        };
        std::mem::take(&mut inner.rest)
    }

    /// The shell's specification, its arguments checked.
    pub fn spec(self) -> Result<ShellSpec, UsageError> {
        match self {
            ShellCommand::Delay(a) => delay_spec(a),
            ShellCommand::Link(a) => link_spec(a),
            ShellCommand::Loss(a) => loss_spec(a),
        }
    }
}

/// A later shell's words on their own: `emu SHELL ARGS`.
#[derive(Parser)]
#[command(name = "emu", disable_help_subcommand = true)]
struct Segment {
    #[command(subcommand)]
    shell: ShellCommand,
}

/// The seed of a shell that draws no random numbers (delay, link): fixed,
/// so its log header is the same from run to run.
pub const NO_RANDOMNESS: Option<u64> = Some(0);

pub enum Parsed {
    Spec(Box<ShellSpec>),
    /// Help or version was printed.
    Printed,
}

/// Parses one shell's words (`delay 40 --uplink 5`), as the top-level
/// parser would have.
/// A clap error comes back as it is, for the top level to word as it
/// words its own (it knows every command's arguments).
pub fn parse(segment: &[String]) -> Result<Parsed, SegmentError> {
    let words = std::iter::once("emu".to_string()).chain(segment.iter().cloned());
    match Segment::try_parse_from(words) {
        Ok(parsed) => Ok(Parsed::Spec(Box::new(
            parsed.shell.spec().map_err(SegmentError::Usage)?,
        ))),
        Err(e) if !e.use_stderr() => {
            super::output::print_out(&e);
            Ok(Parsed::Printed)
        }
        Err(e) => Err(SegmentError::Clap(Box::new(e))),
    }
}

/// Why a shell's words did not parse.
pub enum SegmentError {
    /// Its options parsed, but their values do not make a shell.
    Usage(UsageError),
    /// Its words did not parse.
    Clap(Box<clap::Error>),
}

/// The value for each direction: the override if given, else the shared one.
fn per_direction<'a>(
    shell: &str,
    what: &str,
    both: &'a Option<String>,
    up: &'a Option<String>,
    down: &'a Option<String>,
) -> Result<[&'a str; 2], UsageError> {
    let pick = |own: &'a Option<String>, name: &str| {
        own.as_deref().or(both.as_deref()).ok_or_else(|| {
            UsageError(format!(
                "{shell}: no {what} for the {name}: give {} or --{name} (see emu {shell} --help)",
                what.to_uppercase()
            ))
        })
    };
    Ok([pick(up, "uplink")?, pick(down, "downlink")?])
}

fn delay_spec(args: DelayArgs) -> Result<ShellSpec, UsageError> {
    let scheduled = args.dynamics.has_schedule();
    let zero = Some("0".to_string());
    let both = if scheduled && args.time.is_none() {
        &zero
    } else {
        &args.time
    };
    let texts = per_direction("delay", "time", both, &args.uplink, &args.downlink)?;
    let mut delays = [0; 2];
    for (d, text) in texts.iter().enumerate() {
        if text.trim_start().starts_with('-') {
            return Err(UsageError(format!(
                "delay: '{text}' is a negative delay; a delay is 0 or more (e.g. 40ms)"
            )));
        }
        delays[d] = parse_duration(text).map_err(|e| UsageError(format!("delay: {e}")))?;
    }
    let random = args.dynamics.is_random() || args.mangle.is_random();
    let base = args.time.as_ref().map(|_| delays[0]);
    let (dynamics, mut words) = args.dynamics.parse(base)?;
    let (duplicate, corrupt, mangle_words) = args.mangle.parse("delay")?;
    words.extend(mangle_words);
    let mut description = if scheduled && args.time.is_none() {
        "delay".to_string()
    } else if delays[0] == delays[1] {
        format!("delay {}", format_duration(delays[0]))
    } else {
        format!(
            "delay up {} down {}",
            format_duration(delays[0]),
            format_duration(delays[1])
        )
    };
    for word in words
        .iter()
        .map(String::as_str)
        .chain(args.dynamics_on.word())
    {
        description += &format!(" {word}");
    }
    let on = args.dynamics_on;
    let directions = [0, 1].map(|d| DirectionSpec {
        dynamics: if on.applies(d) {
            link::Dynamics {
                delay: dynamics.clone(),
                duplicate,
                corrupt,
                ..Default::default()
            }
        } else {
            link::Dynamics::default()
        },
        delay: delays[d],
        ..DirectionSpec::pass_through()
    });
    Ok(ShellSpec {
        kind: "delay",
        description,
        directions,
        // Jitter and the walk draw from the seed (None: the shells pick one
        // from the clock and log it); else there is none.
        seed: if random {
            args.dynamics.seed
        } else {
            NO_RANDOMNESS
        },
    })
}

pub(crate) fn load_trace(path: &std::path::Path, once: bool) -> Result<Server, UsageError> {
    // Read as the user behind sudo or a setuid emu: a trace is never a way
    // to read (and copy into a log directory) a file the user may not.
    let trace = shells::privilege::as_invoker(|| Trace::load(path))
        .map_err(|e| UsageError(format!("link: {}: {e}", path.display())))?
        .map_err(|e| UsageError(format!("link: {e}")))?;
    Ok(Server::Trace {
        trace: Arc::new(trace),
        repeat: !once,
    })
}

// Long: one flag of `emu link` after another into its spec, each with the
// check that names it; split, the parts would pass the spec and the
// description being built between them.
fn link_spec(args: LinkArgs) -> Result<ShellSpec, UsageError> {
    let random = args.dynamics.is_random() || args.mangle.is_random();
    let mut dynamics = args.dynamics.parse(args.once)?;
    let (duplicate, corrupt, mangle_words) = args.mangle.parse("link")?;
    dynamics.words.extend(mangle_words);
    let on = args.dynamics_on;
    check_rate_schedule(&args, &dynamics)?;
    // Each direction's own queue, else the shared one, else the default;
    // the steps' first queue is where both directions start.
    let starting = |own: &Option<String>| {
        link::direction::starting_queue(
            own.as_deref().or(args.queue.as_deref()),
            &dynamics,
            DEFAULT_LINK_QUEUE,
        )
        .map_err(|e| match e {
            DirectionError::Queue(e) => UsageError(format!("link: --queue: {e}")),
            _ => UsageError(
                "link: --queue-steps gives the queue itself: leave out --queue, --uplink-queue and --downlink-queue".into(),
            ),
        })
    };
    let [(uplink_queue, queue_steps), (downlink_queue, _)] = [
        starting(&args.uplink_queue)?,
        starting(&args.downlink_queue)?,
    ];
    let queues = [uplink_queue, downlink_queue];
    let (servers, words) = link_servers(&args, &dynamics, &queues)?;
    // The dynamics go to the directions they apply to; the other keeps
    // its server and none.
    let mut built = Vec::new();
    for (d, server) in servers.into_iter().enumerate() {
        if !on.applies(d) {
            built.push((server, link::Dynamics::default()));
            continue;
        }
        let direction = DirectionOptions {
            server,
            delay_dynamics: Default::default(),
            server_dynamics: dynamics.clone(),
            loss_dynamics: link::options::LossDynamics {
                pattern: None,
                duplicate,
                corrupt,
            },
            queue_steps: queue_steps.clone(),
        }
        .build()
        .map_err(|_| {
            UsageError(
                "link: --shaper shapes a rate: give the link a RATE or a rate schedule, not a trace"
                    .into(),
            )
        })?;
        built.push((direction.server, direction.dynamics));
    }
    if args.once
        && args.uplink_trace.is_none()
        && args.downlink_trace.is_none()
        && dynamics.server.is_none()
    {
        return Err(UsageError(
            "link: --once needs a trace or a rate schedule (--uplink-trace, --downlink-trace, --rate-steps or --rate-trace)".into(),
        ));
    }
    let mut description = if words[0] == words[1] {
        format!("link {}", words[0])
    } else {
        format!("link up {} down {}", words[0], words[1])
    };
    for word in dynamics.words.iter().map(String::as_str).chain(on.word()) {
        if !description.ends_with(' ') {
            description.push(' ');
        }
        description += word;
    }
    let link_layer = emu_core::size::LinkLayer::parse(&args.l2)
        .map_err(|e| UsageError(format!("link: --l2: {e}")))?;
    if link_layer != emu_core::size::LinkLayer::None {
        description += &format!(" l2 {}", link_layer.name());
    }
    let mut built = built.into_iter();
    let mut direction = |queue: QueueSpec| {
        let (server, dynamics) = built.next().expect("two directions");
        DirectionSpec {
            server,
            queue,
            overhead: args.overhead,
            link_layer,
            dynamics,
            ..DirectionSpec::pass_through()
        }
    };
    let [uplink_queue, downlink_queue] = queues;
    let directions = [direction(uplink_queue), direction(downlink_queue)];
    Ok(ShellSpec {
        kind: "link",
        description,
        directions,
        // Random outages draw from the seed (None: the shells pick one from
        // the clock and log it); else there is none.
        seed: if random {
            args.dynamics.seed
        } else {
            NO_RANDOMNESS
        },
    })
}

/// A rate schedule gives the rate of the directions it applies to (see
/// `LinkDynamics::rate_given_twice`): refused with the flags to leave out.
fn check_rate_schedule(args: &LinkArgs, dynamics: &LinkDynamics) -> Result<(), UsageError> {
    let on = args.dynamics_on;
    let any_rate = args.rate.is_some()
        || args.uplink.is_some()
        || args.downlink.is_some()
        || args.uplink_trace.is_some()
        || args.downlink_trace.is_some();
    if on == DynamicsOn::Both && dynamics.rate_given_twice(true, any_rate) {
        return Err(UsageError(
            "link: --rate-steps and --rate-trace give the rate of both directions: leave out RATE, --uplink, --downlink and the traces (or schedule one direction with --dynamics-on)".into(),
        ));
    }
    for (d, name, rate, trace) in [
        (0, "uplink", &args.uplink, &args.uplink_trace),
        (1, "downlink", &args.downlink, &args.downlink_trace),
    ] {
        if dynamics.rate_given_twice(on.applies(d), rate.is_some() || trace.is_some()) {
            return Err(UsageError(format!(
                "link: the {name}'s rate follows --rate-steps/--rate-trace: leave out --{name} and --{name}-trace"
            )));
        }
    }
    Ok(())
}

/// Each direction's server (its schedule, trace, rate, or none behind a
/// queue that shapes) and the word that names it in the description.
fn link_servers(
    args: &LinkArgs,
    dynamics: &LinkDynamics,
    queues: &[QueueSpec; 2],
) -> Result<(Vec<Server>, Vec<String>), UsageError> {
    let scheduled = |d: usize| dynamics.server.is_some() && args.dynamics_on.applies(d);
    let mut servers = Vec::new();
    let mut words = Vec::new();
    for (d, (name, rate, trace), queue) in [
        ("uplink", &args.uplink, &args.uplink_trace),
        ("downlink", &args.downlink, &args.downlink_trace),
    ]
    .into_iter()
    .zip(queues)
    .enumerate()
    .map(|(d, (direction, queue))| (d, direction, queue))
    {
        if scheduled(d) {
            servers.push(dynamics.server_or(Server::Unlimited));
            words.push(String::new());
            continue;
        }
        let server = match (rate.as_ref().or(if trace.is_none() { args.rate.as_ref() } else { None }), trace) {
            (_, Some(path)) => {
                words.push(path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned()));
                load_trace(path, args.once)?
            }
            (Some(text), None) => {
                let rate = Rate::parse(text).map_err(|e| UsageError(format!("link: {e}")))?;
                words.push(rate.to_string());
                Server::Rate(rate)
            }
            // A shaping queue alone, as `tc qdisc add ... cake bandwidth
            // 10mbit` sets one up: no link bottleneck, the queue paces.
            (None, None) if queue.shaper_bps().is_some() => {
                words.push("unlimited".into());
                Server::Unlimited
            }
            (None, None) => {
                return Err(UsageError(format!("link: no rate for the {name}: give RATE, --{name} RATE, --{name}-trace FILE, a rate schedule, or a queue that shapes (--queue \"cake bandwidth 10mbit\") (see emu link --help)")))
            }
        };
        servers.push(server);
    }
    Ok((servers, words))
}

fn loss_spec(args: LossArgs) -> Result<ShellSpec, UsageError> {
    let markov = args.dynamics.is_markov();
    let mangles = args.dynamics.duplicate.is_some() || args.dynamics.corrupt.is_some();
    let none = Some("0".to_string());
    // With a Markov model or only duplication/corruption, PROB may be left out.
    let both = if (markov || mangles) && args.prob.is_none() {
        &none
    } else {
        &args.prob
    };
    if let (true, Some(prob)) = (markov, &args.prob) {
        return Err(UsageError(format!(
            "loss: '{prob}' is left over: --gemodel (up to 4 values) and --state (up to 5) give the loss themselves, so leave out PROB"
        )));
    }
    if args.dynamics.burst.is_some() && args.prob.is_none() {
        return Err(UsageError(
            "loss: --burst needs PROB, the mean loss rate (e.g. emu loss 1% --burst 4)".into(),
        ));
    }
    let texts = per_direction("loss", "prob", both, &args.uplink, &args.downlink)?;
    let mut probabilities = [0.0; 2];
    for (d, text) in texts.iter().enumerate() {
        probabilities[d] = probability("loss", "prob", text)
            .map_err(|e| UsageError(e.0.replace("loss: --prob: ", "loss: PROB: ")))?;
    }
    let on = args.dynamics_on;
    // PROB of the direction with the dynamics is the bursty model's mean.
    let mean = probabilities[usize::from(on == DynamicsOn::Downlink)];
    let link::options::LossDynamics {
        pattern,
        duplicate,
        corrupt,
    } = args.dynamics.parse(Some(mean))?;
    if on == DynamicsOn::Both && pattern.is_some() && probabilities[0] != probabilities[1] {
        return Err(UsageError(
            "loss: a bursty loss model applies to both directions: give PROB, not --uplink/--downlink".into(),
        ));
    }
    let mut description = if markov || (mangles && args.prob.is_none()) {
        "loss".to_string()
    } else if probabilities[0] == probabilities[1] {
        format!("loss {}", probabilities[0])
    } else {
        format!("loss up {} down {}", probabilities[0], probabilities[1])
    };
    for word in args
        .dynamics
        .words()
        .into_iter()
        .chain(on.word().map(String::from))
    {
        description += &format!(" {word}");
    }
    // The direction without the dynamics keeps independent loss at its
    // PROB (none when a Markov model stood in for PROB).
    let directions = [0, 1].map(|d| {
        let plain = link::Pattern::Bernoulli(probabilities[d]);
        DirectionSpec {
            dynamics: link::Dynamics {
                duplicate: if on.applies(d) { duplicate } else { 0.0 },
                corrupt: if on.applies(d) { corrupt } else { 0.0 },
                ..Default::default()
            },
            loss: if on.applies(d) {
                pattern.unwrap_or(plain)
            } else {
                plain
            },
            ..DirectionSpec::pass_through()
        }
    });
    Ok(ShellSpec {
        kind: "loss",
        description,
        directions,
        // None: the shells pick one from the clock and log it.
        seed: args.seed,
    })
}

#[cfg(test)]
mod tests;
