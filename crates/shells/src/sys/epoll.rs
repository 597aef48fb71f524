//! An epoll instance whose timed waits are to the nanosecond.
//!
//! A thread watching several devices asks the kernel once which are
//! ready, rather than polling each (`ppoll` visits every descriptor on
//! every call) or trying a read on each: on this project's VM a lane of an
//! experiment's fabric spent a fifth of its time in `ppoll` over five
//! descriptors at 1 Gbit/s. `epoll_pwait2` (Linux 5.11) takes a timeout in
//! nanoseconds; where it is missing a timed wait becomes a look.

use emu_core::time::{monotonic_now, Nanos, NS_PER_SEC};
use nix::sys::epoll::EpollCreateFlags;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// One ready descriptor, as the kernel reports it.
pub type Event = libc::epoll_event;

/// An empty event, to size a buffer of them.
pub const NO_EVENT: Event = libc::epoll_event { events: 0, u64: 0 };

/// Whether the kernel has `epoll_pwait2` (5.11 and later), which waits to
/// the nanosecond; `epoll_wait` counts in milliseconds.
static PRECISE_WAITS: AtomicBool = AtomicBool::new(true);

/// An epoll instance, closed when dropped.
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        let fd = nix::sys::epoll::Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?.0;
        Ok(Epoll { fd })
    }

    /// Watches `fd` for input (level-triggered), reporting it with `tag`.
    pub fn add(&self, fd: RawFd, tag: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: tag,
        };
        self.control(libc::EPOLL_CTL_ADD, fd, Some(&mut event))
    }

    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_DEL, fd, None)
    }

    /// `epoll_ctl(2)` on this instance: `op` on `fd` with `event` (none
    /// for a removal).
    fn control(
        &self,
        op: libc::c_int,
        fd: RawFd,
        event: Option<&mut libc::epoll_event>,
    ) -> io::Result<()> {
        let event = event.map_or(std::ptr::null_mut(), |e| e as *mut libc::epoll_event);
        // SAFETY: a valid epoll instance; the event is ours, or null where
        // the kernel ignores it.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// What is ready now, without waiting: how many events were filled in.
    pub fn look(&self, events: &mut [Event]) -> io::Result<usize> {
        checked(epoll_wait(self.fd.as_raw_fd(), events, 0))
    }

    /// Waits up to `ms` milliseconds for a ready descriptor.
    pub fn wait_ms(&self, events: &mut [Event], ms: i32) -> io::Result<usize> {
        checked(epoll_wait(self.fd.as_raw_fd(), events, ms))
    }

    /// Waits until the monotonic time `at` for a ready descriptor, to the
    /// nanosecond; on a kernel without `epoll_pwait2`, looks instead.
    pub fn wait_until(&self, events: &mut [Event], at: Nanos) -> io::Result<usize> {
        let fd = self.fd.as_raw_fd();
        if !PRECISE_WAITS.load(Ordering::Relaxed) {
            return self.look(events);
        }
        let n = epoll_pwait2(fd, events, at.saturating_sub(monotonic_now()));
        if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            PRECISE_WAITS.store(false, Ordering::Relaxed);
            return self.look(events);
        }
        checked(n)
    }
}

fn checked(n: libc::c_int) -> io::Result<usize> {
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `epoll_wait(2)`: waits up to `ms` milliseconds (0: looks) for ready
/// descriptors of `epfd`; how many were filled in, or -1 with errno set.
fn epoll_wait(epfd: RawFd, events: &mut [Event], ms: libc::c_int) -> libc::c_int {
    // SAFETY: the buffer holds `events.len()` entries.
    unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), events.len() as libc::c_int, ms) }
}

/// The kernel's `struct __kernel_timespec`, the timeout of
/// `epoll_pwait2`: 64-bit seconds and nanoseconds on every architecture,
/// where the C library's `timespec` has 32-bit seconds on some 32-bit ones.
#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// `epoll_pwait2(2)`: waits up to `span` nanoseconds for ready
/// descriptors of `epfd`, with no signal mask; how many were filled in, or
/// -1 with errno set (ENOSYS on a kernel before 5.11). Made as the system
/// call itself: the C library's wrapper exists only from glibc 2.35, and a
/// program that calls it does not link against an older one (RHEL 8 and 9,
/// Ubuntu 20.04).
fn epoll_pwait2(epfd: RawFd, events: &mut [Event], span: Nanos) -> libc::c_int {
    let timeout = KernelTimespec {
        tv_sec: (span / NS_PER_SEC) as i64,
        tv_nsec: (span % NS_PER_SEC) as i64,
    };
    // The kernel's argument list: epfd, events, maxevents, timeout,
    // sigmask, sigsetsize (not read when there is no mask).
    // SAFETY: the buffer holds `events.len()` entries; the timeout is a
    // valid `__kernel_timespec` for the call's length.
    let n = unsafe {
        libc::syscall(
            libc::SYS_epoll_pwait2,
            epfd,
            events.as_mut_ptr(),
            events.len() as libc::c_int,
            &timeout as *const KernelTimespec,
            std::ptr::null::<libc::sigset_t>(),
            0 as libc::size_t,
        )
    };
    n as libc::c_int
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::eventfd::{EfdFlags, EventFd};

    /// The system call `epoll_pwait2`, made without the C library's
    /// wrapper, sleeps on an empty set for the span asked, at least, and
    /// finds nothing.
    #[test]
    fn epoll_pwait2_as_a_system_call_waits_its_span() {
        let epoll = Epoll::new().unwrap();
        let mut events = [NO_EVENT; 4];
        let span = 3_000_000;
        let start = monotonic_now();
        let n = epoll_pwait2(epoll.fd.as_raw_fd(), &mut events, span);
        let error = io::Error::last_os_error();
        if n < 0 && error.raw_os_error() == Some(libc::ENOSYS) {
            eprintln!("skipped: a kernel before 5.11 has no epoll_pwait2");
            return;
        }
        assert_eq!(n, 0, "{error}");
        let waited = monotonic_now() - start;
        assert!(waited >= span, "woke after {waited} ns of {span}");
    }

    /// A look reports what is ready with its tag, level-triggered (again
    /// until it is read), and nothing once it is; a removed descriptor is
    /// not reported.
    #[test]
    fn a_look_reports_ready_descriptors_by_tag_until_read() {
        let epoll = Epoll::new().unwrap();
        let flags = EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC;
        let (a, b) = (
            EventFd::from_flags(flags).unwrap(),
            EventFd::from_flags(flags).unwrap(),
        );
        epoll.add(a.as_raw_fd(), 3).unwrap();
        epoll.add(b.as_raw_fd(), 9).unwrap();
        let mut events = [NO_EVENT; 4];
        assert_eq!(epoll.look(&mut events).unwrap(), 0);
        b.write(1).unwrap();
        for _ in 0..2 {
            assert_eq!(epoll.look(&mut events).unwrap(), 1);
            let tag = events[0].u64;
            assert_eq!(tag, 9);
        }
        b.read().unwrap();
        assert_eq!(epoll.look(&mut events).unwrap(), 0);
        a.write(1).unwrap();
        epoll.remove(a.as_raw_fd()).unwrap();
        assert_eq!(epoll.look(&mut events).unwrap(), 0);
        // A timed wait ends at its time with nothing ready, not before.
        let at = monotonic_now() + 1_000_000;
        assert_eq!(epoll.wait_until(&mut events, at).unwrap(), 0);
        assert!(monotonic_now() >= at || !PRECISE_WAITS.load(Ordering::Relaxed));
    }
}
