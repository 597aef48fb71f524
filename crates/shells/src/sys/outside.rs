//! `--outside CMD`: programs that run in the namespace around the outermost
//! shell (the host, or with `--rootless` the experiment's own) for as long
//! as the command does, typically the server the command talks to at
//! `$EMU_BASE`. They run as the user the command runs as, each in a process
//! group of its own, and are stopped (SIGTERM, then SIGKILL) when emu ends,
//! by emu's guardian if emu is killed.

use crate::error::Result;
use crate::sys::command::{self, CommandSpec};
use crate::sys::guardian::Guardian;
use crate::sys::netns::NetNs;
use crate::sys::privilege;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::process::Child;
use std::time::{Duration, Instant};

/// The running outside programs; dropping this stops them.
pub struct Outside {
    children: Vec<(String, Child)>,
}

impl Outside {
    /// Starts `commands` in `ns`; `guardian` stops them should emu be
    /// killed before it can.
    pub fn start(ns: &NetNs, commands: &[String], guardian: &mut Guardian) -> Result<Outside> {
        let mut outside = Outside {
            children: Vec::new(),
        };
        if !commands.is_empty() {
            // What an outside command starts and leaves behind is handed to
            // emu when its parent dies, not to the machine's init, so emu
            // can wait for it before it ends.
            // SAFETY: prctl with integer arguments.
            unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        }
        for text in commands {
            let spec = CommandSpec {
                argv: vec!["/bin/sh".into(), "-c".into(), text.clone()],
                env: Vec::new(),
                invoker: privilege::invoker(),
                own_process_group: true,
                mount_namespace: None,
            };
            // On failure, those already started are stopped by the drop.
            let child = command::spawn(ns, &spec)?;
            // Its own group, in emu's session.
            // SAFETY: getsid(0) asks for this process's session.
            guardian.watch_group(child.id() as i32, unsafe { libc::getsid(0) });
            outside.children.push((text.clone(), child));
        }
        Ok(outside)
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        for (text, child) in &mut self.children {
            if let Ok(Some(status)) = child.try_wait() {
                if !status.success() {
                    eprintln!(
                        "emu: outside command '{text}' ended early with status {}",
                        command::status_code(status)
                    );
                }
                continue;
            }
            stop_group(child);
        }
    }
}

/// Stops `child`, which leads its own process group, and everything in
/// the group: SIGTERM, a second's grace, SIGKILL; then reaps what of the
/// group came to this process (the subreaper), for up to a second.
fn stop_group(child: &mut Child) {
    let group = child.id() as i32;
    // The process group our own child leads: it has not been
    // reaped, so the id is still its.
    let _ = killpg(Pid::from_raw(group), Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // As above; whatever is left of the group goes.
    let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    let _ = child.wait();
    // Its own children come to emu (the subreaper): reap them, so
    // emu ends after everything it started.
    let deadline = Instant::now() + Duration::from_secs(1);
    // No signal: only whether the group still exists.
    while killpg(Pid::from_raw(group), None).is_ok() && Instant::now() < deadline {
        reap_group(group);
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits for the members of process group `group` that are this process's
/// children (orphans handed to it as subreaper) and have ended.
fn reap_group(group: i32) {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for pid in entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name in parentheses: state, ppid, pgrp, …
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let parent = fields.get(1).and_then(|f| f.parse::<i32>().ok());
        let pgrp = fields.get(2).and_then(|f| f.parse::<i32>().ok());
        if parent == Some(me) && pgrp == Some(group) {
            // SAFETY: waiting, without blocking, for our own child.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A child leading its own group is stopped and reaped, and the group
    /// is gone.
    #[test]
    fn a_stopped_group_is_gone() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Pid::from_raw(child.id() as i32);
        assert!(killpg(group, None).is_ok(), "the group is there");
        stop_group(&mut child);
        assert!(matches!(child.try_wait(), Ok(Some(_))), "reaped");
        assert!(killpg(group, None).is_err(), "the group is gone");
    }
}
