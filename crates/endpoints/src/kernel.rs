//! What this kernel offers: its congestion controls, BTF, and whether this
//! process may load programs.

use crate::error::{EndpointError, Result};
use std::path::Path;

/// The kernel's own BTF, which BPF congestion controls are checked against.
pub const BTF: &str = "/sys/kernel/btf/vmlinux";

/// Every congestion control a socket may choose now (loaded modules,
/// built-in ones and registered BPF programs alike).
pub fn available() -> Vec<String> {
    words("/proc/sys/net/ipv4/tcp_available_congestion_control")
}

/// The congestion control a socket gets unless it chooses one.
pub fn default_congestion_control() -> String {
    words("/proc/sys/net/ipv4/tcp_congestion_control")
        .pop()
        .unwrap_or_default()
}

/// Those a namespace other than the first may take as its default.
pub fn allowed() -> Vec<String> {
    words("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
}

fn words(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The kernel's release, as `uname -r` prints it.
pub fn release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// Whether this kernel's TCP negotiates AccECN and lets a congestion
/// control ask for it (`TCP_CONG_NEEDS_ACCECN`). Both came with the same
/// change, which also gave request sockets `accecn_ok`; its name in the
/// kernel's BTF is the probe (upstream in 7.0, and in some 6.x kernels
/// that took it early: the release cannot tell). Cost: one read of the
/// BTF file (a few MB) per load.
pub fn has_accecn() -> bool {
    std::fs::read(BTF).is_ok_and(|btf| btf_has_name(&btf, "accecn_ok"))
}

/// Whether `name` is among the names in a BTF blob's string section (each
/// NUL-terminated).
fn btf_has_name(btf: &[u8], name: &str) -> bool {
    let mut needle = Vec::with_capacity(name.len() + 2);
    needle.push(0);
    needle.extend_from_slice(name.as_bytes());
    needle.push(0);
    btf.windows(needle.len()).any(|w| w == needle.as_slice())
}

/// Whether this process may load programs and list the kernel's BPF
/// links (root in the first user namespace).
pub fn may_load() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Checks what loading needs before anything is loaded: BTF and the
/// privilege. `names` are the congestion controls asked for, for the
/// message.
pub fn check_can_load(names: &[&str]) -> Result<()> {
    let wanted = names.join(", ");
    if !Path::new(BTF).exists() {
        return Err(EndpointError(format!(
            "{wanted}: emu's congestion controls need a kernel with BTF ({BTF} is missing on Linux {}): \
             use a kernel built with CONFIG_DEBUG_INFO_BTF, as current Debian, Ubuntu, Fedora and RHEL kernels are, \
             or pick one of this kernel's ({})",
            release(),
            available().join(", ")
        )));
    }
    if !may_load() {
        return Err(EndpointError(format!(
            "{wanted}: loading emu's congestion controls needs root (CAP_BPF and CAP_NET_ADMIN in the first user namespace); \
             run emu as root, or pick one of this kernel's ({})",
            available().join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_btf_name_matches_whole() {
        let strings = b"\0tcp_sock\0accecn_ok\0accecn_okay\0";
        assert!(btf_has_name(strings, "accecn_ok"));
        assert!(btf_has_name(strings, "tcp_sock"));
        assert!(!btf_has_name(strings, "accecn"));
        assert!(!btf_has_name(b"\0accecn_okay\0", "accecn_ok"));
    }
}
