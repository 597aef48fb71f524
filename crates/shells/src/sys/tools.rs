//! Where the system's configuration tools are: `iptables`, `ss` and
//! `sysctl` live in `/usr/sbin` or `/sbin` on most
//! distributions, which an ordinary user's `PATH` leaves out (Debian's
//! default is `/usr/local/bin:/usr/bin:/bin:...`). emu looks in `PATH`
//! first, then where systems keep them, so `--rootless` and a setuid emu
//! find them whatever the user's `PATH`. A lookup is a few `stat`s, once
//! per command started.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Searched after `PATH`, in this order.
const SYSTEM_DIRECTORIES: [&str; 6] = [
    "/usr/local/sbin",
    "/usr/sbin",
    "/sbin",
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
];

/// The executable `program` names: itself if it holds a `/`, else the
/// first in `PATH` and then the system's directories. A program found
/// nowhere comes back as its bare name, so starting it fails with
/// "not found" and the caller's advice on installing it.
pub fn locate(program: &str) -> PathBuf {
    locate_in(program, &std::env::var_os("PATH").unwrap_or_default())
}

/// [`locate`] with `path` as the `PATH`.
fn locate_in(program: &str, path: &std::ffi::OsStr) -> PathBuf {
    if program.contains('/') {
        return PathBuf::from(program);
    }
    std::env::split_paths(path)
        .chain(SYSTEM_DIRECTORIES.iter().map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| PathBuf::from(program))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn a_tool_is_found_in_path_first_then_where_the_system_keeps_it() {
        let dir = std::env::temp_dir().join(format!("emu-tools-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tool = dir.join("emu-test-tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/nonexistent:{}", dir.display());
        assert_eq!(locate_in("emu-test-tool", OsStr::new(&path)), tool);
        // A user's PATH without the sbin directories still finds a tool
        // kept there; `sh` is in /bin or /usr/bin everywhere.
        let user = OsStr::new("/usr/local/bin:/nonexistent");
        assert!(locate_in("sh", user).is_absolute());
        let found = locate_in("emu-no-such-tool", user);
        assert_eq!(found, PathBuf::from("emu-no-such-tool"));
        assert_eq!(locate_in("./x", user), PathBuf::from("./x"));
        // A file that is not executable is passed over.
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o644)).unwrap();
        let found = locate_in("emu-test-tool", OsStr::new(&path));
        assert_eq!(found, PathBuf::from("emu-test-tool"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
