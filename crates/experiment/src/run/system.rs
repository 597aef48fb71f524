//! Everything `emu run` asks of the operating system itself, in one place:
//! the flows' processes (spawned in a host's namespace, alone or in a
//! process group of their own, and stopped with it; what is left in the
//! hosts killed when a run ends), what the kernel
//! offers (its congestion controls, read by `endpoints::kernel`), and the
//! short programs asked before and between runs (a Pantheon wrapper's
//! `run_first`, `deps` and `setup_after_reboot`, dpkg-query), each run to
//! its end or stopped at a limit; what they answer is read by their
//! callers. The hosts, links and packets are
//! `shells`'; emu's congestion controls are `endpoints`'. Rule: no other
//! module of `experiment` starts, signals or kills a process; cost: a
//! caller that wants a new way of running one adds it here.

use crate::file::CongestionControls;
use shells::dumbbell::Host;
use shells::netns::{self, NetNs};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// A program to run in a host, and where its output goes.
#[derive(Debug, Clone)]
pub struct CommandLine {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// The congestion controls of this kernel (as `endpoints::kernel` reads
/// them for loading emu's own).
pub fn congestion_controls() -> CongestionControls {
    CongestionControls {
        available: endpoints::kernel::available(),
        allowed: endpoints::kernel::allowed(),
    }
}

/// Starts `command` inside `namespace`.
pub fn spawn(namespace: &NetNs, command: &CommandLine) -> Result<tokio::process::Child, String> {
    spawn_with(namespace, command, false)
}

/// Starts `command` inside `namespace` in a process group of its own, so
/// whatever it starts (a scheme's wrapper runs the scheme's binaries) is
/// stopped with it by `stop_group`. Its stdin is an empty pipe held open
/// while the child is held: a scheme that reads its stdin (ledbat's
/// `ucat -l` sends what it reads) would end at /dev/null's end of file.
pub fn spawn_group(
    namespace: &NetNs,
    command: &CommandLine,
) -> Result<tokio::process::Child, String> {
    spawn_with(namespace, command, true)
}

/// Stops a child started by `spawn_group` and everything in its group:
/// SIGTERM first (a wrapper may clean up), SIGKILL a second later.
pub async fn stop_group(child: &mut tokio::process::Child) {
    let Some(pid) = child.id() else { return };
    // SAFETY: signalling the process group our own child leads.
    unsafe { libc::kill(-(pid as i32), libc::SIGTERM) };
    if tokio::time::timeout(std::time::Duration::from_secs(1), child.wait())
        .await
        .is_err()
    {
        // SAFETY: as above; the leader is not reaped yet, so the group
        // id is still ours.
        unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
        let _ = child.wait().await;
    } else {
        // The leader is gone; what it left in its group goes too.
        // SAFETY: as above.
        unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    }
}

/// Kills a child started by `spawn` (SIGKILL) and reaps it: a receiver
/// at the run's end, a sender run past its end.
pub async fn kill(child: &mut tokio::process::Child) {
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// Kills every process left in the hosts' namespaces: what a run's
/// programs left behind, whatever happened. Cost: a scan of /proc,
/// repeated until it finds nobody (see `shells::netns::kill_processes_in`).
pub fn kill_left_in(hosts: &[Host]) {
    let identities: Vec<(u64, u64)> = hosts
        .iter()
        .filter_map(|h| h.namespace.identity().ok())
        .collect();
    netns::kill_processes_in(&identities);
}

fn spawn_with(
    namespace: &NetNs,
    command: &CommandLine,
    own_group: bool,
) -> Result<tokio::process::Child, String> {
    let open = |path: &Path| {
        std::fs::File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))
    };
    let mut std_command = namespace
        .program(&command.argv[0])
        .map_err(|e| format!("starting {}: {e}", command.argv[0]))?;
    std_command
        .args(&command.argv[1..])
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(if own_group {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(open(&command.stdout)?)
        .stderr(open(&command.stderr)?);
    if own_group {
        std::os::unix::process::CommandExt::process_group(&mut std_command, 0);
    }
    let mut tokio_command = tokio::process::Command::from(std_command);
    tokio_command.kill_on_drop(true);
    tokio_command.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "'{}' was not found: install it (Debian/Ubuntu: apt-get install {})",
                command.argv[0],
                match command.argv[0].as_str() {
                    "ping" => "iputils-ping",
                    other => other,
                }
            )
        } else {
            format!("starting {}: {e}", command.argv[0])
        }
    })
}

/// Runs `argv` and then `args` outside the hosts, nothing on its stdin,
/// to its end: what it printed and how it ended. For short questions (a
/// wrapper's `run_first` or `deps`, dpkg-query), never a flow.
pub fn ask(argv: &[String], args: &[&str]) -> std::io::Result<Output> {
    std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .args(args)
        .stdin(Stdio::null())
        .output()
}

/// Runs `argv` with `env` inside `namespace` until it ends, or for
/// `limit` and then kills it (SIGKILL): how it ended and its error output
/// (its standard output is dropped). Blocks the calling thread, polling
/// every 20 ms; for a set-up run before any cell, never a flow.
pub fn run_in_for(
    namespace: &NetNs,
    argv: &[String],
    env: &[(String, String)],
    limit: Duration,
) -> std::io::Result<Output> {
    let mut child = namespace
        .command(&argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let started = Instant::now();
    while child.try_wait()?.is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output()
}

/// The user emu runs as (its effective user id), which names its own
/// scratch directories.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}
