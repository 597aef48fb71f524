//! Network namespaces, held by file descriptor only: no name in
//! /run/netns, so a namespace lives exactly as long as emu (or a process
//! inside it) does, and nothing is left to clean up by name.

use crate::error::{Result, ShellError};
use crate::sys::mount_namespace::{Entry, MountNamespace};
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, OnceLock};

/// A handle on a network namespace.
pub struct NetNs {
    fd: OwnedFd,
    /// The mount namespace programs started here by [`NetNs::program`]
    /// enter (see `sys::dns`), once one is set.
    programs_mounts: OnceLock<Arc<MountNamespace>>,
}

impl NetNs {
    /// The namespace this process started in.
    pub fn current() -> Result<NetNs> {
        let file = File::open("/proc/thread-self/ns/net")
            .map_err(|e| ShellError::os("opening this process's network namespace", e))?;
        Ok(NetNs {
            fd: file.into(),
            programs_mounts: OnceLock::new(),
        })
    }

    /// A fresh namespace. It is made on a short-lived thread, because
    /// unshare(CLONE_NEWNET) moves only the calling thread into it.
    pub fn create() -> Result<NetNs> {
        std::thread::spawn(|| -> Result<NetNs> {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
                .map_err(|e| ShellError::os("creating a network namespace", e))?;
            NetNs::current()
        })
        .join()
        .map_err(|_| ShellError::new("the namespace thread panicked"))?
    }

    /// True for the namespace of process 1 (the machine's, or in a container
    /// the container's): the one emu calls the host. False when that cannot
    /// be read (an unprivileged emu may not look at process 1).
    pub fn is_initial(&self) -> bool {
        let Ok(init) = std::fs::metadata("/proc/1/ns/net") else {
            return false;
        };
        self.identity()
            .is_ok_and(|id| id == (init.dev(), init.ino()))
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// (device, inode) naming the namespace, as /proc/PID/ns/net shows it.
    pub fn identity(&self) -> Result<(u64, u64)> {
        let file = File::from(
            self.fd
                .try_clone()
                .map_err(|e| ShellError::os("duplicating a namespace handle", e))?,
        );
        let meta = file
            .metadata()
            .map_err(|e| ShellError::os("reading a namespace's identity", e))?;
        Ok((meta.dev(), meta.ino()))
    }

    /// The namespace's cookie: a number the kernel gives it once and never
    /// reuses while the machine runs (`SO_NETNS_COOKIE`, Linux 5.14 and
    /// later), by which BPF programs tell namespaces apart.
    pub fn cookie(&self) -> Result<u64> {
        self.run(|| {
            namespace_cookie_here().map_err(|e| ShellError::os("reading a namespace's cookie", e))
        })
    }

    /// Runs `work` on a thread that has entered this namespace, so sockets
    /// and devices it creates belong here.
    pub fn run<T: Send>(&self, work: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        let fd = self.fd.as_raw_fd();
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    // SAFETY: `fd` stays open for the whole scope.
                    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
                    nix::sched::setns(borrowed, nix::sched::CloneFlags::CLONE_NEWNET)
                        .map_err(|e| ShellError::os("entering a network namespace", e))?;
                    work()
                })
                .join()
                .map_err(|_| ShellError::new("a namespace thread panicked"))?
        })
    }

    /// An rtnetlink socket in this namespace, opened on a thread that
    /// entered it; usable from any thread afterwards.
    pub fn netlink(&self) -> Result<crate::sys::netlink::Netlink> {
        self.run(crate::sys::netlink::Netlink::open)
    }

    /// A command that will run inside this namespace.
    pub fn command(&self, program: &str) -> Command {
        let fd = self.fd.as_raw_fd();
        let mut command = Command::new(program);
        // SAFETY: only the async-signal-safe setns syscall runs between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command
    }

    /// Has the programs [`NetNs::program`] starts here enter `mounts`
    /// (the first one set stays).
    pub fn enter_with_programs(&self, mounts: Arc<MountNamespace>) {
        let _ = self.programs_mounts.set(mounts);
    }

    /// A program (a host's command in an experiment) that will run here,
    /// in the mount namespace set for this namespace's programs if any.
    pub fn program(&self, program: &str) -> Result<Command> {
        let mut command = self.command(program);
        if let Some(mounts) = self.programs_mounts.get() {
            Entry::of(mounts.fd())?.apply(&mut command);
        }
        Ok(command)
    }

    /// A system tool (`iptables`, `ss`) that will run here, found
    /// where the system keeps it whatever the user's `PATH`.
    fn tool(&self, program: &str) -> Command {
        self.command(&crate::sys::tools::locate(program).to_string_lossy())
    }

    /// Runs a configuration tool (`iptables`, `sysctl`) here and
    /// fails with its own error text if it does not succeed.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<()> {
        let output = self.tool(program).args(args).output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ShellError::new(format!(
                    "'{program}' was not found: install it (Debian/Ubuntu: apt-get install {})",
                    package_of(program)
                ))
            } else {
                ShellError::os(&format!("running {program}"), e)
            }
        })?;
        if !output.status.success() {
            return Err(ShellError::new(format!(
                "'{program} {}' failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Like [`exec`] but returns standard output.
    pub fn query(&self, program: &str, args: &[&str]) -> Result<String> {
        let output = self
            .tool(program)
            .args(args)
            .output()
            .map_err(|e| ShellError::os(&format!("running {program}"), e))?;
        if !output.status.success() {
            return Err(ShellError::new(format!(
                "'{program} {}' failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

fn package_of(program: &str) -> &str {
    match program {
        "ss" => "iproute2",
        "iptables" | "ip6tables" => "iptables",
        "sysctl" => "procps",
        other => other,
    }
}

/// Kills every process in `namespaces` (what a command left running there
/// keeps the namespace alive). A process can fork between the scan of
/// /proc and its death, so the scan is repeated until it finds nobody:
/// every round kills all it found, and a killed process forks no more, so
/// even a command forking as fast as it can runs out (bounded in time, in
/// case something cannot die).
pub fn kill_processes_in(namespaces: &[(u64, u64)]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut clean_scans = 0;
    while std::time::Instant::now() < deadline {
        let left = processes_in(namespaces);
        if left.is_empty() {
            // Twice in a row, a few ms apart: a fork in flight during
            // the first scan shows in the second.
            clean_scans += 1;
            if clean_scans == 2 {
                return;
            }
        } else {
            clean_scans = 0;
        }
        for pid in left {
            // SAFETY: sending a signal.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Every process whose network namespace is one of `namespaces`, but this
/// one (the guardian of a rootless emu lives in a namespace it watches).
pub fn processes_in(namespaces: &[(u64, u64)]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::metadata(format!("/proc/{pid}/ns/net"))
                .map(|m| namespaces.contains(&(m.dev(), m.ino())))
                .unwrap_or(false)
        })
        .collect()
}

/// The cookie of the calling thread's namespace, read from a socket made
/// here (any socket belongs to the namespace it was made in).
pub fn namespace_cookie_here() -> std::io::Result<u64> {
    // SAFETY: plain system calls; the descriptor is owned at once, and
    // getsockopt writes at most `len` bytes into `cookie`.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let socket = OwnedFd::from_raw_fd(fd);
        let mut cookie: u64 = 0;
        let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
        let got = libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        );
        if got < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(cookie)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two namespaces have different cookies; one keeps its own.
    #[test]
    fn each_namespace_has_its_own_cookie() {
        let (a, b) = (NetNs::create().unwrap(), NetNs::create().unwrap());
        let first = a.cookie().unwrap();
        assert_ne!(first, b.cookie().unwrap());
        assert_eq!(first, a.cookie().unwrap());
        assert_ne!(first, 0);
    }
}
