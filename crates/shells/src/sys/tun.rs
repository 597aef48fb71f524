//! TUN devices: the kernel hands us every IP packet routed to the device
//! and takes every packet we write as if it had arrived on it.

use crate::error::{Result, ShellError};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// Checksums and TCP segmentation (IPv4, IPv6, with ECN) may be left to us.
const OFFLOADS: libc::c_uint =
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN;
/// UDP segmentation (IPv4, IPv6) too, where the kernel has it (6.2 on): a
/// UDP_SEGMENT sender's batch then reaches us in one read.
const UDP_OFFLOADS: libc::c_uint = libc::TUN_F_USO4 | libc::TUN_F_USO6;

/// The TUNSETIFF request for a TUN device `name` (shorter than
/// IFNAMSIZ): no packet-info header, a virtio-net header on every read
/// and write. The union starts as its largest member (the device map) at
/// zero, then takes the flags; the kernel reads only the name and the
/// flags.
fn interface_request(name: &str) -> libc::ifreq {
    let mut request = libc::ifreq {
        ifr_name: [0; libc::IFNAMSIZ],
        ifr_ifru: libc::__c_anonymous_ifr_ifru {
            ifru_map: libc::__c_anonymous_ifru_map {
                mem_start: 0,
                mem_end: 0,
                base_addr: 0,
                irq: 0,
                dma: 0,
                port: 0,
            },
        },
    };
    for (to, from) in request.ifr_name.iter_mut().zip(name.bytes()) {
        *to = from as libc::c_char;
    }
    request.ifr_ifru.ifru_flags =
        (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as libc::c_short;
    request
}

/// An open TUN device. It is not persistent: the kernel removes it when the
/// last descriptor closes, also when emu is killed.
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates `name` in the calling thread's network namespace, without the
    /// packet-info header. Every read and write starts with a virtio-net
    /// header (see `emu_core::offload`). With `offload`, the kernel may
    /// hand over TCP super-packets and leave checksums to us; without it,
    /// it segments and checksums before a read, so each read is one wire
    /// packet. Writes may be super-packets either way: the header is what
    /// lets emu write several due packets of a flow in one system call, and
    /// the kernel's receive path handle them once, as GRO would.
    pub fn create(name: &str, offload: bool) -> Result<Tun> {
        if name.len() >= libc::IFNAMSIZ {
            return Err(ShellError::new(format!(
                "interface name '{name}' is longer than 15 bytes"
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open("/dev/net/tun")
            .map_err(|e| ShellError::os("opening /dev/net/tun", e))?;
        let mut request = interface_request(name);
        // SAFETY: TUNSETIFF reads and writes an ifreq we own.
        if unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut request) } < 0 {
            return Err(ShellError::os(
                &format!("creating TUN device {name}"),
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: TUNSETOFFLOAD takes the flags by value.
        let set_offload = |flags: libc::c_uint| unsafe {
            libc::ioctl(file.as_raw_fd(), libc::TUNSETOFFLOAD, flags)
        };
        // An older kernel refuses the UDP flags: then TCP's alone.
        if offload && set_offload(OFFLOADS | UDP_OFFLOADS) < 0 && set_offload(OFFLOADS) < 0 {
            return Err(ShellError::os(
                &format!("enabling offload on {name}"),
                io::Error::last_os_error(),
            ));
        }
        Ok(Tun {
            file,
            name: name.to_string(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

/// Reads one packet scattered over `parts`, filled in order; `WouldBlock`
/// when none is waiting.
///
/// # Safety
/// Each iovec must point at memory valid for writes of its length.
pub unsafe fn read_scattered(fd: RawFd, parts: &[libc::iovec]) -> io::Result<usize> {
    // SAFETY: the caller vouches for the iovecs.
    let n = unsafe { libc::readv(fd, parts.as_ptr(), parts.len() as libc::c_int) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Writes one packet into the device's namespace, behind an all-zero
/// virtio-net header: a whole packet, checksums complete.
pub fn write_packet(fd: RawFd, packet: &[u8]) -> io::Result<()> {
    static WHOLE: [u8; emu_core::offload::VNET_HDR_LEN] = [0; emu_core::offload::VNET_HDR_LEN];
    write_parts::<2>(fd, [&WHOLE[..], packet])
}

/// Most parts one gathering write takes: a header and the payloads of a
/// merged run of segments (see `datapath::wire::write_due`).
pub const MAX_PARTS: usize = 128;

/// Writes `parts`, gathered, as a single packet whose first part starts
/// with its virtio-net header: a merged run written from where its
/// segments lie, without copying them into one buffer first. More than
/// [`MAX_PARTS`] parts is an `InvalidInput` error.
pub fn write_gathered<'a>(fd: RawFd, parts: impl IntoIterator<Item = &'a [u8]>) -> io::Result<()> {
    write_parts::<MAX_PARTS>(fd, parts)
}

/// One gathering write of at most `N` `parts` as a single packet (more is
/// an `InvalidInput` error), its vectors on the stack.
fn write_parts<'a, const N: usize>(
    fd: RawFd,
    parts: impl IntoIterator<Item = &'a [u8]>,
) -> io::Result<()> {
    let mut vectors = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; N];
    let mut count = 0;
    for part in parts {
        let Some(vector) = vectors.get_mut(count) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a gathered write of more than {N} parts"),
            ));
        };
        vector.iov_base = part.as_ptr() as *mut libc::c_void;
        vector.iov_len = part.len();
        count += 1;
    }
    write_vectors(fd, &vectors[..count])
}

/// `writev` of `vectors`, retried if a signal interrupts it.
fn write_vectors(fd: RawFd, vectors: &[libc::iovec]) -> io::Result<()> {
    loop {
        // SAFETY: the iovecs point at live buffers of their stated lengths.
        let n = unsafe { libc::writev(fd, vectors.as_ptr(), vectors.len() as libc::c_int) };
        if n >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TUNSETIFF request holds the name, NUL-terminated, and the
    /// flags of a TUN device without packet info and with the virtio-net
    /// header, where the kernel's `struct ifreq` has them.
    #[test]
    fn the_interface_request_is_the_kernels_ifreq() {
        let request = interface_request("emu-d0-up");
        let name: Vec<u8> = request.ifr_name.iter().map(|&c| c as u8).collect();
        assert_eq!(&name[..10], b"emu-d0-up\0");
        assert!(name[10..].iter().all(|&b| b == 0));
        // SAFETY: reading the member written last.
        let flags = unsafe { request.ifr_ifru.ifru_flags };
        assert_eq!(flags, 0x1000 | 0x4000 | 0x0001);
        let base = std::ptr::addr_of!(request) as usize;
        let at = std::ptr::addr_of!(request.ifr_ifru) as usize - base;
        assert_eq!(at, libc::IFNAMSIZ, "the flags follow the name");
        let kernels = if cfg!(target_pointer_width = "64") {
            40
        } else {
            32
        };
        assert_eq!(std::mem::size_of::<libc::ifreq>(), kernels);
    }

    /// The numbers of the requests and offload flags: the kernel's
    /// `_IOW('T', nr, int)`, which on x86-64 and ARM is the value below.
    #[test]
    fn the_tun_requests_have_the_kernels_numbers() {
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_eq!(libc::TUNSETIFF, 0x4004_54ca);
            assert_eq!(libc::TUNSETOFFLOAD, 0x4004_54d0);
        }
        assert_eq!(OFFLOADS, 0x0f);
        assert_eq!(UDP_OFFLOADS, 0x60);
    }
}
