//! Address pairs for shells. Shell pair k uses 100.64.x.y/30 from the shared
//! address space (RFC 6598) and fd65:6d75:0:k::/64 from a unique local
//! prefix (RFC 4193); a pair is skipped if it overlaps any address or route
//! already present, or a pair an enclosing emu uses (EMU_PAIRS_IN_USE).

use crate::error::{Result, ShellError};
use crate::sys::netns::NetNs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The addresses of one shell: `outer` on the device in the enclosing
/// namespace, `inner` on the device inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPair {
    pub index: u32,
    pub outer4: Ipv4Addr,
    pub inner4: Ipv4Addr,
    pub outer6: Ipv6Addr,
    pub inner6: Ipv6Addr,
}

/// How many pairs the scheme offers (100.64.0.0/10 holds 2^20 /30s; we use
/// the first 65536, one per IPv6 /64).
const PAIRS: u32 = 65_536;

impl AddressPair {
    pub fn for_index(index: u32) -> AddressPair {
        let base = u32::from(Ipv4Addr::new(100, 64, 0, 0)) + index * 4;
        let prefix = [0xfd65, 0x6d75, 0, index as u16];
        let v6 =
            |host: u16| Ipv6Addr::new(prefix[0], prefix[1], prefix[2], prefix[3], 0, 0, 0, host);
        AddressPair {
            index,
            outer4: Ipv4Addr::from(base + 1),
            inner4: Ipv4Addr::from(base + 2),
            outer6: v6(1),
            inner6: v6(2),
        }
    }

    /// The pair's IPv4 /30 and IPv6 /64: what it occupies, and what the
    /// namespaces further out of a chain route to the shell.
    pub(crate) fn networks(&self) -> [(IpAddr, u8); 2] {
        [
            (IpAddr::V4(Ipv4Addr::from(u32::from(self.outer4) - 1)), 30),
            (IpAddr::V6(Ipv6Addr::from(u128::from(self.outer6) - 1)), 64),
        ]
    }
}

/// True if the two networks share any address.
pub(crate) fn overlaps(a: (IpAddr, u8), b: (IpAddr, u8)) -> bool {
    let prefix = a.1.min(b.1);
    match (a.0, b.0) {
        (IpAddr::V4(x), IpAddr::V4(y)) => {
            let mask = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - prefix as u32)
            };
            u32::from(x) & mask == u32::from(y) & mask
        }
        (IpAddr::V6(x), IpAddr::V6(y)) => {
            let mask = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - prefix as u32)
            };
            u128::from(x) & mask == u128::from(y) & mask
        }
        _ => false,
    }
}

/// Pairs an enclosing emu has taken, from EMU_PAIRS_IN_USE.
pub fn inherited_pairs() -> Vec<u32> {
    std::env::var("EMU_PAIRS_IN_USE")
        .unwrap_or_default()
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// The first pair that collides with nothing in any of `namespaces` (each
/// will hold the pair's addresses or routes to them) and is not in `taken`.
pub fn choose(namespaces: &[&NetNs], taken: &[u32]) -> Result<AddressPair> {
    let mut used = Vec::new();
    for ns in namespaces {
        let mut netlink = ns.netlink()?;
        used.extend(netlink.address_networks()?);
        used.extend(netlink.route_networks()?);
    }
    first_free(&used, taken)
}

/// The first pair that overlaps none of the networks `used` and is not
/// in `taken`.
fn first_free(used: &[(IpAddr, u8)], taken: &[u32]) -> Result<AddressPair> {
    (0..PAIRS)
        .filter(|k| !taken.contains(k))
        .map(AddressPair::for_index)
        .find(|pair| pair.networks().iter().all(|net| used.iter().all(|u| !overlaps(*net, *u))))
        .ok_or_else(|| ShellError::new("no free address pair in 100.64.0.0/10: every candidate overlaps an existing address or route"))
}

/// Serializes address selection between emu processes on one machine: held
/// from choosing a pair until its addresses are configured, so two emus
/// starting together cannot pick the same one. Released on drop (and by the
/// kernel if emu dies).
pub struct SelectionLock {
    _file: std::fs::File,
}

impl SelectionLock {
    /// Takes the machine's lock: in /run (root's own) where it exists,
    /// else in /tmp, where anyone may have created the name first.
    pub fn acquire() -> Result<SelectionLock> {
        let dir = if std::path::Path::new("/run").is_dir() {
            "/run"
        } else {
            "/tmp"
        };
        Self::acquire_in(std::path::Path::new(dir))
    }

    /// Takes the lock `emu-addresses.lock` in `dir`. emu may run setuid
    /// root, and `dir` may be world-writable: the name is opened without
    /// following a symbolic link (which could make root create or lock a
    /// file elsewhere), and must be a regular file of our effective user
    /// that nobody else can open (else another user could hold the lock
    /// forever and stall every emu); an old lock file readable by others
    /// is made private first.
    pub fn acquire_in(dir: &std::path::Path) -> Result<SelectionLock> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
        let path = dir.join("emu-addresses.lock");
        let shown = path.display();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    ShellError::new(format!(
                        "{shown} is a symbolic link, not emu's lock file: remove it (someone may have planted it) and run again"
                    ))
                } else {
                    ShellError::os(&format!("opening {shown}"), e)
                }
            })?;
        let meta = file
            .metadata()
            .map_err(|e| ShellError::os(&format!("inspecting {shown}"), e))?;
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        if !meta.file_type().is_file() || meta.uid() != me || meta.nlink() != 1 {
            return Err(ShellError::new(format!(
                "{shown} is not emu's lock file (it should be a regular file owned by uid {me},                  with one link; it is owned by uid {} with {} links): remove it and run again",
                meta.uid(),
                meta.nlink()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|e| ShellError::os(&format!("making {shown} private"), e))?;
        }
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(ShellError::os(
                &format!("locking {shown}"),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(SelectionLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock name planted in a shared directory is refused, never
    /// followed or locked; a fresh one is created private.
    #[test]
    fn the_lock_file_is_opened_safely() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = std::env::temp_dir().join(format!("emu-lock-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("emu-addresses.lock");
        let target = dir.join("victim");

        // A symbolic link to somewhere else: refused, the target not created.
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let err = SelectionLock::acquire_in(&dir).err().unwrap().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(!target.exists(), "the link was followed");
        std::fs::remove_file(&path).unwrap();

        // A hard link to another file: refused.
        std::fs::write(&target, b"").unwrap();
        std::fs::hard_link(&target, &path).unwrap();
        let err = SelectionLock::acquire_in(&dir).err().unwrap().to_string();
        assert!(err.contains("not emu's lock file"), "{err}");
        std::fs::remove_file(&path).unwrap();

        // Someone else's file: refused (needs root to make one).
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            std::fs::write(&path, b"").unwrap();
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            let err = SelectionLock::acquire_in(&dir).err().unwrap().to_string();
            assert!(err.contains("owned by uid 65534"), "{err}");
            std::fs::remove_file(&path).unwrap();
        }

        // Fresh: created private; an old world-readable one made private.
        drop(SelectionLock::acquire_in(&dir).unwrap());
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(SelectionLock::acquire_in(&dir).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pairs_are_distinct_point_to_point_nets() {
        let a = AddressPair::for_index(0);
        assert_eq!(a.outer4, Ipv4Addr::new(100, 64, 0, 1));
        assert_eq!(a.inner4, Ipv4Addr::new(100, 64, 0, 2));
        assert_eq!(a.inner6, "fd65:6d75:0:0::2".parse::<Ipv6Addr>().unwrap());
        let b = AddressPair::for_index(64);
        assert_eq!(b.outer4, Ipv4Addr::new(100, 64, 1, 1));
        assert!(!overlaps(a.networks()[0], b.networks()[0]));
    }

    /// `a.b.c.d/len`, or a bare address as a single host.
    fn net(text: &str) -> (IpAddr, u8) {
        match text.split_once('/') {
            Some((a, l)) => (a.parse().unwrap(), l.parse().unwrap()),
            None => {
                let a: IpAddr = text.parse().unwrap();
                (a, if a.is_ipv4() { 32 } else { 128 })
            }
        }
    }

    #[test]
    fn overlap_detects_containment_both_ways() {
        assert!(overlaps(
            net("100.64.0.0/10"),
            AddressPair::for_index(9).networks()[0]
        ));
        assert!(overlaps(
            net("100.64.0.2"),
            AddressPair::for_index(0).networks()[0]
        ));
        assert!(!overlaps(
            net("100.64.0.6"),
            AddressPair::for_index(0).networks()[0]
        ));
        assert!(overlaps(
            net("fd65::/16"),
            AddressPair::for_index(3).networks()[1]
        ));
        assert!(!overlaps(
            net("fd00::2/64"),
            AddressPair::for_index(0).networks()[1]
        ));
    }

    #[test]
    fn the_first_pair_clear_of_every_used_network_is_chosen() {
        // A host address inside pair 0, a route covering pairs 1 to 3, and
        // pair 4 taken by an enclosing emu: pair 5 is the first free one.
        let used = [
            net("100.64.0.2"),
            net("100.64.0.4/30"),
            net("100.64.0.8/29"),
        ];
        assert_eq!(first_free(&used, &[4]).unwrap().index, 5);
        assert_eq!(first_free(&[], &[]).unwrap().index, 0);
        // An IPv6 network in use rules out its pair too.
        let used = [net("fd65:6d75:0:0::/64")];
        assert_eq!(first_free(&used, &[]).unwrap().index, 1);
        let err = first_free(&[net("100.64.0.0/10")], &[]).unwrap_err();
        assert!(err.to_string().contains("no free address pair"), "{err}");
    }
}
