//! Running a chain of shells around a command with the run's options, as
//! every front end does: emu's own shells and Mahimahi's commands.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::congestion_control;
use super::output::UsageError;

/// The options of the run, resolved.
pub struct Globals {
    pub log_dir: Option<PathBuf>,
    pub stats: bool,
    pub mtu: u32,
    /// None: adapt to the machine (see `shells::Timing`).
    pub spin: Option<u64>,
    /// The lateness accepted before spinning (see `shells::Timing`).
    pub slack: u64,
    pub offload: bool,
    pub busy_poll: bool,
    /// The live status line: forced on or off, or None to decide from
    /// whether stderr is a terminal.
    pub status: Option<bool>,
    /// `--pcap DIR`, `--snaplen`, `--pcap-drops`.
    pub pcap_dir: Option<PathBuf>,
    pub capture: emu_core::capture::CaptureOptions,
    pub rootless: bool,
    pub outside: Vec<String>,
    /// `--dns`: where the command's lookups go.
    pub dns: shells::DnsRoute,
    /// `--tcp-info[=INTERVAL]`, in ns.
    pub tcp_info: Option<u64>,
    /// `--cc NAME`: the command's default congestion control (the first),
    /// and emu's own to load for the run.
    pub cc: Vec<String>,
    /// `--dry-run`: build and describe the links, create nothing.
    pub dry_run: bool,
    /// `--control`: where controllers steer the path.
    pub control: Option<shells::control::Address>,
    /// `--control-replay`: a recorded control.jsonl taken as a schedule.
    pub control_replay: Option<PathBuf>,
}

impl Default for Globals {
    fn default() -> Self {
        Globals {
            log_dir: None,
            stats: false,
            mtu: 1500,
            spin: None,
            slack: shells::DEFAULT_SLACK,
            offload: true,
            busy_poll: false,
            status: None,
            pcap_dir: None,
            capture: Default::default(),
            rootless: false,
            outside: Vec::new(),
            dns: shells::DnsRoute::Path,
            tcp_info: None,
            cc: Vec::new(),
            dry_run: false,
            control: None,
            control_replay: None,
        }
    }
}

/// Runs shells around a command, as every front end does: a failure to
/// set the shells up is reported on stderr with status 1.
pub fn run_chain(
    specs: Vec<shells::ShellSpec>,
    command: Vec<String>,
    globals: Globals,
    command_line: String,
) -> Result<shells::Finished, UsageError> {
    if globals.dry_run || super::dry_run::asked_by_environment() {
        let status = super::dry_run::check(&specs, &command, globals.mtu);
        return Ok(shells::Finished {
            status,
            logs: Vec::new(),
        });
    }
    // On by default only where someone watches and no interactive shell
    // shares the screen with it.
    let status = globals
        .status
        .unwrap_or_else(|| !command.is_empty() && std::io::stderr().is_terminal());
    // Loaded before the shells (and their guardian) exist; unregistered
    // when `_loaded` goes, after the shells are down.
    let loaded = congestion_control::default_for(&globals.cc)
        .and_then(|default| Ok((default, load_congestion_controls(&globals.cc)?)));
    let (cc_default, for_command) = match loaded {
        Ok(loaded) => loaded,
        Err(message) => {
            eprintln!("emu: {message}");
            return Ok(shells::Finished {
                status: 1,
                logs: Vec::new(),
            });
        }
    };
    let at_start = congestion_control::describe_here(&cc_default);
    let command_sysctls = for_command.sysctls(cc_default.kernel_name);
    let endpoints::sessions::ForCommand {
        loaded: _loaded,
        helpers: device_helpers,
    } = for_command;
    let options = shells::RunOptions {
        status,
        command,
        log_dir: globals.log_dir,
        timing: shells::Timing {
            spin: globals.spin,
            slack: globals.slack,
            busy_poll: globals.busy_poll,
        },
        mtu: globals.mtu,
        stats: globals.stats,
        offload: globals.offload,
        command_line,
        pcap: globals.pcap_dir.map(|dir| shells::Pcap {
            dir,
            options: globals.capture,
        }),
        rootless: globals.rootless,
        outside: globals.outside,
        dns: globals.dns,
        tcp_info: globals.tcp_info.map(std::time::Duration::from_nanos),
        command_sysctls,
        at_start,
        device_helpers,
        control: globals.control,
        control_replay: globals.control_replay,
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

/// `--cc`: loads emu's congestion controls among `choices` for a chain of
/// shells (see `endpoints::sessions::ForCommand`), saying which
/// implementation of each runs.
fn load_congestion_controls(choices: &[String]) -> Result<endpoints::sessions::ForCommand, String> {
    use endpoints::sessions::{CommandError, ForCommand};
    ForCommand::load(choices, shells::netns::namespace_cookie_here, |line| {
        eprintln!("emu: {line}")
    })
    .map_err(|e| match e {
        CommandError::Settings(message) => message,
        CommandError::Loading(message) => format!("--cc: {message}"),
    })
}
