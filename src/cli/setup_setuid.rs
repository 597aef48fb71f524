//! `emu setup-setuid`: the one-time step that lets users run emu without
//! sudo, as Mahimahi's installation does for its programs: the installed
//! binaries become owned by root and setuid root. emu then takes root only
//! for what needs it (namespaces, TUN devices, NAT), runs the command as
//! the user and creates every file as the user (see shells::privilege).

use super::output::UsageError;
use clap::Args;
use shells::privilege::{self, Origin};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(
    after_help = "Run once as root, after each install:\n  sudo \"$(command -v emu)\" setup-setuid\n\
Without --copy-to, the binaries next to this emu (emu, mm-delay, mm-link, mm-loss, mm-onoff)\n\
are changed in place. `cargo install` replaces them with ordinary files again."
)]
pub struct SetupArgs {
    /// Copy emu into DIR (with mm-* links to it) and make that copy setuid,
    /// instead of changing the installed files in place.
    #[arg(long, value_name = "DIR")]
    copy_to: Option<PathBuf>,
}

pub fn run(args: SetupArgs) -> Result<i32, UsageError> {
    match privilege::origin() {
        Origin::Root | Origin::Sudo => {}
        Origin::Setuid | Origin::Unprivileged => {
            return Err(UsageError(
                "setup-setuid must be run by root: sudo \"$(command -v emu)\" setup-setuid".into(),
            ))
        }
    }
    let this = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| UsageError(format!("cannot find this program's own file: {e}")))?;
    let files = match &args.copy_to {
        Some(dir) => copy_into(&this, dir)?,
        None => installed_next_to(&this),
    };
    for file in &files {
        make_setuid_root(file)?;
        println!(
            "emu: {} is now owned by root and setuid root",
            file.display()
        );
    }
    if let Some(dir) = files.first().and_then(|f| f.parent()) {
        if let Ok(meta) = std::fs::metadata(dir) {
            if meta.uid() != 0 {
                println!(
                    "emu: note: {} belongs to uid {}; reinstalling there (cargo install) replaces these files with ordinary ones: run setup-setuid again afterwards",
                    dir.display(),
                    meta.uid()
                );
            }
        }
    }
    println!("emu: any user may now run emu without sudo; the command and every file emu writes are theirs");
    Ok(0)
}

/// This emu and the Mahimahi commands installed beside it as files of their
/// own (links to emu are covered by emu itself).
fn installed_next_to(this: &Path) -> Vec<PathBuf> {
    let mut files = vec![this.to_path_buf()];
    if let Some(dir) = this.parent() {
        for name in super::mahimahi::COMMANDS {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file()) {
                files.push(path);
            }
        }
    }
    files
}

fn copy_into(this: &Path, dir: &Path) -> Result<Vec<PathBuf>, UsageError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        UsageError(format!(
            "--copy-to {}: cannot create it: {e}",
            dir.display()
        ))
    })?;
    let target = dir.join("emu");
    // A fresh file, not an overwrite: a running copy may be busy, and a
    // file another user could still have open must not become setuid.
    let staging = dir.join(format!(".emu-setup-{}", std::process::id()));
    std::fs::copy(this, &staging)
        .and_then(|_| std::fs::rename(&staging, &target))
        .map_err(|e| {
            let _ = std::fs::remove_file(&staging);
            UsageError(format!(
                "--copy-to {}: cannot copy emu there: {e}",
                dir.display()
            ))
        })?;
    for name in super::mahimahi::COMMANDS {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("emu", &link)
            .map_err(|e| UsageError(format!("{}: cannot create the link: {e}", link.display())))?;
    }
    Ok(vec![target])
}

fn make_setuid_root(file: &Path) -> Result<(), UsageError> {
    let fail = |what: &str, e: std::io::Error| {
        UsageError(format!("{}: cannot {what}: {e}", file.display()))
    };
    std::os::unix::fs::chown(file, Some(0), Some(0)).map_err(|e| fail("make it root's", e))?;
    // chown clears the setuid bit, so the mode comes second.
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o4755))
        .map_err(|e| fail("make it setuid", e))
}
