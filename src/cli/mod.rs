//! `emu [global options] SHELL ARGS [-- SHELL ARGS]... [-- COMMAND ARGS...]`
//! and the tool subcommands (`emu report`, `emu log dump`, `emu queues`,
//! `emu completions`, `emu man`): one clap parser, so every level has its
//! `--help`, and completions and the man page come from the same source.

mod cc_command;
mod congestion_control;
mod ctl_command;
mod dry_run;
mod dynamics_args;
mod log_command;
mod mahimahi;
mod output;
mod report_command;
mod run_command;
mod running;
mod setup_setuid;
mod shell_args;
mod wrapper_command;

use clap::{Args, CommandFactory, Parser, Subcommand};
use emu_core::time::parse_duration;
pub use output::{print_out, UsageError};
pub use running::{run_chain, Globals};
use shells::privilege;
use std::path::PathBuf;

pub const SHELL_NAMES: [&str; 3] = ["delay", "link", "loss"];

/// `emu`'s whole command line: the options of the run, then a shell (whose
/// arguments end at `--`, where the next shell or the command begins) or
/// a tool subcommand.
#[derive(Parser)]
#[command(
    name = "emu",
    version,
    allow_negative_numbers = true,
    about = "A packet-level network emulator: nested delay, link and loss shells around a command",
    override_usage = "emu [OPTIONS] SHELL ARGS [-- SHELL ARGS]... [-- COMMAND [ARGS...]]\n       \
                      emu report RUN... [OPTIONS]\n       \
                      emu run EXPERIMENT.toml [OPTIONS]\n       \
                      emu log dump FILE [--format csv|jsonl] | log header FILE\n       \
                      emu queues | completions SHELL | man\n       \
                      emu setup-setuid [--copy-to DIR]   (as root, once: run emu without sudo)",
    after_help = "Each shell runs what follows it inside a new network namespace. Run `emu SHELL --help` \
                  for a shell's options. Without a COMMAND, your login shell runs inside. The command's \
                  exit status is emu's.\n\n\
                  Example:\n  sudo emu delay 40 -- link 10mbit -- iperf3 -c $EMU_BASE",
    disable_help_subcommand = true,
    subcommand_value_name = "SHELL|TOOL",
    subcommand_help_heading = "Shells and tools"
)]
pub struct Cli {
    #[command(flatten)]
    globals: GlobalArgs,
    #[command(subcommand)]
    command: Option<TopCommand>,
}

/// The options before the first shell, which apply to the whole run.
#[derive(Args)]
struct GlobalArgs {
    /// Write every shell's per-packet log (and a summary) to DIR.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    log: Option<PathBuf>,
    /// Print each direction's packet accounting at exit.
    #[arg(long)]
    stats: bool,
    /// MTU of the emulated path.
    #[arg(long, value_name = "BYTES", default_value = "1500", value_parser = mtu)]
    mtu: u32,
    /// How long before a departure the pump stops sleeping and spins: longer
    /// is more exact and costs more CPU while packets are in flight. By
    /// default it follows this machine's measured wake-up lateness.
    #[arg(long, value_name = "TIME", value_parser = duration)]
    spin: Option<u64>,
    /// How late a write may be, at the 99th percentile, before emu spins to
    /// prevent it: the adaptive spin covers only this machine's wake-up
    /// lateness beyond it. 0 spins for every microsecond (more CPU while
    /// packets are in flight) [default: 20us].
    #[arg(long, value_name = "TIME", value_parser = duration)]
    slack: Option<u64>,
    /// Never let the packet threads sleep: the lowest added latency, but they
    /// keep the cores busy while emu runs.
    #[arg(long)]
    busy_poll: bool,
    /// Have the kernel segment TCP and UDP before emu reads it, one system call
    /// per packet (by default emu takes super-packets and cuts them into real
    /// packets itself).
    #[arg(long)]
    no_offload: bool,
    /// Show a live status line (per shell and direction: rates in and out,
    /// queue, drops, marks), refreshed every second [default: on when stderr
    /// is a terminal and a COMMAND is given].
    #[arg(long, overrides_with = "no_status")]
    status: bool,
    /// Never show the live status line.
    #[arg(long, overrides_with = "status")]
    no_status: bool,
    /// Write a pcapng capture per shell and direction into DIR of the packets
    /// that left the link (raw IP, ns timestamps, sojourn and ECN marks as
    /// packet comments).
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pcap: Option<PathBuf>,
    /// Capture dropped packets too (a second file per direction, with the
    /// drop reason as comment).
    #[arg(long, requires = "pcap")]
    pcap_drops: bool,
    /// Bytes kept of each captured packet.
    #[arg(long, value_name = "BYTES", default_value = "128", value_parser = snaplen)]
    snaplen: u32,
    /// No root needed: build everything in a user namespace of emu's own
    /// (needs unprivileged user namespaces and a /dev/net/tun open to all);
    /// the host's network is out of reach, so run servers with --outside.
    #[arg(long)]
    rootless: bool,
    /// Run the shell command CMD around the outermost shell (on the host, or
    /// in the --rootless namespace) while the command runs, e.g.
    /// --outside 'iperf3 -s'; repeatable.
    #[arg(long, value_name = "CMD")]
    outside: Vec<String>,
    /// Where the command's DNS lookups go: `path` across the emulated path
    /// like any other packet (they see its delay and loss), or `host`
    /// straight to the host's resolver. Either way names resolve as on the
    /// host, even with a resolver on a loopback address.
    #[arg(long, value_name = "ROUTE", value_enum, default_value = "path")]
    dns: DnsArg,
    /// Sample the command's TCP sockets (TCP_INFO: srtt, cwnd, ...) every
    /// INTERVAL [default: 10ms] into the --log directory (tcp/tcp_info.csv,
    /// as `emu run` writes), for `emu report` to show beside the packets.
    #[arg(long, value_name = "INTERVAL", num_args = 0..=1, require_equals = true,
          default_missing_value = "10ms", value_parser = sample_interval, requires = "log")]
    tcp_info: Option<u64>,
    /// The command's default congestion control: the first NAME (one of the
    /// kernel's, e.g. cubic, or emu's own: dctcp, prague, reno-sce,
    /// cubic-sce, dctcp-sce, relentless; see emu cc). emu's own named are loaded for the
    /// run, with their helpers on the command's device and the host's end of
    /// the path, so a socket may also choose them (iperf3 -C prague);
    /// repeatable, or NAME,NAME. Settings after one of emu's apply to the
    /// command's connections: --cc "prague ecn_fallback=1" (emu cc NAME
    /// lists them). Without it: the host's default.
    #[arg(long, value_name = "NAME", value_delimiter = ',', value_parser = cc_choice)]
    cc: Vec<String>,
    /// Check the command line: read every shell, build its links (queues,
    /// traces, schedules, loss models) and describe them, then exit without
    /// creating anything (EMU_DRY_RUN=1 does the same for Mahimahi's commands).
    #[arg(long)]
    dry_run: bool,
    /// Let other programs steer the path while it runs: a Unix socket at
    /// PATH (the user's alone; `emu ctl PATH ...`), or tcp:PORT on loopback
    /// (tcp:ADDRESS:PORT elsewhere). Changes are recorded in the --log
    /// directory's control.jsonl.
    #[arg(long, value_name = "PATH", value_parser = control_address)]
    control: Option<shells::control::Address>,
    /// Take the changes of a control.jsonl a controlled run recorded, at
    /// their run times: the closed-loop run rerun as a schedule.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    control_replay: Option<PathBuf>,
}

fn control_address(text: &str) -> Result<shells::control::Address, String> {
    shells::control::Address::parse(text)
}

/// `--dns ROUTE`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum DnsArg {
    Path,
    Host,
}

// Parsed once per run: the size of the shell variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum TopCommand {
    #[command(flatten)]
    Shell(shell_args::ShellCommand),
    /// Numbers and pictures from packet logs (summary.json, series.json, figures, index.html).
    Report(report_command::ReportArgs),
    /// Run an experiment: hosts on two sides of a bottleneck, flows between them, measured outcomes.
    Run(run_command::RunArgs),
    /// Run a Pantheon scheme's wrapper as `emu run` does (its deps, setup, run_first).
    Wrapper(wrapper_command::WrapperArgs),
    /// Make emu and the mm-* commands setuid root, so users run them without sudo.
    SetupSetuid(setup_setuid::SetupArgs),
    /// Read emu's per-packet logs.
    Log(log_command::LogArgs),
    /// Steer a running path through its control socket (emu --control PATH ...).
    Ctl(ctl_command::CtlArgs),
    /// List the queue disciplines and their options.
    Queues,
    /// List the congestion controls usable here: the kernel's and emu's own;
    /// with NAME, one of emu's and the settings it takes.
    Cc {
        /// One of emu's congestion controls (prague, dctcp, ...).
        name: Option<String>,
    },
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  emu completions bash > ~/.local/share/bash-completion/completions/emu\n  \
                      emu completions zsh > ~/.zfunc/_emu\n  \
                      emu completions fish > ~/.config/fish/completions/emu.fish"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print emu's man page (roff), or write one page per subcommand into DIR.
    #[command(
        after_help = "Examples:\n  emu man | man -l -\n  emu man --dir /usr/local/share/man/man1"
    )]
    Man {
        /// Write emu.1, emu-delay.1, emu-report.1, ... into DIR instead.
        #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
        dir: Option<PathBuf>,
    },
}

fn mtu(text: &str) -> Result<u32, String> {
    text.parse()
        .ok()
        .filter(|m| (576..=65_535).contains(m))
        .ok_or_else(|| "expected a whole number of bytes from 576 to 65535".to_string())
}

fn duration(text: &str) -> Result<u64, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn sample_interval(text: &str) -> Result<u64, String> {
    match parse_duration(text).map_err(|e| e.to_string())? {
        0 => Err("the interval must be above 0 (e.g. 10ms)".to_string()),
        ns => Ok(ns),
    }
}

/// A congestion control of the kernel's or one of emu's, the latter with
/// its settings if any, written back in emu's spelling
/// (`prague ecn_fallback=1`).
fn cc_choice(text: &str) -> Result<String, String> {
    let (name, settings) = endpoints::parameters::split(text);
    if let Some(endpoint) = endpoints::find(name) {
        endpoints::parameters::parse(endpoint, settings)?;
        return Ok(if settings.is_empty() {
            endpoint.name.to_string()
        } else {
            format!("{} {settings}", endpoint.name)
        });
    }
    let kernels = endpoints::kernel::available();
    if !kernels.iter().any(|k| k == name) {
        return Err(format!(
            "'{name}' is not a congestion control of this kernel ({}) nor one of emu's ({}); see emu cc",
            kernels.join(", "),
            endpoints::ENDPOINTS.map(|e| e.name).join(", ")
        ));
    }
    if !settings.is_empty() {
        return Err(endpoints::parameters::kernels_refused(name, settings));
    }
    Ok(name.to_string())
}

fn snaplen(text: &str) -> Result<u32, String> {
    text.parse()
        .ok()
        .filter(|n| (20..=262_144).contains(n))
        .ok_or_else(|| "expected a whole number of bytes from 20 to 262144".to_string())
}

/// One line for a clap error, naming the input and where to read more:
/// `delay: unexpected argument 'link' (separate shells with --...); see
/// emu delay --help`. `words` are the words that were parsed.
// Long: one arm per kind of parse error, each with the message it gets.
pub fn clap_error(e: &clap::Error, words: &[String]) -> UsageError {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => Some(v.join(", ")),
        _ => None,
    };
    let rendered = e.render().to_string();
    let command = subcommand_path(words).join(" ");
    let option = |arg: String| arg.split(' ').next().unwrap_or_default().to_string();
    let first_line = rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string();
    let mut message = match (e.kind(), text(ContextKind::InvalidArg)) {
        // A value such as `-5%` or `-5mbit` where an option's values take
        // no hyphen (one would take the `--` that ends a shell): clap
        // reads it as the short option `-5`; the message quotes the word.
        (ErrorKind::UnknownArgument, Some(arg))
            if arg.starts_with('-') && arg[1..].starts_with(|c: char| c.is_ascii_digit()) =>
        {
            let word = words.iter().find(|w| w.starts_with(&arg)).unwrap_or(&arg);
            format!("'{word}' is not an option, and no value here is negative")
        }
        (ErrorKind::UnknownArgument, Some(arg)) if arg.starts_with('-') => {
            format!("unknown option '{arg}'")
        }
        (ErrorKind::UnknownArgument, Some(arg)) => format!("unexpected argument '{arg}'"),
        (ErrorKind::ValueValidation, Some(arg)) => format!(
            "{} '{}': {}",
            option(arg),
            text(ContextKind::InvalidValue).unwrap_or_default(),
            std::error::Error::source(e).map_or(first_line.clone(), |s| s.to_string())
        ),
        (ErrorKind::InvalidValue, Some(arg))
            if text(ContextKind::InvalidValue).is_none_or(|v| v.is_empty()) =>
        {
            format!("{} needs a value", option(arg))
        }
        (ErrorKind::MissingRequiredArgument, Some(args)) => format!("missing {args}"),
        (ErrorKind::InvalidValue, Some(arg)) => match text(ContextKind::ValidValue) {
            Some(valid) => format!(
                "{} '{}': expected one of {valid}",
                option(arg),
                text(ContextKind::InvalidValue).unwrap_or_default()
            ),
            None => first_line.clone(),
        },
        (ErrorKind::InvalidSubcommand, _) if command.is_empty() => {
            return UsageError(format!(
                "'{}' is not a shell or a subcommand (shells: {}; see emu --help)",
                text(ContextKind::InvalidSubcommand).unwrap_or_default(),
                SHELL_NAMES.join(", ")
            ))
        }
        (ErrorKind::InvalidSubcommand, _) => format!(
            "'{}' is not a subcommand",
            text(ContextKind::InvalidSubcommand).unwrap_or_default()
        ),
        (ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, _)
            if !command.is_empty() =>
        {
            let mut found = Cli::command();
            for word in command.split(' ') {
                found = found.find_subcommand(word).cloned().unwrap_or(found);
            }
            let names: Vec<String> = found
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            format!("needs a subcommand: {}", names.join(" or "))
        }
        _ => first_line.clone(),
    };
    // emu's own options (--log, --spin, ...): an error in one given before
    // the first shell is emu's, not that shell's; one given after a shell
    // is in the wrong place.
    let global = text(ContextKind::InvalidArg)
        .map(option)
        .and_then(|o| o.strip_prefix("--").map(String::from))
        .is_some_and(|long| {
            Cli::command()
                .get_arguments()
                .any(|a| a.get_long() == Some(&long))
        });
    // An unknown option before the first shell or tool is emu's too.
    let first = subcommand_path(words).into_iter().next();
    let before_first = text(ContextKind::InvalidArg)
        .map(option)
        .is_some_and(|arg| {
            let at = |word: &str| words.iter().position(|w| w == word);
            let given = words
                .iter()
                .position(|w| w == &arg || w.starts_with(&format!("{arg}=")));
            matches!((given, first.as_deref().and_then(at)), (Some(g), Some(f)) if g < f)
        });
    if global && e.kind() == ErrorKind::UnknownArgument {
        message += " (an option of emu itself: give it before the first shell)";
    } else if global || before_first {
        return UsageError(format!("{message} (see emu --help)"));
    }
    let is_shell = SHELL_NAMES.contains(&command.as_str());
    if is_shell
        && words
            .iter()
            .skip_while(|w| *w != &command)
            .skip(1)
            .take_while(|w| *w != "--")
            .any(|w| SHELL_NAMES.contains(&w.as_str()))
    {
        message += " (separate shells with --, e.g. emu delay 40 -- link 10mbit)";
    }
    UsageError(if command.is_empty() {
        format!("{message} (see emu --help)")
    } else {
        format!("{command}: {message}; see emu {command} --help")
    })
}

/// The subcommands `words` name, outermost first (`log dump`, `delay`),
/// found as clap would: skipping options and their values, stopping at
/// `--` (past which the next shell or the command begins).
fn subcommand_path(words: &[String]) -> Vec<String> {
    let mut command = Cli::command();
    let mut path = Vec::new();
    let mut skip_value = false;
    for word in words {
        if word == "--" {
            break;
        }
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            skip_value = !long.contains('=')
                && command
                    .get_arguments()
                    .any(|a| a.get_long() == Some(long) && a.get_action().takes_values());
            continue;
        }
        if word.starts_with('-') {
            continue;
        }
        if let Some(sub) = command.find_subcommand(word).cloned() {
            path.push(word.clone());
            command = sub;
        }
    }
    path
}

impl From<GlobalArgs> for Globals {
    fn from(a: GlobalArgs) -> Globals {
        Globals {
            log_dir: a.log,
            stats: a.stats,
            mtu: a.mtu,
            spin: a.spin,
            slack: a.slack.unwrap_or(shells::DEFAULT_SLACK),
            offload: !a.no_offload,
            busy_poll: a.busy_poll,
            status: match (a.status, a.no_status) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            pcap_dir: a.pcap,
            capture: emu_core::capture::CaptureOptions {
                snaplen: a.snaplen,
                drops: a.pcap_drops,
            },
            rootless: a.rootless,
            outside: a.outside,
            dns: match a.dns {
                DnsArg::Path => shells::DnsRoute::Path,
                DnsArg::Host => shells::DnsRoute::Host,
            },
            tcp_info: a.tcp_info,
            cc: a.cc,
            dry_run: a.dry_run,
            control: a.control,
            control_replay: a.control_replay,
        }
    }
}

pub fn main(args: Vec<String>) -> i32 {
    // Called as mm-delay, mm-link, ...: Mahimahi's commands.
    let program = std::env::args_os().next().unwrap_or_default();
    let name = std::path::Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if mahimahi::COMMANDS.contains(&name.as_str()) {
        return mahimahi::main(&name, args);
    }
    match dispatch(args) {
        Ok(code) => code,
        Err(UsageError(message)) => {
            eprintln!("emu: {message}");
            2
        }
    }
}

fn dispatch(args: Vec<String>) -> Result<i32, UsageError> {
    let command_line = std::iter::once("emu".to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let cli =
        match Cli::try_parse_from(std::iter::once("emu".to_string()).chain(args.iter().cloned())) {
            Ok(cli) => cli,
            Err(e) if !e.use_stderr() => {
                // --help or --version, at any level.
                print_out(&e);
                return Ok(0);
            }
            Err(e) => return Err(clap_error(&e, &args)),
        };
    let globals = Globals::from(cli.globals);
    let builds = matches!(
        cli.command,
        Some(TopCommand::Shell(_) | TopCommand::Run(_) | TopCommand::SetupSetuid(_))
    );
    if !builds {
        // A setuid emu needs root only to build shells and experiments.
        privilege::drop_for_good().map_err(UsageError)?;
    }
    match cli.command {
        None => Err(UsageError(
            "nothing to run: give a shell such as 'delay 40' (see emu --help)".into(),
        )),
        Some(TopCommand::Shell(first)) => run_shells(first, globals, command_line),
        Some(TopCommand::Report(report)) => report_command::run(report),
        Some(TopCommand::Run(_)) if privilege::origin() == privilege::Origin::Setuid => {
            Err(UsageError(
                "run: a setuid emu runs shells only: an experiment's programs and results \
                 would run and be written as root; run it with sudo (sudo emu run FILE)"
                    .into(),
            ))
        }
        Some(TopCommand::Run(run)) => run_command::run(run),
        Some(TopCommand::Log(log)) => log_command::run(log),
        Some(TopCommand::Ctl(ctl)) => ctl_command::run(ctl),
        Some(TopCommand::Wrapper(wrapper)) => wrapper_command::run(wrapper),
        Some(TopCommand::SetupSetuid(setup)) => setup_setuid::run(setup),
        Some(TopCommand::Cc { name: None }) => {
            print_out(cc_command::text());
            Ok(0)
        }
        Some(TopCommand::Cc { name: Some(name) }) => {
            print_out(cc_command::one(&name)?);
            Ok(0)
        }
        Some(TopCommand::Queues) => {
            print_out(queues_text());
            Ok(0)
        }
        Some(TopCommand::Completions { shell }) => {
            // Into memory first: the generator panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "emu", &mut script);
            print_out(String::from_utf8_lossy(&script));
            Ok(0)
        }
        Some(TopCommand::Man { dir }) => man_page(dir),
    }
}

/// `emu man`: the page of `emu` itself on stdout, or with `--dir` one page
/// per command (emu.1, emu-delay.1, emu-log-dump.1, ...) in a directory.
fn man_page(dir: Option<PathBuf>) -> Result<i32, UsageError> {
    let command = Cli::command();
    let result = match &dir {
        None => {
            let mut page = Vec::new();
            let rendered = clap_mangen::Man::new(command).render(&mut page);
            print_out(String::from_utf8_lossy(&page));
            rendered
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(command, dir))
        }
    };
    match result {
        Ok(()) => Ok(0),
        Err(e) => {
            let place = dir.map_or("stdout".into(), |d| d.display().to_string());
            eprintln!("emu: writing the man page to {place}: {e}");
            Ok(1)
        }
    }
}

/// Splits `SHELL ARGS -- SHELL ARGS -- COMMAND...` into shell segments and
/// the command. The first segment that does not start with a shell name is
/// the command, with every word after it, `--` included.
pub fn split_segments(words: &[String]) -> (Vec<Vec<String>>, Vec<String>) {
    let mut shells = Vec::new();
    let mut start = 0;
    loop {
        let end = words[start..]
            .iter()
            .position(|w| w == "--")
            .map_or(words.len(), |p| start + p);
        let segment = &words[start..end];
        if segment
            .first()
            .is_some_and(|w| SHELL_NAMES.contains(&w.as_str()))
        {
            shells.push(segment.to_vec());
            if end == words.len() {
                return (shells, Vec::new());
            }
            start = end + 1;
        } else {
            return (shells, words[start..].to_vec());
        }
    }
}

fn run_shells(
    first: shell_args::ShellCommand,
    globals: Globals,
    command_line: String,
) -> Result<i32, UsageError> {
    match chain(first)? {
        Some((specs, command)) => {
            run_chain(specs, command, globals, command_line).map(|finished| finished.status)
        }
        None => Ok(0),
    }
}

/// Every shell's specification, outermost first, and the command.
type Chain = (Vec<shells::ShellSpec>, Vec<String>);

/// The run's [`Chain`]: the first shell as the top-level parser read it,
/// each later one from its segment after a `--`. None when a later
/// shell's `--help` was printed.
fn chain(mut first: shell_args::ShellCommand) -> Result<Option<Chain>, UsageError> {
    let rest = first.take_rest();
    let mut specs = vec![first.spec()?];
    let (segments, command) = split_segments(&rest);
    for segment in &segments {
        let parsed = shell_args::parse(segment).map_err(|e| match e {
            shell_args::SegmentError::Usage(e) => e,
            shell_args::SegmentError::Clap(e) => clap_error(&e, segment),
        })?;
        match parsed {
            shell_args::Parsed::Spec(spec) => specs.push(*spec),
            shell_args::Parsed::Printed => return Ok(None),
        }
    }
    Ok(Some((specs, command)))
}

fn queues_text() -> String {
    let mut text =
        String::from("Queue disciplines (use with link --queue \"NAME [OPTION VALUE]...\"):\n\n");
    text += "Bytes: every byte limit, quantum and byte-mode option counts frame bytes, the\n\
length a Linux qdisc is given: by default (link --l2 none) the IP packet, as the kernel\n\
on a TUN device; with link --l2 ethernet the IP packet + 14 (the MAC header), as the\n\
kernel on an Ethernet device, so a tc line copied from an Ethernet testbed charges what\n\
it charged there (cake: IP + 14 without 'overhead', MTU time of 1514 bytes). See\n\
docs/guide.md, \"What a byte is\".\n";
    for d in aqm::catalogue() {
        text += &format!("\n  {:<10} {}\n", d.name, d.summary);
        for (keyword, form, default, meaning) in d.all_options() {
            text += &format!(
                "      {:<18} {meaning} [default: {default}]\n",
                format!("{keyword} {form}")
            );
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// The help states the slack's default in words; it must be the one
    /// the shells use, and a chosen slack must reach them.
    #[test]
    fn the_slack_default_in_the_help_is_the_one_used() {
        let help = Cli::command().render_long_help().to_string();
        let default = format!("[default: {}us]", shells::DEFAULT_SLACK / 1_000);
        assert!(help.contains(&default), "{help}");
        let parse = |args: &[&str]| -> Globals {
            Cli::try_parse_from(args).expect("parses").globals.into()
        };
        assert_eq!(parse(&["emu"]).slack, shells::DEFAULT_SLACK);
        assert_eq!(parse(&["emu", "--slack", "5us"]).slack, 5_000);
        assert_eq!(parse(&["emu", "--slack", "0"]).slack, 0);
    }

    #[test]
    fn segments_and_command_split_at_the_first_non_shell() {
        let (shells, command) = split_segments(&words("delay 40 -- link 10mbit -- sh -c x -- y"));
        assert_eq!(shells, vec![words("delay 40"), words("link 10mbit")]);
        assert_eq!(command, words("sh -c x -- y"));
        let (shells, command) = split_segments(&words("delay 40"));
        assert_eq!(shells.len(), 1);
        assert!(command.is_empty());
        let (_, command) = split_segments(&words("loss 0.1 -- delay"));
        assert!(command.is_empty());
    }

    /// A whole command line's shells and command, read as `emu` reads it.
    fn shells_of(line: &str) -> Result<Chain, String> {
        let args = words(line);
        let cli = Cli::try_parse_from(std::iter::once("emu".to_string()).chain(args.clone()))
            .map_err(|e| clap_error(&e, &args).0)?;
        match cli.command {
            Some(TopCommand::Shell(first)) => chain(first)
                .map_err(|e| e.0)?
                .ok_or_else(|| "printed".to_string()),
            _ => Err(format!("{line}: not a shell")),
        }
    }

    /// An option of several values (`--gemodel P [R ...]`, `--state P13
    /// [...]`) ends at the `--` after it, with fewer values than it may
    /// take, in the first shell (read by the top-level parser) as in a
    /// later one (read from its segment).
    #[test]
    fn options_of_several_values_stop_at_the_double_dash() {
        let gilbert = link::Pattern::GilbertElliott {
            p: 0.01,
            r: 0.3,
            bad_loss: 1.0,
            good_loss: 0.0,
        };
        let four_state = link::Pattern::FourState {
            p13: 0.01,
            p31: 0.3,
            p32: 0.0,
            p23: 1.0,
            p14: 0.0,
        };
        for (line, loss_at, pattern, command) in [
            ("loss --gemodel 1% 30% -- delay 40", 0, &gilbert, ""),
            (
                "loss --gemodel 1% 30% -- delay 40 -- sh -c x",
                0,
                &gilbert,
                "sh -c x",
            ),
            (
                "delay 40 -- loss --gemodel 1% 30% -- sh -c x",
                1,
                &gilbert,
                "sh -c x",
            ),
            ("loss --state 1% 30% -- delay 40", 0, &four_state, ""),
            (
                "delay 40 -- loss --state 1% 30% -- true",
                1,
                &four_state,
                "true",
            ),
            (
                "loss --gemodel 1% 30% --seed 5 -- delay 40",
                0,
                &gilbert,
                "",
            ),
        ] {
            let (specs, rest) = shells_of(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(specs.len(), 2, "{line}");
            assert_eq!(&specs[loss_at].directions[0].loss, pattern, "{line}");
            assert_eq!(&specs[loss_at].directions[1].loss, pattern, "{line}");
            assert_eq!(specs[1 - loss_at].directions[0].delay, 40_000_000, "{line}");
            assert_eq!(rest, words(command), "{line}");
        }
    }

    #[test]
    fn usage_errors_name_the_input() {
        let err = |s: &str| dispatch(words(s)).err().unwrap().0;
        assert!(err("--frobnicate delay 4").contains("unknown option '--frobnicate'"));
        assert!(err("teleport 4").contains("'teleport' is not a shell"));
        assert!(err("--mtu 9 delay 4").contains("--mtu '9'"));
        assert!(err("").contains("nothing to run"));
        let negative = err("loss --gemodel 1% -5% -- true");
        assert!(negative.contains("'-5%' is not an option"), "{negative}");
    }

    /// emu's own options are emu's: an error in one given before the
    /// first shell names no shell, one given after a shell says where it
    /// goes; negative numbers are values, not options.
    #[test]
    fn usage_errors_put_the_blame_where_it_belongs() {
        let err = |s: &str| dispatch(words(s)).err().unwrap().0;
        let mtu = err("--mtu 9 delay 4");
        assert!(
            !mtu.contains("delay") && mtu.contains("see emu --help"),
            "{mtu}"
        );
        let unknown = err("--frobnicate delay 4");
        assert!(!unknown.contains("delay:"), "{unknown}");
        let late = err("link 10mbit --stats");
        assert!(
            late.contains("link:") && late.contains("before the first shell"),
            "{late}"
        );
        let negative = err("link 10mbit --overhead -100");
        assert!(negative.contains("--overhead '-100'"), "{negative}");
        let seed = err("loss 1% --seed -1");
        assert!(seed.contains("--seed '-1'"), "{seed}");
        let log = err("log");
        assert!(
            log.contains("log: needs a subcommand: dump or header"),
            "{log}"
        );
    }
}
