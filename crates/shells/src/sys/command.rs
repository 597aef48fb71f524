//! The command a chain of shells runs: started inside the innermost
//! namespace, as the user who invoked sudo (or a setuid emu), killed if
//! emu dies.

use crate::error::{Result, ShellError};
use crate::sys::mount_namespace::Entry;
use crate::sys::netns::NetNs;
use crate::sys::privilege::Invoker;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Everything the command's process needs, prepared before the fork so the
/// code between fork and exec only makes async-signal-safe system calls.
pub struct CommandSpec<'a> {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub invoker: Option<Invoker>,
    /// Lead a process group of its own, so all it starts can be stopped.
    pub own_process_group: bool,
    /// A mount namespace to run in (see `sys::dns`), held open by the
    /// caller until the command has started; None: emu's own.
    pub mount_namespace: Option<BorrowedFd<'a>>,
}

/// The user's login shell (from the password database when run through
/// sudo or setuid, else $SHELL), or /bin/sh.
pub fn login_shell(invoker: &Option<Invoker>) -> String {
    invoker
        .as_ref()
        .map(|i| i.shell.clone())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("SHELL").ok())
        .unwrap_or_else(|| "/bin/sh".into())
}

pub fn spawn(ns: &NetNs, spec: &CommandSpec) -> Result<Child> {
    let (program, args) = spec
        .argv
        .split_first()
        .ok_or_else(|| ShellError::new("no command to run"))?;
    let mut command = Command::new(program);
    command.args(args);
    // A setuid emu runs with a scrubbed environment of its own; the command
    // gets the one its user gave (it runs as that user, so nothing in it
    // reaches root).
    if let Some(environment) = crate::sys::privilege::user_environment() {
        command.env_clear();
        command.envs(environment.iter().map(|(k, v)| (k, v)));
    }
    for (key, value) in &spec.env {
        command.env(key, value);
    }
    let ns_fd = ns.fd().as_raw_fd();
    let mount = spec.mount_namespace.map(Entry::of).transpose()?;
    let own_process_group = spec.own_process_group;
    let identity = spec
        .invoker
        .as_ref()
        .map(|i| (i.uid, i.gid, i.groups.clone()));
    if let Some(invoker) = &spec.invoker {
        command
            .env("HOME", &invoker.home)
            .env("USER", &invoker.name)
            .env("LOGNAME", &invoker.name);
    }
    // SAFETY: the closure only calls async-signal-safe functions (setns,
    // setpgid, prctl, sigprocmask, setgroups, setgid, setuid, chdir,
    // fchdir) on data prepared above.
    unsafe {
        command.pre_exec(move || {
            if libc::setns(ns_fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(entry) = &mount {
                entry.enter()?;
            }
            if own_process_group && libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // If emu dies, so does the command.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // emu blocks the signals it forwards; the command must not
            // inherit that mask.
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
            if let Some((uid, gid, groups)) = &identity {
                if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                    || libc::setgid(*gid) != 0
                    || libc::setuid(*uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // As the user, who may enter directories root may not.
            if let Some(entry) = &mount {
                entry.return_to_directory()?;
            }
            Ok(())
        });
    }
    command.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ShellError::new(format!(
                "command '{program}' was not found: check its spelling and PATH"
            ))
        } else {
            ShellError::os(&format!("starting '{program}'"), e)
        }
    })
}

/// The exit status a shell reports for a process: its code, or 128 plus
/// the number of the signal that killed it.
pub fn status_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
