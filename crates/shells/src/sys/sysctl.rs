//! Kernel settings written under /proc/sys: the one place emu changes
//! one. Every setting emu writes belongs to a network namespace (it is
//! read and written through the calling thread's `/proc/sys/net`), so
//! a run never changes the machine's settings for other programs, except
//! forwarding, which the chain's outermost namespace needs (see
//! `sys::nat::enable_forwarding`).

use crate::error::{Result, ShellError};
use crate::sys::netns::NetNs;
use std::path::Path;

/// The file of the sysctl `key` (`net.ipv4.tcp_ecn`), for the calling
/// thread's network namespace.
fn path_of(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// Writes `value` to the sysctl `key`, for the calling thread's network
/// namespace: a clear error naming both if the kernel refuses it.
pub(crate) fn write(key: &str, value: &str) -> Result<()> {
    let path = path_of(key);
    std::fs::write(&path, value)
        .map_err(|e| ShellError::os(&format!("setting sysctl {key} = {value}"), e))
}

/// Writes `value` to the sysctl `key` if this kernel has it (one without
/// IPv6 has no `net.ipv6.*`): whether it did.
pub(crate) fn write_if_present(key: &str, value: &str) -> Result<bool> {
    if !Path::new(&path_of(key)).exists() {
        return Ok(false);
    }
    write(key, value).map(|()| true)
}

/// Whether the sysctl `key` reads `value` now, for the calling thread's
/// namespace (false if it cannot be read).
pub(crate) fn reads(key: &str, value: &str) -> bool {
    std::fs::read_to_string(path_of(key)).is_ok_and(|v| v.trim() == value)
}

/// Writes a `net.*` sysctl given by the user (an experiment's host, a
/// shell's command) inside `namespace`. Other sysctls are refused: they
/// are not per namespace, and setting one would change the machine.
pub(crate) fn set_in(namespace: &NetNs, key: &str, value: &str) -> Result<()> {
    if !key.starts_with("net.") || key.contains("..") || key.contains('/') {
        return Err(ShellError::new(format!(
            "sysctl '{key}': only net.* settings can be given to a host (they belong to its namespace; others would change the whole machine)"
        )));
    }
    let (key, value) = (key.to_string(), value.to_string());
    namespace.run(move || {
        if !write_if_present(&key, &value)? {
            return Err(ShellError::new(format!(
                "sysctl '{key}' does not exist in a network namespace of this kernel"
            )));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key's dots are the path's slashes under /proc/sys.
    #[test]
    fn a_key_names_its_file_under_proc_sys() {
        assert_eq!(
            path_of("net.ipv6.conf.emu0.disable_ipv6"),
            "/proc/sys/net/ipv6/conf/emu0/disable_ipv6"
        );
    }

    /// Only `net.*` keys without a way out of /proc/sys/net are taken
    /// from the user; the refusal comes before any namespace is entered.
    #[test]
    fn only_a_namespaces_own_settings_are_set() {
        let here = NetNs::current().unwrap();
        for key in ["kernel.sched_rt_runtime_us", "net..x", "net.ipv4/../x"] {
            let error = set_in(&here, key, "1").unwrap_err().to_string();
            assert!(error.contains("only net.* settings"), "{key}: {error}");
        }
    }
}
