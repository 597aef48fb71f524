//! `emu [global options] SHELL ARGS [-- SHELL ARGS]... [-- COMMAND ARGS...]`
//! and the tool subcommands (`emu report`, `emu log dump`, `emu queues`).

mod log_command;
mod mahimahi;
mod report_command;
mod shell_args;

use emu_core::time::{parse_duration, NS_PER_US};
use std::path::PathBuf;

pub const SHELL_NAMES: [&str; 3] = ["delay", "link", "loss"];

const USAGE: &str = "\
emu: a packet-level network emulator

Usage:
  emu [OPTIONS] SHELL ARGS [-- SHELL ARGS]... [-- COMMAND [ARGS...]]
  emu report RUN... [--out DIR] [--json] [--bin TIME] [--from TIME] [--to TIME]
  emu log dump FILE [--format csv|json]
  emu queues

Shells (each runs what follows inside a new network namespace):
  delay TIME      one-way delay in both directions (40, 0.25ms, 500us)
  link RATE       a bottleneck with a queue (10mbit, 1.5gbit, or traces)
  loss PROB       independent random loss (0.01 = 1%)
Run `emu SHELL --help` for a shell's options. Without a COMMAND, your login
shell runs inside. The command's exit status is emu's.

Options:
  --log DIR       write every shell's per-packet log (and a summary) to DIR
  --stats         print each direction's packet accounting at exit
  --mtu BYTES     MTU of the emulated path [default: 1500]
  --spin TIME     how long before a departure the pump stops sleeping and
                  spins: longer is more exact and costs more CPU while
                  packets are in flight [default: 500us]
  --busy-poll     never let the packet threads sleep: the lowest added
                  latency, but they keep the cores busy while emu runs
  --no-offload    have the kernel segment TCP before emu reads it, one
                  system call per packet (by default emu takes TCP
                  super-packets and cuts them into real packets itself)
  -h, --help      this text
  -V, --version   the version

Example:
  sudo emu delay 40 -- link 10mbit -- iperf3 -c $EMU_BASE
";

/// A user mistake on the command line: one message, exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

/// Parses a tool subcommand's words (`emu log ...`, `emu report ...`);
/// None when clap printed help or the version instead.
fn parse_tool_args<T: clap::Parser>(name: &str, args: &[String]) -> Result<Option<T>, UsageError> {
    match T::try_parse_from(std::iter::once(name.to_string()).chain(args.iter().cloned())) {
        Ok(cli) => Ok(Some(cli)),
        Err(e) if !e.use_stderr() => {
            print!("{e}");
            Ok(None)
        }
        Err(e) => Err(UsageError(
            e.to_string()
                .trim_start_matches("error: ")
                .trim()
                .to_string(),
        )),
    }
}

/// The options before the first shell, which apply to the whole run.
pub struct Globals {
    pub log_dir: Option<PathBuf>,
    pub stats: bool,
    pub mtu: u32,
    pub spin: u64,
    pub offload: bool,
    pub busy_poll: bool,
}

impl Default for Globals {
    fn default() -> Self {
        Globals {
            log_dir: None,
            stats: false,
            mtu: 1500,
            spin: 500 * NS_PER_US,
            offload: true,
            busy_poll: false,
        }
    }
}

pub fn main(args: Vec<String>) -> i32 {
    // Called as mm-delay, mm-link, ...: Mahimahi's commands.
    let program = std::env::args().next().unwrap_or_default();
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
    let mut globals = Globals::default();
    let mut rest = args.into_iter().peekable();
    while let Some(arg) = rest.peek().cloned() {
        if !arg.starts_with('-') || arg == "--" {
            break;
        }
        rest.next();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| rest.next())
                .ok_or_else(|| UsageError(format!("{name} needs a value (see emu --help)")))
        };
        match flag.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(0);
            }
            "-V" | "--version" => {
                println!("emu {}", env!("CARGO_PKG_VERSION"));
                return Ok(0);
            }
            "--log" => globals.log_dir = Some(PathBuf::from(value("--log")?)),
            "--stats" => globals.stats = true,
            "--no-offload" => globals.offload = false,
            "--busy-poll" => globals.busy_poll = true,
            "--mtu" => {
                let text = value("--mtu")?;
                globals.mtu = text
                    .parse()
                    .ok()
                    .filter(|m| (576..=65_535).contains(m))
                    .ok_or_else(|| {
                        UsageError(format!(
                            "--mtu '{text}': expected a whole number of bytes from 576 to 65535"
                        ))
                    })?;
            }
            "--spin" => {
                let text = value("--spin")?;
                globals.spin =
                    parse_duration(&text).map_err(|e| UsageError(format!("--spin: {e}")))?;
            }
            other => {
                return Err(UsageError(format!(
                    "unknown option '{other}' (see emu --help)"
                )))
            }
        }
    }
    let rest: Vec<String> = rest.collect();
    match rest.first().map(String::as_str) {
        None => Err(UsageError(
            "nothing to run: give a shell such as 'delay 40' (see emu --help)".into(),
        )),
        Some("log") => log_command::run(&rest[1..]),
        Some("report") => report_command::run(&rest[1..]),
        Some("queues") => {
            print!("{}", queues_text());
            Ok(0)
        }
        Some(word) if SHELL_NAMES.contains(&word) => run_shells(rest, globals, command_line),
        Some(word) => Err(UsageError(format!(
            "'{word}' is not a shell or a subcommand (shells: {}; see emu --help)",
            SHELL_NAMES.join(", ")
        ))),
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
    words: Vec<String>,
    globals: Globals,
    command_line: String,
) -> Result<i32, UsageError> {
    let (segments, command) = split_segments(&words);
    let mut specs = Vec::new();
    for segment in &segments {
        match shell_args::parse(segment)? {
            shell_args::Parsed::Spec(spec) => specs.push(*spec),
            shell_args::Parsed::Printed => return Ok(0),
        }
    }
    run_chain(specs, command, globals, command_line).map(|finished| finished.status)
}

/// Runs shells around a command, as every front end does: a failure to
/// set the shells up is reported on stderr with status 1.
pub fn run_chain(
    specs: Vec<shells::ShellSpec>,
    command: Vec<String>,
    globals: Globals,
    command_line: String,
) -> Result<shells::Finished, UsageError> {
    let options = shells::RunOptions {
        command,
        log_dir: globals.log_dir,
        timing: shells::Timing {
            spin: globals.spin,
            busy_poll: globals.busy_poll,
        },
        mtu: globals.mtu,
        stats: globals.stats,
        offload: globals.offload,
        command_line,
    };
    match shells::run(specs, options) {
        Ok(finished) => Ok(finished),
        Err(e) => {
            eprintln!("emu: {e}");
            Ok(shells::Finished {
                status: 1,
                logs: Vec::new(),
            })
        }
    }
}

fn queues_text() -> String {
    let mut text =
        String::from("Queue disciplines (use with link --queue \"NAME [OPTION VALUE]...\"):\n");
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

    #[test]
    fn usage_errors_name_the_input() {
        let err = |s: &str| dispatch(words(s)).err().unwrap().0;
        assert!(err("--frobnicate delay 4").contains("unknown option '--frobnicate'"));
        assert!(err("teleport 4").contains("'teleport' is not a shell"));
        assert!(err("--mtu 9 delay 4").contains("--mtu '9'"));
        assert!(err("").contains("nothing to run"));
    }
}
