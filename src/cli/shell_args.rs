//! The arguments of each shell, parsed with clap (so each has its own
//! `--help`), and turned into the `shells` crate's specifications.

use super::UsageError;
use aqm::QueueSpec;
use clap::Parser;
use emu_core::time::{format_duration, parse_duration, Nanos};
use emu_core::trace::Trace;
use emu_core::Rate;
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

#[derive(Parser)]
#[command(
    name = "emu delay",
    about = "One-way propagation delay in both directions",
    after_help = "TIME is a decimal number with an optional unit ns, us, ms or s; a bare number is milliseconds.\nExample: emu delay 40 -- ping $EMU_BASE"
)]
struct DelayArgs {
    /// Delay applied in each direction.
    time: Option<String>,
    /// Delay of packets leaving the shell (overrides TIME).
    #[arg(long)]
    uplink: Option<String>,
    /// Delay of packets entering the shell (overrides TIME).
    #[arg(long)]
    downlink: Option<String>,
}

#[derive(Parser)]
#[command(
    name = "emu link",
    about = "A bottleneck: a queue drained at a constant rate or along a delivery trace",
    after_help = "Rates are written as tc writes them: 10mbit, 1.5gbit, 800kbit, 12mbps (= bytes/s).\n\
Traces: Mahimahi's format (one integer millisecond per line, each line one 1500-byte\n\
delivery opportunity, repeating with the last timestamp as period) or emu's finer format\n\
(first line '#emu-trace us' or '#emu-trace ns', then 'TIME [BYTES]' per line).\n\
Queues: see `emu queues`; the default is 'droptail packets 1000'.\n\
Example: emu link 10mbit --queue \"droptail packets 100\" -- iperf3 -c $EMU_BASE"
)]
struct LinkArgs {
    /// Rate of both directions.
    rate: Option<String>,
    /// Rate of packets leaving the shell.
    #[arg(long, conflicts_with = "uplink_trace")]
    uplink: Option<String>,
    /// Rate of packets entering the shell.
    #[arg(long, conflicts_with = "downlink_trace")]
    downlink: Option<String>,
    /// Delivery trace for packets leaving the shell.
    #[arg(long, value_name = "FILE")]
    uplink_trace: Option<PathBuf>,
    /// Delivery trace for packets entering the shell.
    #[arg(long, value_name = "FILE")]
    downlink_trace: Option<PathBuf>,
    /// Stop the command when a trace reaches its end instead of repeating it.
    #[arg(long)]
    once: bool,
    /// Bytes charged per packet on the wire beyond its IP length (Ethernet
    /// header = 14; with preamble, FCS and inter-frame gap = 38).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    overhead: u32,
    /// Queue of both directions (see `emu queues`).
    #[arg(long, value_name = "SPEC")]
    queue: Option<String>,
    /// Queue of packets leaving the shell (overrides --queue).
    #[arg(long, value_name = "SPEC")]
    uplink_queue: Option<String>,
    /// Queue of packets entering the shell (overrides --queue).
    #[arg(long, value_name = "SPEC")]
    downlink_queue: Option<String>,
}

#[derive(Parser)]
#[command(
    name = "emu loss",
    about = "Independent random loss",
    after_help = "PROB is a probability from 0 to 1 (0.01 = 1%).\nEvery run with the same --seed loses the same packets."
)]
struct LossArgs {
    /// Loss probability in both directions.
    prob: Option<String>,
    /// Loss probability of packets leaving the shell (overrides PROB).
    #[arg(long)]
    uplink: Option<String>,
    /// Loss probability of packets entering the shell (overrides PROB).
    #[arg(long)]
    downlink: Option<String>,
    /// Seed of the random generator [default: from the clock, recorded in the log].
    #[arg(long)]
    seed: Option<u64>,
}

/// The seed of a shell that draws no random numbers (delay, link): fixed,
/// so its log header is the same from run to run.
pub const NO_RANDOMNESS: Option<u64> = Some(0);

pub enum Parsed {
    Spec(Box<ShellSpec>),
    /// Help or version was printed.
    Printed,
}

fn clap_parse<T: Parser>(segment: &[String]) -> Result<Option<T>, UsageError> {
    let name = format!("emu {}", segment[0]);
    match T::try_parse_from(std::iter::once(name.clone()).chain(segment[1..].iter().cloned())) {
        Ok(args) => Ok(Some(args)),
        Err(e) if !e.use_stderr() => {
            print!("{e}");
            Ok(None)
        }
        Err(e) => {
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            let hint = if segment[1..]
                .iter()
                .any(|w| super::SHELL_NAMES.contains(&w.as_str()))
            {
                " (separate shells with --, e.g. emu delay 40 -- link 10mbit)"
            } else {
                ""
            };
            Err(UsageError(format!(
                "{}: {first}{hint}; see {name} --help",
                segment[0]
            )))
        }
    }
}

pub fn parse(segment: &[String]) -> Result<Parsed, UsageError> {
    let spec = match segment[0].as_str() {
        "delay" => clap_parse::<DelayArgs>(segment)?
            .map(delay_spec)
            .transpose()?,
        "link" => clap_parse::<LinkArgs>(segment)?
            .map(link_spec)
            .transpose()?,
        "loss" => clap_parse::<LossArgs>(segment)?
            .map(loss_spec)
            .transpose()?,
        other => return Err(UsageError(format!("'{other}' is not a shell"))),
    };
    Ok(spec.map_or(Parsed::Printed, |s| Parsed::Spec(Box::new(s))))
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

fn plain(delay: Nanos, server: Server, queue: QueueSpec, loss: f64) -> DirectionSpec {
    DirectionSpec {
        delay,
        server,
        queue,
        loss: link::Pattern::Bernoulli(loss),
        overhead: 0,
    }
}

fn delay_spec(args: DelayArgs) -> Result<ShellSpec, UsageError> {
    let texts = per_direction("delay", "time", &args.time, &args.uplink, &args.downlink)?;
    let mut delays = [0; 2];
    for (d, text) in texts.iter().enumerate() {
        delays[d] = parse_duration(text).map_err(|e| UsageError(format!("delay: {e}")))?;
    }
    let description = if delays[0] == delays[1] {
        format!("delay {}", format_duration(delays[0]))
    } else {
        format!(
            "delay up {} down {}",
            format_duration(delays[0]),
            format_duration(delays[1])
        )
    };
    Ok(ShellSpec {
        kind: "delay",
        description,
        directions: delays.map(|d| plain(d, Server::Unlimited, QueueSpec::Infinite, 0.0)),
        seed: NO_RANDOMNESS,
    })
}

pub(crate) fn load_trace(path: &std::path::Path, once: bool) -> Result<Server, UsageError> {
    let trace = Trace::load(path).map_err(|e| UsageError(format!("link: {e}")))?;
    Ok(Server::Trace {
        trace: Arc::new(trace),
        repeat: !once,
    })
}

fn link_spec(args: LinkArgs) -> Result<ShellSpec, UsageError> {
    let mut servers = Vec::new();
    let mut words = Vec::new();
    for (name, rate, trace) in [
        ("uplink", &args.uplink, &args.uplink_trace),
        ("downlink", &args.downlink, &args.downlink_trace),
    ] {
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
            (None, None) => {
                return Err(UsageError(format!("link: no rate for the {name}: give RATE, --{name} RATE or --{name}-trace FILE (see emu link --help)")))
            }
        };
        servers.push(server);
    }
    if args.once && args.uplink_trace.is_none() && args.downlink_trace.is_none() {
        return Err(UsageError(
            "link: --once needs a trace (--uplink-trace or --downlink-trace)".into(),
        ));
    }
    // Each direction's own queue, else the shared one, else the default.
    let queue = |own: &Option<String>| match own.as_deref().or(args.queue.as_deref()) {
        Some(text) => QueueSpec::parse(text).map_err(|e| UsageError(format!("link: --queue: {e}"))),
        None => Ok(DEFAULT_LINK_QUEUE),
    };
    let queues = [queue(&args.uplink_queue)?, queue(&args.downlink_queue)?];
    let description = if words[0] == words[1] {
        format!("link {}", words[0])
    } else {
        format!("link up {} down {}", words[0], words[1])
    };
    let mut servers = servers.into_iter();
    let mut direction = |queue: QueueSpec| DirectionSpec {
        delay: 0,
        server: servers.next().expect("two servers"),
        queue,
        loss: link::Pattern::Bernoulli(0.0),
        overhead: args.overhead,
    };
    let [uplink_queue, downlink_queue] = queues;
    let directions = [direction(uplink_queue), direction(downlink_queue)];
    Ok(ShellSpec {
        kind: "link",
        description,
        directions,
        seed: NO_RANDOMNESS,
    })
}

fn loss_spec(args: LossArgs) -> Result<ShellSpec, UsageError> {
    let texts = per_direction("loss", "prob", &args.prob, &args.uplink, &args.downlink)?;
    let mut probabilities = [0.0; 2];
    for (d, text) in texts.iter().enumerate() {
        probabilities[d] = text
            .parse::<f64>()
            .ok()
            .filter(|p| (0.0..=1.0).contains(p))
            .ok_or_else(|| UsageError(format!("loss: '{text}' is not a probability: expected a number from 0 to 1, e.g. 0.01 for 1%")))?;
    }
    let description = if probabilities[0] == probabilities[1] {
        format!("loss {}", probabilities[0])
    } else {
        format!("loss up {} down {}", probabilities[0], probabilities[1])
    };
    Ok(ShellSpec {
        kind: "loss",
        description,
        directions: probabilities.map(|p| plain(0, Server::Unlimited, QueueSpec::Infinite, p)),
        // None: the shells pick one from the clock and log it.
        seed: args.seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> Result<ShellSpec, String> {
        let words: Vec<String> = s.split_whitespace().map(String::from).collect();
        match parse(&words) {
            Ok(Parsed::Spec(spec)) => Ok(*spec),
            Ok(Parsed::Printed) => Err("printed".into()),
            Err(e) => Err(e.0),
        }
    }

    #[test]
    fn delay_forms() {
        let s = spec("delay 40").unwrap();
        assert_eq!(s.directions[0].delay, 40_000_000);
        assert_eq!(s.description, "delay 40 ms");
        let s = spec("delay 0.25ms --downlink 10").unwrap();
        assert_eq!(
            (s.directions[0].delay, s.directions[1].delay),
            (250_000, 10_000_000)
        );
        let s = spec("delay --uplink 1 --downlink 2").unwrap();
        assert_eq!(s.description, "delay up 1 ms down 2 ms");
        assert!(spec("delay")
            .unwrap_err()
            .contains("no time for the uplink"));
        assert!(spec("delay forty").unwrap_err().contains("'forty'"));
        assert!(spec("delay 40 link 10mbit")
            .unwrap_err()
            .contains("separate shells with --"));
    }

    #[test]
    fn link_forms() {
        let s = spec("link 10mbit").unwrap();
        assert!(
            matches!(s.directions[0].server, Server::Rate(r) if r.bits_per_sec() == 10_000_000)
        );
        assert_eq!(s.directions[0].queue, DEFAULT_LINK_QUEUE);
        let s = spec(
            "link --uplink 1mbit --downlink 5mbit --queue infinite --downlink-queue droptail_bytes",
        )
        .err()
        .unwrap();
        assert!(
            s.contains("unknown queue discipline 'droptail_bytes'"),
            "{s}"
        );
        assert!(spec("link").unwrap_err().contains("no rate for the uplink"));
        assert!(spec("link 10 mbit").is_err());
        assert!(spec("link tenmbit").unwrap_err().contains("'tenmbit'"));
        assert!(spec("link 10mbit --once")
            .unwrap_err()
            .contains("--once needs a trace"));
        assert!(spec("link 10mbit --queue").is_err());
        assert!(spec("link --uplink-trace /nonexistent/up --downlink 1mbit")
            .unwrap_err()
            .contains("/nonexistent/up: cannot read the trace"));
    }

    #[test]
    fn loss_forms() {
        let s = spec("loss 0.1 --seed 5").unwrap();
        assert_eq!(
            (s.directions[0].loss, s.seed),
            (link::Pattern::Bernoulli(0.1), Some(5))
        );
        assert!(spec("loss 1.5")
            .unwrap_err()
            .contains("'1.5' is not a probability"));
        assert!(spec("loss 0.1 --seed x").is_err());
    }
}
