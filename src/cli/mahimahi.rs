//! `mm-delay`, `mm-link`, `mm-loss`, `mm-onoff` and `mm-intermittent`:
//! Mahimahi's commands, with its syntax, defaults and log format, run on
//! emu's shells. The binaries are this program under those names (argv[0]
//! picks the command), so putting emu's install directory first on PATH
//! makes scripts written for Mahimahi run on emu unchanged.
//!
//! As in Mahimahi, each command is one shell and nests by running the next
//! command inside it (`mm-delay 10 mm-link up down -- cmd`).

use super::output::UsageError;
use super::shell_args::{load_trace, NO_RANDOMNESS};
use emu_core::log::Direction;
use emu_core::time::{Nanos, NS_PER_MS};
use link::Pattern;
use report::logs::mahimahi_writer::TextLog;
use shells::{DirectionSpec, ShellSpec};
use std::path::{Path, PathBuf};

/// The names this program answers to besides `emu`.
pub const COMMANDS: [&str; 5] = [
    "mm-delay",
    "mm-link",
    "mm-loss",
    "mm-onoff",
    "mm-intermittent",
];

const LINK_USAGE: &str = "Usage: mm-link UPLINK-TRACE DOWNLINK-TRACE [OPTION]... [COMMAND]

Options = --once
          --uplink-log=FILENAME --downlink-log=FILENAME
          --meter-uplink --meter-uplink-delay
          --meter-downlink --meter-downlink-delay
          --meter-all
          --uplink-queue=QUEUE_TYPE --downlink-queue=QUEUE_TYPE
          --uplink-queue-args=QUEUE_ARGS --downlink-queue-args=QUEUE_ARGS

          QUEUE_TYPE = infinite | droptail | drophead | codel | pie
                       (or any emu queue: cake, dualpi2, fq_codel, ...; see emu queues)
          QUEUE_ARGS = \"NAME=NUMBER[, NAME2=NUMBER2, ...]\"
              (with NAME = bytes | packets | target | interval | qdelay_ref | max_burst)
                  target, interval, qdelay_ref, max_burst are in milli-second

emu additions: --log=DIR also keeps emu's binary per-packet log in DIR.
";

/// Mahimahi's usage line of each command but mm-link (whose options make
/// it a page: [`LINK_USAGE`]).
fn usage(name: &str) -> String {
    match name {
        "mm-delay" => "Usage: mm-delay delay-milliseconds [command...]".into(),
        "mm-loss" => "Usage: mm-loss uplink|downlink rate [command...]".into(),
        "mm-onoff" => {
            "Usage: mm-onoff uplink|downlink mean-on-time mean-off-time [command...]".into()
        }
        "mm-link" => LINK_USAGE.into(),
        _ => format!("Usage: {name} uplink|downlink ON-TIME OFF-TIME [COMMAND...]"),
    }
}

/// `--help` or `--version` where Mahimahi's own parser would see an
/// option: first for the positional commands, before the command (or `--`)
/// for mm-link. Help goes to stdout with status 0, as for any program.
fn help_or_version(name: &str, args: &[String]) -> Option<String> {
    let options: Vec<&String> = if name == "mm-link" {
        args.iter().take_while(|w| *w != "--").collect()
    } else {
        args.first().into_iter().collect()
    };
    if options.iter().any(|w| *w == "--help" || *w == "-h") {
        let mut text = usage(name);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        Some(text)
    } else if options.iter().any(|w| *w == "--version" || *w == "-V") {
        Some(format!("{name} (emu {})\n", env!("CARGO_PKG_VERSION")))
    } else {
        None
    }
}

/// Runs the Mahimahi command `name`; returns the exit status.
pub fn main(name: &str, args: Vec<String>) -> i32 {
    if let Some(text) = help_or_version(name, &args) {
        super::output::print_out(text);
        return 0;
    }
    let result = match name {
        "mm-link" => link(name, &args),
        _ => plan(name, &args).and_then(|(spec, command)| {
            run(spec, command, None, command_line(name, &args)).map(|finished| finished.status)
        }),
    };
    match result {
        Ok(code) => code,
        Err(UsageError(message)) => {
            eprintln!("{message}");
            1 // Mahimahi exits with EXIT_FAILURE on every error
        }
    }
}

/// Mahimahi's myatoi: a whole non-negative number.
fn whole(text: &str, what: &str, usage: &str) -> Result<u64, UsageError> {
    text.parse::<u64>()
        .map_err(|_| UsageError(format!("Invalid integer: {text} ({what})\n{usage}")))
}

fn seconds(text: &str, what: &str, usage: &str) -> Result<Nanos, UsageError> {
    match text.parse::<f64>() {
        Ok(s) if s >= 0.0 && s.is_finite() => Ok((s * 1e9) as Nanos),
        _ => Err(UsageError(format!(
            "Error: {what} must be a number of seconds, at least 0 (got '{text}').\n{usage}"
        ))),
    }
}

/// Runs one Mahimahi shell with emu's defaults.
fn run(
    spec: ShellSpec,
    command: Vec<String>,
    log_dir: Option<PathBuf>,
    command_line: String,
) -> Result<shells::Finished, UsageError> {
    let globals = super::running::Globals {
        log_dir,
        // Mahimahi prints nothing while a shell runs.
        status: Some(false),
        ..super::running::Globals::default()
    };
    super::running::run_chain(vec![spec], command, globals, command_line)
}

fn command_line(name: &str, args: &[String]) -> String {
    std::iter::once(name.to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The shell and command of mm-delay, mm-loss, mm-onoff or mm-intermittent.
pub fn plan(name: &str, args: &[String]) -> Result<(ShellSpec, Vec<String>), UsageError> {
    match name {
        "mm-delay" => delay(args),
        "mm-loss" => loss(args),
        "mm-onoff" => switching(name, args, true),
        _ => switching(name, args, false),
    }
}

/// `mm-delay DELAY-MS [COMMAND...]`
fn delay(args: &[String]) -> Result<(ShellSpec, Vec<String>), UsageError> {
    let usage = usage("mm-delay");
    let Some(first) = args.first() else {
        return Err(UsageError(usage));
    };
    let ms = whole(first, "delay-milliseconds", &usage)?;
    let mut spec = ShellSpec {
        kind: "delay",
        description: format!("delay {ms} ms"),
        directions: [DirectionSpec::pass_through(), DirectionSpec::pass_through()],
        seed: NO_RANDOMNESS,
    };
    for d in &mut spec.directions {
        d.delay = ms * NS_PER_MS;
    }
    Ok((spec, args[1..].to_vec()))
}

fn which_link(word: &str, usage: &str) -> Result<usize, UsageError> {
    match word {
        "uplink" => Ok(0),
        "downlink" => Ok(1),
        _ => Err(UsageError(usage.into())),
    }
}

/// `mm-loss uplink|downlink RATE [COMMAND...]`
fn loss(args: &[String]) -> Result<(ShellSpec, Vec<String>), UsageError> {
    let usage = usage("mm-loss");
    if args.len() < 2 {
        return Err(UsageError(usage));
    }
    let d = which_link(&args[0], &usage)?;
    let rate = args[1]
        .parse::<f64>()
        .ok()
        .filter(|r| (0.0..=1.0).contains(r))
        .ok_or_else(|| {
            UsageError(format!(
                "Error: loss rate must be between 0 and 1 (got '{}').\n{usage}",
                args[1]
            ))
        })?;
    let mut spec = ShellSpec {
        kind: "loss",
        description: format!("loss ({}) {rate}", if d == 0 { "up" } else { "down" }),
        directions: [DirectionSpec::pass_through(), DirectionSpec::pass_through()],
        seed: None,
    };
    spec.directions[d].loss = Pattern::Bernoulli(rate);
    Ok((spec, args[2..].to_vec()))
}

/// `mm-onoff uplink|downlink MEAN-ON MEAN-OFF [COMMAND...]` (exponential
/// on and off times) and `mm-intermittent` (fixed ones), in seconds.
fn switching(
    name: &str,
    args: &[String],
    exponential: bool,
) -> Result<(ShellSpec, Vec<String>), UsageError> {
    let usage = usage(name);
    if args.len() < 3 {
        return Err(UsageError(usage));
    }
    let d = which_link(&args[0], &usage)?;
    let on = seconds(&args[1], "on-time", &usage)?;
    let off = seconds(&args[2], "off-time", &usage)?;
    if on == 0 && off == 0 {
        return Err(UsageError(format!(
            "Error: on-time and off-time cannot both be 0 seconds.\n{usage}"
        )));
    }
    let kind = if exponential { "onoff" } else { "intermittent" };
    let mut spec = ShellSpec {
        kind: "loss",
        description: format!(
            "{kind} ({}) on={}s off={}s",
            if d == 0 { "up" } else { "down" },
            args[1],
            args[2]
        ),
        directions: [DirectionSpec::pass_through(), DirectionSpec::pass_through()],
        seed: None,
    };
    spec.directions[d].loss = if exponential {
        Pattern::OnOff {
            mean_on: on,
            mean_off: off,
        }
    } else {
        Pattern::Periodic { on, off }
    };
    Ok((spec, args[3..].to_vec()))
}

/// mm-link's options, parsed as getopt_long does: options may appear
/// anywhere before `--`, `--name=value` or `--name value`, `-u`/`-d`.
#[derive(Debug, Default, PartialEq)]
pub struct LinkOptions {
    pub traces: Vec<String>,
    pub command: Vec<String>,
    pub once: bool,
    pub logs: [Option<String>; 2],
    pub queues: [Option<String>; 2],
    pub queue_args: [Option<String>; 2],
    pub meters: bool,
    pub log_dir: Option<String>,
}

pub fn parse_link(args: &[String]) -> Result<LinkOptions, UsageError> {
    let mut o = LinkOptions::default();
    let mut positional = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            positional.extend(words.by_ref().cloned());
            break;
        }
        // After the traces, the first non-option starts the command; as
        // with getopt, later options are still options.
        if !word.starts_with('-') || word == "-" {
            positional.push(word.clone());
            continue;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (word.as_str(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| words.next().cloned())
                .ok_or_else(|| {
                    UsageError(format!(
                        "mm-link: option '{name}' requires an argument\n{LINK_USAGE}"
                    ))
                })
        };
        match flag {
            "--once" | "-o" => o.once = true,
            "--uplink-log" | "-u" => o.logs[0] = Some(value(flag)?),
            "--downlink-log" | "-d" => o.logs[1] = Some(value(flag)?),
            "--uplink-queue" | "-q" => o.queues[0] = Some(value(flag)?),
            "--downlink-queue" | "-w" => o.queues[1] = Some(value(flag)?),
            "--uplink-queue-args" | "-a" => o.queue_args[0] = Some(value(flag)?),
            "--downlink-queue-args" | "-b" => o.queue_args[1] = Some(value(flag)?),
            "--meter-uplink"
            | "--meter-downlink"
            | "--meter-uplink-delay"
            | "--meter-downlink-delay"
            | "--meter-all"
            | "-m"
            | "-n"
            | "-x"
            | "-y"
            | "-z" => o.meters = true,
            "--log" => o.log_dir = Some(value(flag)?),
            _ => {
                return Err(UsageError(format!(
                    "mm-link: unrecognized option '{word}'\n{LINK_USAGE}"
                )))
            }
        }
    }
    if positional.len() < 2 {
        return Err(UsageError(LINK_USAGE.into()));
    }
    o.command = positional.split_off(2);
    o.traces = positional;
    Ok(o)
}

/// `mm-link UPLINK-TRACE DOWNLINK-TRACE [OPTION]... [COMMAND]`
fn link(name: &str, args: &[String]) -> Result<i32, UsageError> {
    let o = parse_link(args)?;
    if o.meters {
        eprintln!("mm-link: live meters are not shown by emu; use --uplink-log/--downlink-log and `emu report`");
    }
    let mut directions = Vec::new();
    let mut queues = Vec::new();
    for d in 0..2 {
        let server = load_trace(Path::new(&o.traces[d]), o.once)
            .map_err(|UsageError(m)| UsageError(m.trim_start_matches("link: ").to_string()))?;
        let queue = aqm::spec::mahimahi::parse(o.queues[d].as_deref(), o.queue_args[d].as_deref())
            .map_err(|e| UsageError(format!("mm-link: {e}")))?;
        queues.push(queue.emu_text);
        directions.push(DirectionSpec {
            server,
            queue: queue.spec,
            ..DirectionSpec::pass_through()
        });
    }
    let spec = ShellSpec {
        kind: "link",
        description: "link".into(),
        directions: [directions.remove(0), directions.remove(0)],
        seed: NO_RANDOMNESS,
    };
    open_text_logs(&o.logs)?;
    let wants_text = o.logs.iter().any(Option::is_some);
    // The text logs are written from emu's binary log after the run.
    let scratch = (wants_text && o.log_dir.is_none())
        .then(|| std::env::temp_dir().join(format!("emu-mm-link-{}", std::process::id())));
    let log_dir = o.log_dir.clone().map(PathBuf::from).or(scratch.clone());
    if let Some(dir) = &log_dir {
        shells::privilege::io_as_invoker(|| std::fs::create_dir_all(dir)).map_err(|e| {
            UsageError(format!(
                "{}: cannot create the log directory: {e}",
                dir.display()
            ))
        })?;
    }
    let _scratch = scratch.map(ScratchDir);
    let prefix = std::env::var("MAHIMAHI_SHELL_PREFIX").ok();
    let line = command_line(name, args);
    let finished = run(spec, o.command.clone(), log_dir.clone(), line.clone())?;
    if let Some(binary) = finished.logs.first() {
        for (d, path) in o.logs.iter().enumerate() {
            if let Some(path) = path {
                let text_log = TextLog {
                    binary,
                    direction: Direction::BOTH[d],
                    trace: &o.traces[d],
                    repeat: !o.once,
                    path,
                    command_line: &line,
                    queue: &queues[d],
                    prefix: prefix.as_deref(),
                };
                let written = shells::privilege::as_invoker(|| text_log.write())
                    .map_err(|e| e.to_string())
                    .and_then(|r| r);
                if let Err(e) = written {
                    eprintln!("mm-link: {path}: {e}");
                    return Ok(1);
                }
            }
        }
    }
    Ok(finished.status)
}

/// Opens (creates or empties) the text logs before anything is built, as
/// Mahimahi does, so a log that cannot be written stops mm-link at once.
/// If one fails, those this call created go again: a failed mm-link
/// leaves nothing behind.
fn open_text_logs(logs: &[Option<String>]) -> Result<(), UsageError> {
    let mut created: Vec<&str> = Vec::new();
    for path in logs.iter().flatten() {
        let existed = Path::new(path).exists();
        match shells::privilege::io_as_invoker(|| std::fs::File::create(path)) {
            Ok(_) if !existed => created.push(path),
            Ok(_) => {}
            Err(e) => {
                for path in created {
                    let _ = shells::privilege::as_invoker(|| std::fs::remove_file(path));
                }
                return Err(UsageError(format!(
                    "{path}: error opening for writing ({e})"
                )));
            }
        }
    }
    Ok(())
}

/// The log directory mm-link makes for itself when only text logs were
/// asked for: removed however the run ends (a text log that cannot be
/// written, too).
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = shells::privilege::as_invoker(|| std::fs::remove_dir_all(&self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn mm_link_options_parse_as_getopt_does() {
        let o = parse_link(&words(
            "up.trace down.trace --uplink-queue=droptail --uplink-queue-args=packets=100 --uplink-log=up.log -d down.log --once -- sh -c x",
        ))
        .unwrap();
        assert_eq!(o.traces, words("up.trace down.trace"));
        assert_eq!(o.command, words("sh -c x"));
        assert_eq!(o.queues[0].as_deref(), Some("droptail"));
        assert_eq!(o.queue_args[0].as_deref(), Some("packets=100"));
        assert_eq!(o.logs, [Some("up.log".into()), Some("down.log".into())]);
        assert!(o.once);
        let o = parse_link(&words("--meter-all a b --downlink-queue codel cmd arg")).unwrap();
        assert!(o.meters);
        assert_eq!(o.command, words("cmd arg"));
        assert_eq!(o.queues[1].as_deref(), Some("codel"));
        for bad in ["a", "a b --frob", "a b --uplink-log"] {
            assert!(parse_link(&words(bad)).is_err(), "{bad}");
        }
    }

    /// Mahimahi's own acceptance rules (myatoi / myatof and each shell's
    /// checks): these vectors it accepts, and these it rejects.
    #[test]
    fn argument_vectors_are_accepted_and_rejected_as_mahimahi_does() {
        let ok = |name: &str, s: &str| plan(name, &words(s));
        let (spec, command) = ok("mm-delay", "40 sh -c true").unwrap();
        assert_eq!(
            (spec.directions[0].delay, spec.directions[1].delay),
            (40 * NS_PER_MS, 40 * NS_PER_MS)
        );
        assert_eq!(command, words("sh -c true"));
        assert!(
            ok("mm-delay", "0").unwrap().1.is_empty(),
            "no command: the user's shell"
        );
        let (spec, _) = ok("mm-loss", "downlink 0.25").unwrap();
        assert_eq!(spec.directions[1].loss, Pattern::Bernoulli(0.25));
        assert!(spec.directions[0].loss.is_none());
        let (spec, _) = ok("mm-onoff", "uplink 2 0.5 cmd").unwrap();
        assert_eq!(
            spec.directions[0].loss,
            Pattern::OnOff {
                mean_on: 2_000_000_000,
                mean_off: 500_000_000
            }
        );
        let (spec, _) = ok("mm-intermittent", "downlink 0 1").unwrap();
        assert_eq!(
            spec.directions[1].loss,
            Pattern::Periodic {
                on: 0,
                off: 1_000_000_000
            }
        );
        for (name, bad) in [
            ("mm-delay", ""),
            ("mm-delay", "forty"),
            ("mm-delay", "-5"),
            ("mm-delay", "2.5"),
            ("mm-loss", "uplink"),
            ("mm-loss", "sideways 0.1"),
            ("mm-loss", "uplink 1.5"),
            ("mm-onoff", "uplink 1"),
            ("mm-onoff", "uplink -1 1"),
            ("mm-intermittent", "uplink 0 0"),
        ] {
            let err = plan(name, &words(bad))
                .err()
                .unwrap_or_else(|| panic!("{name} {bad} was accepted"));
            assert!(err.0.contains("Usage:"), "{name} {bad}: {}", err.0);
        }
    }

    #[test]
    fn help_and_version_print_usage_and_emus_version() {
        let help = |name: &str, s: &str| help_or_version(name, &words(s));
        assert!(help("mm-delay", "--help")
            .unwrap()
            .starts_with("Usage: mm-delay"));
        assert!(help("mm-loss", "-h")
            .unwrap()
            .starts_with("Usage: mm-loss uplink|downlink"));
        assert!(help("mm-link", "up down --once --help")
            .unwrap()
            .contains("--uplink-queue=QUEUE_TYPE"));
        let version = help("mm-onoff", "--version").unwrap();
        assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
        // Past the options, --help belongs to the command.
        assert!(help("mm-delay", "10 grep --help").is_none());
        assert!(help("mm-link", "up down -- cmd --help").is_none());
    }
}
