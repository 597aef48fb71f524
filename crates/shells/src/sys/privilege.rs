//! What a shell needs from the kernel, checked before anything is created so
//! a user without it gets one message and no half-built state; and who the
//! user behind a privileged emu is.
//!
//! emu gets root in one of three ways: run by root, through sudo (the user
//! is in `SUDO_UID`), or as a setuid-root binary (the user is the real uid,
//! as with Mahimahi's installed programs). In the last two the command runs
//! as that user, and every file emu creates on the user's behalf (logs,
//! summaries, copied traces, captures) is created with the user's file
//! system identity, so emu never writes where the user could not, and the
//! traces it reads are read as the user.

use crate::error::{Result, ShellError};
use std::ffi::OsString;
use std::sync::OnceLock;

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

/// The PATH emu itself uses when it runs setuid: system directories only,
/// so `ip`, `iptables` and `sysctl` are never the invoking user's programs.
pub const SAFE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Variables emu keeps for itself when setuid: what nesting one emu in
/// another needs. Everything else (LD_*, XTABLES_LIBDIR, GCONV_PATH,
/// LOCPATH, MALLOC_*, IFS, …) would let the user steer what runs as root.
const KEPT_WHEN_SETUID: [&str; 8] = [
    "TERM",
    "EMU_BASE",
    "EMU_BASE6",
    "MAHIMAHI_BASE",
    "EMU_SHELL_PREFIX",
    "MAHIMAHI_SHELL_PREFIX",
    "EMU_PAIRS_IN_USE",
    "EMU_SHELL_DEPTH",
];

/// The effective capability set of this process, from /proc/self/status.
fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// Fails with a message naming each missing capability and how to get it.
pub fn check() -> Result<()> {
    let caps = effective_capabilities().unwrap_or(0);
    let mut missing = Vec::new();
    if caps & (1 << CAP_SYS_ADMIN) == 0 {
        missing.push("CAP_SYS_ADMIN (to create network namespaces)");
    }
    if caps & (1 << CAP_NET_ADMIN) == 0 {
        missing.push("CAP_NET_ADMIN (to create TUN devices, addresses and NAT rules)");
    }
    if missing.is_empty() {
        if !std::path::Path::new("/dev/net/tun").exists() {
            return Err(ShellError::new(
                "/dev/net/tun does not exist: load the tun module (modprobe tun) or, in a container, pass the device in (--device /dev/net/tun)",
            ));
        }
        return Ok(());
    }
    Err(ShellError::new(format!(
        "emu needs {} which this process lacks. Run it as root: sudo \"$(command -v emu)\" … (the command inside still runs as you); \
         or make emu setuid root once with: sudo \"$(command -v emu)\" setup-setuid; \
         or, where the kernel allows unprivileged user namespaces, add --rootless",
        missing.join(" and ")
    )))
}

/// How this process came to run as root, as far as emu cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Not root at all.
    Unprivileged,
    /// Root by itself (a root shell, a container, CI).
    Root,
    /// Root through sudo, with `SUDO_UID` naming the user.
    Sudo,
    /// A setuid-root binary run by an ordinary user.
    Setuid,
}

/// The user to run the command as, and to create files as.
#[derive(Debug, Clone)]
pub struct Invoker {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub name: String,
    pub home: String,
    pub shell: String,
}

struct Identity {
    origin: Origin,
    invoker: Option<Invoker>,
    /// The environment the user gave a setuid emu, kept for the command.
    user_environment: Option<Vec<(OsString, OsString)>>,
}

static IDENTITY: OnceLock<Identity> = OnceLock::new();

fn identity() -> &'static Identity {
    IDENTITY.get_or_init(|| {
        let (origin, invoker) = if nix::unistd::geteuid().is_root() {
            match sudo_invoker() {
                Some(invoker) => (Origin::Sudo, Some(invoker)),
                None => (Origin::Root, None),
            }
        } else {
            (Origin::Unprivileged, None)
        };
        Identity {
            origin,
            invoker,
            user_environment: None,
        }
    })
}

/// Settles who emu runs for. Call first thing in `main`, while the process
/// has a single thread. In a setuid-root emu it keeps the user's identity
/// and environment for the command, clears the environment emu itself runs
/// with down to a safe PATH and the nesting variables, and becomes root
/// through and through (real, effective and saved ids), so the tools it
/// runs (`ip`, `iptables`) behave as under sudo.
pub fn settle() -> std::result::Result<Origin, String> {
    let ids =
        nix::unistd::getresuid().map_err(|e| format!("reading this process's user ids: {e}"))?;
    let gids =
        nix::unistd::getresgid().map_err(|e| format!("reading this process's group ids: {e}"))?;
    let setuid_root = ids.effective.is_root() && !ids.real.is_root();
    if !setuid_root {
        return Ok(identity().origin);
    }
    let uid = ids.real.as_raw();
    let gid = gids.real.as_raw();
    let groups = nix::unistd::getgroups()
        .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
        .unwrap_or_else(|_| vec![gid]);
    let user = nix::unistd::User::from_uid(ids.real).ok().flatten();
    let invoker = Invoker {
        uid,
        gid,
        groups,
        name: user
            .as_ref()
            .map(|u| u.name.clone())
            .unwrap_or_else(|| uid.to_string()),
        home: user
            .as_ref()
            .map(|u| u.dir.to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".into()),
        shell: user
            .as_ref()
            .map(|u| u.shell.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let user_environment: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (key, _) in &user_environment {
        let keep = key.to_str().is_some_and(|k| KEPT_WHEN_SETUID.contains(&k));
        if !keep {
            std::env::remove_var(key);
        }
    }
    std::env::set_var("PATH", SAFE_PATH);
    // Root through and through; supplementary groups are root's (none), so
    // the user's groups grant emu nothing.
    nix::unistd::setgroups(&[])
        .and_then(|_| nix::unistd::setresgid(0.into(), 0.into(), 0.into()))
        .and_then(|_| nix::unistd::setresuid(0.into(), 0.into(), 0.into()))
        .map_err(|e| format!("becoming root in a setuid emu: {e}"))?;
    let settled = Identity {
        origin: Origin::Setuid,
        invoker: Some(invoker),
        user_environment: Some(user_environment),
    };
    if IDENTITY.set(settled).is_err() {
        return Err("emu's identity was settled twice".into());
    }
    Ok(Origin::Setuid)
}

/// For the subcommands that need no privilege (`emu report`, `emu log`,
/// …): a setuid emu becomes the invoking user for good, with the user's
/// environment back, so it reads and writes exactly what the user may.
pub fn drop_for_good() -> std::result::Result<(), String> {
    let identity = identity();
    if identity.origin != Origin::Setuid {
        return Ok(());
    }
    let invoker = identity
        .invoker
        .as_ref()
        .expect("setuid implies an invoker");
    let groups: Vec<nix::unistd::Gid> = invoker.groups.iter().map(|g| (*g).into()).collect();
    nix::unistd::setgroups(&groups)
        .and_then(|_| {
            nix::unistd::setresgid(invoker.gid.into(), invoker.gid.into(), invoker.gid.into())
        })
        .and_then(|_| {
            nix::unistd::setresuid(invoker.uid.into(), invoker.uid.into(), invoker.uid.into())
        })
        .map_err(|e| format!("giving up root: {e}"))?;
    if let Some(environment) = &identity.user_environment {
        for (key, _) in std::env::vars_os() {
            std::env::remove_var(key);
        }
        for (key, value) in environment {
            std::env::set_var(key, value);
        }
    }
    Ok(())
}

/// How this process runs as root, if it does.
pub fn origin() -> Origin {
    identity().origin
}

/// The user the command runs as and files are created as: the real user of
/// a setuid emu, or the one who called sudo; None when emu runs for root
/// itself (then the command keeps emu's own identity).
pub fn invoker() -> Option<Invoker> {
    identity().invoker.clone()
}

/// The environment the user gave a setuid emu (None otherwise: then the
/// command inherits emu's own, which sudo has already cleaned).
pub fn user_environment() -> Option<&'static [(OsString, OsString)]> {
    identity().user_environment.as_deref()
}

fn sudo_invoker() -> Option<Invoker> {
    let uid: u32 = std::env::var("SUDO_UID").ok()?.parse().ok()?;
    if uid == 0 {
        return None;
    }
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok()??;
    let name = std::ffi::CString::new(user.name.clone()).ok()?;
    let groups = nix::unistd::getgrouplist(&name, user.gid)
        .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
        .unwrap_or_else(|_| vec![user.gid.as_raw()]);
    Some(Invoker {
        uid,
        gid: user.gid.as_raw(),
        groups,
        name: user.name,
        home: user.dir.to_string_lossy().into_owned(),
        shell: user.shell.to_string_lossy().into_owned(),
    })
}

/// Runs `work` (file system calls only, no new threads) with the invoking
/// user's file system identity on this thread: files and directories it
/// creates belong to the user, and the kernel checks every access as it
/// would for the user. Without an invoker it simply runs `work`.
///
/// setfsuid(2) and setgroups(2) are made as raw system calls because they
/// then change only the calling thread's credentials (glibc would apply
/// setgroups to every thread); moving the fs uid away from 0 also clears
/// the file capabilities (CAP_DAC_OVERRIDE, …) from this thread until it
/// moves back, as capabilities(7) describes.
pub fn as_invoker<T>(work: impl FnOnce() -> T) -> std::io::Result<T> {
    let Some(invoker) = identity().invoker.as_ref() else {
        return Ok(work());
    };
    let saved_groups = nix::unistd::getgroups().map_err(std::io::Error::from)?;
    let saved_groups: Vec<libc::gid_t> = saved_groups.into_iter().map(|g| g.as_raw()).collect();
    // SAFETY: plain system calls on this thread's credentials, with
    // pointers to live vectors for their stated lengths.
    unsafe {
        if libc::syscall(
            libc::SYS_setgroups,
            invoker.groups.len(),
            invoker.groups.as_ptr(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        libc::syscall(libc::SYS_setfsgid, invoker.gid);
        libc::syscall(libc::SYS_setfsuid, invoker.uid);
        // Each call returns the previous id; an invalid id changes nothing
        // and so reads the current one back.
        let now_uid = libc::syscall(libc::SYS_setfsuid, u32::MAX) as u32;
        let now_gid = libc::syscall(libc::SYS_setfsgid, u32::MAX) as u32;
        let switched = now_uid == invoker.uid && now_gid == invoker.gid;
        let result = if switched {
            Ok(work())
        } else {
            Err(std::io::Error::other(
                "could not take on the invoking user's file system identity",
            ))
        };
        libc::syscall(libc::SYS_setfsuid, 0u32);
        libc::syscall(libc::SYS_setfsgid, 0u32);
        libc::syscall(
            libc::SYS_setgroups,
            saved_groups.len(),
            saved_groups.as_ptr(),
        );
        result
    }
}

/// [`as_invoker`] for file work that can itself fail.
pub fn io_as_invoker<T>(work: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    as_invoker(work).and_then(|result| result)
}
