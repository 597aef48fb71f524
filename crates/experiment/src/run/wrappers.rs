//! How a Pantheon scheme wrapper is run: as its Pantheon checkout has it,
//! under Python 3, without touching the checkout.
//!
//! Pantheon's wrappers import its `arg_parser` and `context` modules,
//! which are Python 2 (and so are some wrappers' own `print`s). A Python
//! wrapper is therefore started as `python3 LAUNCHER WRAPPER ARGS...`:
//! the launcher (`pantheon/launch.py`) gives it emu's own `arg_parser`
//! and `context` (`pantheon/*.py`, the same interface written for Python
//! 3), and reads the wrapper and the checkout's other modules with their
//! Python 2 `print` statements taken as calls. Any other wrapper (a
//! program with its own `#!` line) is run as it is.
//!
//! Beside them, `bin/` holds emu's `sudo`, `modprobe` and `sysctl`, first
//! on a wrapper's PATH in a run, so that what a wrapper's
//! `setup_after_reboot` changes stays in its namespace
//! ([`crate::run::pantheon::after_reboot`]).
//!
//! The files are written once per process into a directory of the
//! user's own under the temporary directory (refused if someone else owns
//! it or may write to it, since its code runs as the user).

use crate::file::PantheonSide;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The files of the Python side, by name.
const FILES: [(&str, &str); 7] = [
    ("launch.py", include_str!("pantheon/launch.py")),
    ("python2.py", include_str!("pantheon/python2.py")),
    ("arg_parser.py", include_str!("pantheon/arg_parser.py")),
    ("context.py", include_str!("pantheon/context.py")),
    ("bin/sudo", include_str!("pantheon/bin/sudo")),
    ("bin/modprobe", include_str!("pantheon/bin/modprobe")),
    ("bin/sysctl", include_str!("pantheon/bin/sysctl")),
];

/// Whether `wrapper` is a Python program: its name ends in `.py` or its
/// `#!` line names a Python.
pub fn is_python(wrapper: &Path) -> bool {
    if wrapper.extension().is_some_and(|e| e == "py") {
        return true;
    }
    let Ok(text) = std::fs::read(wrapper) else {
        return false;
    };
    let first = text.split(|&b| b == b'\n').next().unwrap_or_default();
    first.starts_with(b"#!") && String::from_utf8_lossy(first).contains("python")
}

/// The command line that runs `wrapper` (before its own arguments).
pub fn command(wrapper: &Path) -> Result<Vec<String>, String> {
    let wrapper = wrapper.display().to_string();
    if !is_python(Path::new(&wrapper)) {
        return Ok(vec![wrapper]);
    }
    let launcher = shim_dir()?.join("launch.py");
    Ok(vec![
        "python3".to_string(),
        launcher.display().to_string(),
        wrapper,
    ])
}

/// Asks a wrapper which side runs first (`WRAPPER run_first`; a Python
/// wrapper through the launcher, any other as the program it is).
pub fn run_first(wrapper: &Path) -> Result<PantheonSide, String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(wrapper).map_err(|e| format!("{}: {e}", wrapper.display()))?;
    let python = is_python(wrapper);
    if !meta.is_file() || (!python && meta.permissions().mode() & 0o111 == 0) {
        return Err(format!(
            "{} is not an executable file: make it one (chmod +x) with a #! line",
            wrapper.display()
        ));
    }
    let argv = command(wrapper)?;
    let output = crate::run::system::ask(&argv, &["run_first"])
        .map_err(|e| format!("running {} run_first: {e}", wrapper.display()))?;
    let answer = String::from_utf8_lossy(&output.stdout);
    match answer.trim() {
        "receiver" => Ok(PantheonSide::Receiver),
        "sender" => Ok(PantheonSide::Sender),
        other => Err(format!(
            "{} run_first answered '{other}'{}; a Pantheon wrapper prints receiver or sender",
            wrapper.display(),
            if output.status.success() {
                String::new()
            } else {
                format!(
                    " and failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                )
            }
        )),
    }
}

/// The directory with the launcher and emu's modules, made on first use.
pub fn shim_dir() -> Result<&'static Path, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let uid = crate::run::system::effective_uid();
        let dir = std::env::temp_dir().join(format!("emu-pantheon-{uid}"));
        install(&dir, uid)
            .map(|()| dir.clone())
            .map_err(|e| format!("{}: {e} (remove it, or set TMPDIR)", dir.display()))
    })
    .as_ref()
    .map(PathBuf::as_path)
    .map_err(Clone::clone)
}

fn install(dir: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    for d in [dir.to_path_buf(), dir.join("bin")] {
        match std::fs::DirBuilder::new().mode(0o755).create(&d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot be made: {e}")),
        }
        let meta = std::fs::symlink_metadata(&d).map_err(|e| e.to_string())?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
            return Err("is not a directory of this user's that only it may write to".into());
        }
    }
    for (name, text) in FILES {
        let path = dir.join(name);
        let mode = if name.starts_with("bin/") {
            0o755
        } else {
            0o644
        };
        let same = |p: &Path| {
            std::fs::read_to_string(p).is_ok_and(|old| old == text)
                && std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o777 == mode)
        };
        if same(&path) {
            continue;
        }
        // Written aside and renamed: another emu reading it meanwhile
        // sees the old file or the new one, never half of one.
        let aside = dir.join(format!(
            ".{}.{}",
            name.replace('/', "-"),
            std::process::id()
        ));
        let failed = |e: std::io::Error| format!("writing {name}: {e}");
        std::fs::write(&aside, text).map_err(failed)?;
        std::fs::set_permissions(&aside, std::fs::Permissions::from_mode(mode)).map_err(failed)?;
        std::fs::rename(&aside, &path).map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_wrappers_go_through_the_launcher_others_run_as_they_are() {
        let dir = std::env::temp_dir().join(format!("emu-wrappers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("scheme");
        std::fs::write(&script, "#!/usr/bin/env python\nprint('x')\n").unwrap();
        let shell = dir.join("other");
        std::fs::write(&shell, "#!/bin/sh\necho receiver\n").unwrap();
        let argv = command(&script).unwrap();
        assert_eq!(argv[0], "python3");
        assert!(argv[1].ends_with("launch.py"), "{argv:?}");
        let shim = Path::new(&argv[1]).parent().unwrap();
        for (name, text) in FILES {
            assert_eq!(std::fs::read_to_string(shim.join(name)).unwrap(), text);
        }
        assert_eq!(command(&shell).unwrap(), [shell.display().to_string()]);
        assert!(is_python(Path::new("/nowhere/copa.py")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
