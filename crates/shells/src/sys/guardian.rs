//! A small process that outlives emu only to clean up after it.
//!
//! TUN devices and emu's namespaces vanish by themselves when emu's
//! descriptors close, but two things do not: processes the command left in
//! those namespaces (they keep a namespace alive), and NAT rules in the
//! host's namespace. The guardian is forked before any thread exists; emu
//! tells it, through a pipe, each namespace and rule it creates. If the pipe
//! closes without emu saying it cleaned up itself — emu was killed, even
//! with SIGKILL — the guardian kills those processes and deletes the rules.

use crate::error::{Result, ShellError};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};

pub struct Guardian {
    pipe: File,
    pid: nix::unistd::Pid,
}

impl Guardian {
    /// Forks the guardian. Must be called while the process has one thread.
    pub fn start() -> Result<Guardian> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors; O_CLOEXEC keeps the write end
        // out of every command emu runs, so only emu's death closes it.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(ShellError::os(
                "creating the guardian's pipe",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: both descriptors were just created and are owned here.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the caller guarantees a single thread, so the child may run
        // arbitrary code.
        match unsafe { nix::unistd::fork() }
            .map_err(|e| ShellError::os("starting the guardian", e))?
        {
            nix::unistd::ForkResult::Child => {
                drop(write_end);
                guard(File::from(read_end));
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(read_end);
                Ok(Guardian {
                    pipe: File::from(write_end),
                    pid: child,
                })
            }
        }
    }

    /// A namespace (by /proc identity) whose processes must die with emu.
    pub fn watch_namespace(&mut self, identity: (u64, u64)) {
        let _ = writeln!(self.pipe, "ns {} {}", identity.0, identity.1);
    }

    /// A process group emu started outside its namespaces (`--outside`),
    /// in session `session`, whose members must die with emu. The session
    /// is checked too: a group id taken again after the group ended names
    /// someone else's processes, in another session as a rule.
    pub fn watch_group(&mut self, group: i32, session: i32) {
        let _ = writeln!(self.pipe, "group {group} {session}");
    }

    /// A host rule to delete if emu dies: the program and its -A arguments.
    pub fn watch_rule(&mut self, program: &str, spec: &[String]) {
        let _ = writeln!(self.pipe, "rule {program} {}", spec.join(" "));
    }

    /// emu has cleaned up itself; the guardian may leave without acting.
    pub fn release(mut self) {
        let _ = writeln!(self.pipe, "done");
        drop(self.pipe);
        let _ = nix::sys::wait::waitpid(self.pid, None);
    }
}

/// Closes every descriptor the guardian inherited but its pipe and the
/// standard three: what emu holds must go when emu dies, not when the
/// guardian leaves (a BPF link emu registered a congestion control with
/// stays registered while any copy of its descriptor is open).
fn close_inherited(pipe: &File) {
    use std::os::fd::AsRawFd;
    let keep = pipe.as_raw_fd();
    let open: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in open.into_iter().filter(|&fd| fd > 2 && fd != keep) {
        // SAFETY: closing descriptors this single-threaded child inherited
        // and never uses (the directory's own is already closed, so it
        // fails harmlessly).
        unsafe { libc::close(fd) };
    }
}

fn guard(pipe: File) -> ! {
    // Leave the terminal's session so Ctrl-C meant for the command does not
    // reach us, and let go of the terminal and any pipes a caller waits on.
    let _ = nix::unistd::setsid();
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in 0..3 {
            // SAFETY: replacing the standard descriptors with /dev/null.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    close_inherited(&pipe);
    // SAFETY: prctl with a static, NUL-terminated name.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"emu-guardian".as_ptr()) };
    let mut namespaces = Vec::new();
    let mut groups: Vec<(i32, i32)> = Vec::new();
    let mut rules: Vec<(String, Vec<String>)> = Vec::new();
    for line in BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["done"] => std::process::exit(0),
            ["ns", dev, ino] => {
                if let (Ok(dev), Ok(ino)) = (dev.parse(), ino.parse()) {
                    namespaces.push((dev, ino));
                }
            }
            ["group", group, session] => {
                if let (Ok(group), Ok(session)) = (group.parse(), session.parse()) {
                    groups.push((group, session));
                }
            }
            ["rule", program, spec @ ..] => rules.push((
                program.to_string(),
                spec.iter().map(|s| s.to_string()).collect(),
            )),
            _ => {}
        }
    }
    // emu is gone without saying "done": clean up what it left.
    crate::sys::netns::kill_processes_in(&namespaces);
    stop_groups(&groups);
    for (program, spec) in rules {
        let args = crate::sys::nat::with_action(&spec, "-D");
        let _ = std::process::Command::new(crate::sys::tools::locate(&program))
            .args(&args)
            .output();
    }
    std::process::exit(0)
}

/// Stops the members of each (process group, session): SIGTERM, a second
/// to end, then SIGKILL, as emu itself stops its outside commands.
fn stop_groups(groups: &[(i32, i32)]) {
    let members = || -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| {
                // SAFETY: plain queries of another process's ids.
                let (group, session) = unsafe { (libc::getpgid(pid), libc::getsid(pid)) };
                groups.contains(&(group, session))
            })
            .collect()
    };
    let start = std::time::Instant::now();
    loop {
        let left = members();
        let waited = start.elapsed();
        if left.is_empty() || waited > std::time::Duration::from_secs(3) {
            return;
        }
        let signal = if waited < std::time::Duration::from_secs(1) {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        for pid in left {
            // SAFETY: sending a signal.
            unsafe { libc::kill(pid, signal) };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
