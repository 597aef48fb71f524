//! `--rootless`: emu without root, where the kernel lets ordinary users
//! create user namespaces. emu moves into a new user namespace (in which
//! the user is root, and nowhere else) together with a new network
//! namespace: the experiment's own "host". Shells are built inside it as
//! usual; the one thing missing is a way out to the real host's network,
//! so servers the command talks to run in that outer namespace
//! (`--outside 'iperf3 -s'`), reached at `$EMU_BASE` as always.

use crate::error::{Result, ShellError};

/// Moves this process into a fresh user and network namespace, mapped so
/// the calling user is root inside. Must run while the process has one
/// thread (unshare(2) refuses CLONE_NEWUSER otherwise).
pub fn enter() -> Result<()> {
    tun_is_open_to_us()?;
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    nix::sched::unshare(
        nix::sched::CloneFlags::CLONE_NEWUSER | nix::sched::CloneFlags::CLONE_NEWNET,
    )
    .map_err(|e| {
        ShellError::new(format!(
            "--rootless: this machine does not let you create a user namespace ({e}). \
             It needs user.max_user_namespaces > 0 (now {}){}; an administrator can allow it, or run emu as root",
            read_setting("/proc/sys/user/max_user_namespaces"),
            restrictions()
        ))
    })?;
    // setgroups must be denied before an unprivileged process may write
    // its gid map (user_namespaces(7)).
    let write = |path: &str, text: String| {
        std::fs::write(path, text).map_err(|e| ShellError::os(&format!("writing {path}"), e))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    crate::sys::netlink::Netlink::open()?
        .set_link(
            "lo",
            crate::sys::netlink::LinkSettings {
                up: true,
                ..Default::default()
            },
        )
        .map_err(|e| ShellError::new(format!("--rootless: in emu's own namespace, {e}")))?;
    Ok(())
}

/// TUN devices are made by opening /dev/net/tun, which a user namespace
/// does not change: its mode must let the user in (Debian and Ubuntu make
/// it 0666; some containers make it 0600).
fn tun_is_open_to_us() -> Result<()> {
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(ShellError::new(
            "--rootless: /dev/net/tun is not readable and writable by you, so no TUN device can be made without root. \
             Distributions give it mode 0666; an administrator can restore that with: chmod 0666 /dev/net/tun",
        )),
        Err(e) => Err(ShellError::os("opening /dev/net/tun", e)),
    }
}

fn read_setting(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unreadable".into())
}

/// Distribution switches that forbid unprivileged user namespaces, when set.
fn restrictions() -> String {
    let mut found = String::new();
    for (path, forbidding) in [
        ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
        ),
    ] {
        if std::path::Path::new(path).exists() && read_setting(path) == forbidding {
            let name = path.trim_start_matches("/proc/sys/").replace('/', ".");
            found += &format!(" and {name} = {forbidding} forbids it");
        }
    }
    found
}
