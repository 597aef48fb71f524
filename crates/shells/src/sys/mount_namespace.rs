//! A mount namespace for the command, where a few of the host's files show
//! other contents (its `/etc/resolv.conf`, above all) and everything else
//! is the host's. Nothing of the host changes: the new contents live in a
//! memory file system that no directory shows, mounted over the files in
//! this namespace only, with mount events of the host still reaching it
//! but none of its own going back. It lives while a process is in it or
//! emu holds it, so it is gone with the command, even after a `kill -9`.

use crate::error::{Result, ShellError};
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

/// Flags of the mount system calls (linux/mount.h), which the libc crate
/// does not give on every target.
const FSOPEN_CLOEXEC: libc::c_uint = 0x1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 0x1;
const OPEN_TREE_CLONE: libc::c_uint = 0x1;
const MOVE_MOUNT_T_SYMLINKS: libc::c_uint = 0x10;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// A mount namespace held by descriptor, for the command to enter.
pub struct MountNamespace {
    fd: OwnedFd,
}

impl MountNamespace {
    /// A copy of this process's mount namespace in which each of `files`
    /// (a path, which may be a symbolic link, and its contents, readable
    /// by all) shows those contents. Made on a short-lived thread, which
    /// alone enters the new namespace.
    pub fn with_files(files: &[(String, Vec<u8>)]) -> Result<MountNamespace> {
        let files = files.to_vec();
        std::thread::spawn(move || -> Result<MountNamespace> {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)
                .map_err(|e| ShellError::os("creating a mount namespace for the command", e))?;
            // Mounts made here must not propagate back to the host.
            // SAFETY: mount(2) with a NUL-terminated target and no source,
            // type or data: changes this namespace's propagation only.
            let slave = unsafe {
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    std::ptr::null(),
                )
            };
            if slave != 0 {
                return Err(ShellError::os(
                    "making the command's mounts its own",
                    std::io::Error::last_os_error(),
                ));
            }
            let store = memory_file_system()?;
            for (k, (path, contents)) in files.iter().enumerate() {
                place(&store, &k.to_string(), path, contents)?;
            }
            let fd = std::fs::File::open("/proc/thread-self/ns/mnt")
                .map_err(|e| ShellError::os("opening the command's mount namespace", e))?;
            Ok(MountNamespace { fd: fd.into() })
        })
        .join()
        .map_err(|_| ShellError::new("the mount namespace thread panicked"))?
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// What a process needs to enter a mount namespace between fork and exec
/// (async-signal-safe calls on data prepared before): the namespace, and
/// the directory it was started in, by path (entering a mount namespace
/// moves a process to its root) or by descriptor where the path is not.
pub struct Entry {
    namespace: OwnedFd,
    path: CString,
    directory: OwnedFd,
}

impl Entry {
    /// Entering `namespace` and coming back to this process's directory.
    pub fn of(namespace: BorrowedFd) -> Result<Entry> {
        let path = std::env::current_dir()
            .map_err(|e| ShellError::os("reading the current directory", e))?;
        let directory = std::fs::File::open(".")
            .map_err(|e| ShellError::os("opening the current directory", e))?;
        Ok(Entry {
            namespace: namespace
                .try_clone_to_owned()
                .map_err(|e| ShellError::os("duplicating a mount namespace handle", e))?,
            path: CString::new(path.into_os_string().into_vec())
                .map_err(|_| ShellError::new("the current directory's path holds a NUL byte"))?,
            directory: directory.into(),
        })
    }

    /// Moves the calling process into the namespace (it must have a
    /// file-system context of its own, as a forked child has, and the
    /// privileges to: before it drops them).
    pub fn enter(&self) -> std::io::Result<()> {
        // SAFETY: setns on a descriptor we own.
        if unsafe { libc::setns(self.namespace.as_raw_fd(), libc::CLONE_NEWNS) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Goes back to the directory the process was in before [`enter`]
    /// (best done as the user, who may enter directories root may not).
    pub fn return_to_directory(&self) -> std::io::Result<()> {
        // SAFETY: chdir on a NUL-terminated path, fchdir on a descriptor
        // we own.
        unsafe {
            if libc::chdir(self.path.as_ptr()) != 0 && libc::fchdir(self.directory.as_raw_fd()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Has `command` enter the namespace before it runs, and come back to
    /// its directory.
    pub fn apply(self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure makes only async-signal-safe system calls.
        unsafe {
            command.pre_exec(move || {
                self.enter()?;
                self.return_to_directory()
            });
        }
    }
}

/// A fresh tmpfs, mounted nowhere: a descriptor of its root.
fn memory_file_system() -> Result<OwnedFd> {
    let fail = |what: &str| ShellError::os(what, std::io::Error::last_os_error());
    // SAFETY: plain system calls on a NUL-terminated name and descriptors
    // owned here; each returned descriptor is owned at once.
    unsafe {
        let context = libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC);
        if context < 0 {
            return Err(fail("opening a tmpfs for the command's files"));
        }
        let context = OwnedFd::from_raw_fd(context as i32);
        let null = std::ptr::null::<libc::c_char>();
        if libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            null,
            null,
            0,
        ) < 0
        {
            return Err(fail("creating a tmpfs for the command's files"));
        }
        let root = libc::syscall(libc::SYS_fsmount, context.as_raw_fd(), FSMOUNT_CLOEXEC, 0);
        if root < 0 {
            return Err(fail("mounting a tmpfs for the command's files"));
        }
        Ok(OwnedFd::from_raw_fd(root as i32))
    }
}

/// Writes `contents` as `name` in `store` and mounts that file over `path`
/// (following a symbolic link to the file it names).
fn place(store: &OwnedFd, name: &str, path: &str, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    let fail = |what: String| move |e| ShellError::os(&what, e);
    let name_c = CString::new(name).expect("a number has no NUL");
    let path_c =
        CString::new(path).map_err(|_| ShellError::new(format!("{path:?} holds a NUL byte")))?;
    // SAFETY: a NUL-terminated name relative to a directory we own.
    let fd = unsafe {
        libc::openat(
            store.as_raw_fd(),
            name_c.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return Err(fail(format!("writing the command's {path}"))(
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: just opened, owned from here.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
        .and_then(|_| file.write_all(contents))
        .map_err(fail(format!("writing the command's {path}")))?;
    // SAFETY: system calls on descriptors owned here and NUL-terminated
    // paths; the returned descriptor is owned at once.
    unsafe {
        let tree = libc::syscall(
            libc::SYS_open_tree,
            store.as_raw_fd(),
            name_c.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        );
        if tree < 0 {
            return Err(fail(format!("preparing the command's {path}"))(
                std::io::Error::last_os_error(),
            ));
        }
        let tree = OwnedFd::from_raw_fd(tree as i32);
        if libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            path_c.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS,
        ) < 0
        {
            return Err(fail(format!("mounting the command's {path}"))(
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside, a file (reached through a symbolic link, as a
    /// systemd-resolved host's resolv.conf is) shows the new contents;
    /// outside it is untouched, and once the namespace is let go nothing
    /// of it is left among the host's mounts.
    #[test]
    fn a_file_shows_other_contents_inside_only() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root (mounts)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("emu-mountns-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target.conf");
        let link = dir.join("link.conf");
        std::fs::write(&target, "host\n").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let namespace =
            MountNamespace::with_files(&[(link.display().to_string(), b"inside\n".to_vec())])
                .unwrap();
        let fd = namespace.fd().as_raw_fd();
        let seen = std::thread::spawn(move || {
            // SAFETY: entering a namespace we hold, on this thread only.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_FS) }, 0);
            assert_eq!(unsafe { libc::setns(fd, libc::CLONE_NEWNS) }, 0);
            std::fs::read_to_string(&link).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, "inside\n");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "host\n");
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains(&dir.display().to_string()), "{mounts}");
        drop(namespace);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
