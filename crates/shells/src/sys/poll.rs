//! Waiting for descriptors to become readable (`ppoll`), with a timeout in
//! nanoseconds: one system call, nothing kept between calls.

use emu_core::time::timespec;
use emu_core::Nanos;
use std::os::fd::RawFd;

/// Waits until one of `fds` has an event (readable, or an error or hang-up
/// on it), or for `timeout` (None: no limit; zero: looks without waiting).
/// Returns what `ppoll` answered (0: the time ran out; below 0: a signal
/// or an error) and each descriptor's returned events.
pub fn wait<const N: usize>(
    fds: [RawFd; N],
    timeout: Option<Nanos>,
) -> (libc::c_int, [libc::c_short; N]) {
    let mut polled = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    let timeout = timeout.map(timespec);
    let timeout_ptr = timeout
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: N valid pollfds and an optional valid timespec.
    let ready = unsafe {
        libc::ppoll(
            polled.as_mut_ptr(),
            N as libc::nfds_t,
            timeout_ptr,
            std::ptr::null(),
        )
    };
    (ready, polled.map(|p| p.revents))
}

/// Whether `fd` has something to read now.
pub fn readable(fd: RawFd) -> bool {
    let (ready, [events]) = wait([fd], Some(0));
    ready > 0 && events & libc::POLLIN != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An eventfd is readable once written, not before; a wait on it alone
    /// runs out its time.
    #[test]
    fn a_written_eventfd_is_readable_and_an_empty_one_times_out() {
        // SAFETY: a plain system call; the descriptor is closed below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
        assert!(fd >= 0);
        assert!(!readable(fd));
        assert_eq!(wait([fd], Some(1_000_000)).0, 0, "the time ran out");
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to the eventfd.
        unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
        assert!(readable(fd));
        let (ready, [events]) = wait([fd], None);
        assert_eq!((ready, events & libc::POLLIN), (1, libc::POLLIN));
        // SAFETY: the descriptor opened above, closed once.
        unsafe { libc::close(fd) };
    }
}
