//! What a shell needs from the kernel, checked before anything is created so
//! a user without it gets one message and no half-built state.

use crate::error::{Result, ShellError};

const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;

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
        "emu needs {} which this process lacks. Run it as root: sudo emu … (the command inside still runs as you)",
        missing.join(" and ")
    )))
}

/// The user to run the command as: the one who called sudo, if any.
#[derive(Debug, Clone)]
pub struct Invoker {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub name: String,
    pub home: String,
    pub shell: String,
}

/// The invoking user when emu runs as root through sudo; None otherwise
/// (then the command keeps emu's own identity).
pub fn invoker() -> Option<Invoker> {
    if nix::unistd::geteuid().as_raw() != 0 {
        return None;
    }
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
