//! The reader threads of a chain of shells: one per direction, each an
//! event loop over that direction's input in every shell of the chain.
//!
//! Why not one thread per input: the kernel handles a packet written into
//! a TUN device within the write, so the packet forwarded into the next
//! shell of a chain is already queued on that shell's input when the write
//! returns. A thread parked on that input is woken for it at that moment,
//! though the thread that wrote could take it at once; a wake-up costs
//! tens of microseconds of CPU on a virtual machine, and the woken thread
//! (in the real-time class) takes a core from the command. Measured with a
//! reader per input: each nested zero-delay shell added about 1.7 thread
//! wake-ups per ping. With one thread waiting on all of a direction's
//! inputs, nobody is parked on the input a write feeds: the writer finds
//! it ready on its next look, and a packet crosses any depth of nested
//! shells in the wake-up it caused. The answer, queued on the other
//! direction's input, is taken by the same thread too (see
//! [`crate::pump`]'s `Input`). Measured (context switches of emu's
//! threads per ping through 1, 2 and 3 nested zero-delay shells): 1.6, 3.2
//! and 5.1 with a reader per input, 1.6, 1.7 and 1.8 with one per
//! direction.
//!
//! Why not one thread for both directions: the write of a TCP
//! acknowledgement runs the sender's TCP stack, which sends the next
//! segments within the write; with one thread, reading data waited on
//! that. Measured with one reader for everything: TCP through one
//! zero-delay shell fell from 7.0 to 5.4 Gbit/s, through three from 3.8 to
//! 2.3, and departures at 1 Gbit/s were written up to 300 µs late (p99)
//! where they had been 70: the reader, in the pumps' real-time class,
//! held a core the pumps needed.
//!
//! Under load a reader only reads and hands packets to each direction's
//! pump (see [`crate::pump`]), so reading and writing run on separate
//! cores; a round of reads per input per turn keeps a flood on one from
//! holding up the others.

use crate::input::{Input, Reading, Waits};
use crate::pump::realtime_priority;
use crate::tun::readable;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Ready inputs taken per wait.
const EVENTS: usize = 64;
/// The epoll tag of the stop eventfd (inputs are tagged by index).
const STOP: u64 = u64::MAX;
/// The longest wait for input before a reader looks again (see
/// `read_loop`).
const WAIT_MS: i32 = 50;

/// A reader thread; stopped (and joined) when dropped.
pub struct Reader {
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    /// Wakes the thread from its wait when it is to stop.
    stop_fd: RawFd,
}

impl Reader {
    /// Starts reading `inputs`. With `busy_poll` the thread never sleeps
    /// (it yields the core between looks); otherwise it runs in the
    /// real-time class and sleeps until an input is readable.
    pub(crate) fn start(
        name: &str,
        inputs: Vec<Arc<Input>>,
        busy_poll: bool,
    ) -> io::Result<Reader> {
        // SAFETY: creating descriptors we own from here on.
        let stop_fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if stop_fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let epoll = match Epoll::new() {
            Ok(epoll) => epoll,
            Err(e) => {
                // SAFETY: closing the eventfd created above.
                unsafe { libc::close(stop_fd) };
                return Err(e);
            }
        };
        let reader = |epoll: Epoll| -> io::Result<Reader> {
            epoll.add(stop_fd, STOP)?;
            for (index, input) in inputs.iter().enumerate() {
                epoll.add(input.fd(), index as u64)?;
            }
            let stop = Arc::new(AtomicBool::new(false));
            let thread = {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(name.to_string())
                    .spawn(move || read_loop(&epoll, &inputs, busy_poll, &stop))?
            };
            Ok(Reader {
                thread: Some(thread),
                stop,
                stop_fd,
            })
        };
        reader(epoll).inspect_err(|_| {
            // SAFETY: closing the eventfd created above, not handed out.
            unsafe { libc::close(stop_fd) };
        })
    }

    /// Stops reading: call before any pump's `finish`, so nothing is read
    /// that a stopped pump would not count. What is already waiting on an
    /// input is read first.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::Release);
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.stop_fd, (&one as *const u64).cast(), 8) };
        let _ = thread.join();
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop_and_join();
        // SAFETY: closing our eventfd, after the thread that waited on it
        // has ended.
        unsafe { libc::close(self.stop_fd) };
    }
}

/// Waits for ready inputs and reads a round from each, until stopped; then
/// reads what is left waiting.
fn read_loop(epoll: &Epoll, inputs: &[Arc<Input>], busy_poll: bool, stop: &AtomicBool) {
    if !busy_poll {
        realtime_priority();
    }
    let mut gone = vec![false; inputs.len()];
    let mut waits = Waits::default();
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    // Level-triggered: an input with more to read than a round is reported
    // again on the next wait. The wait is bounded although the stop has
    // its own eventfd: a reader that waited without limit woke about 60 µs
    // later for each packet on this project's VM (ping through `delay 20`:
    // 40.21 ms against 40.15), and one look every 50 ms costs nothing.
    while !stop.load(Ordering::Acquire) {
        // A departure waited for (see `Waits`) is watched by looking
        // without sleeping: a sleep would wake as late as the pump.
        let look = busy_poll || !waits.is_empty();
        let ready = match epoll.wait(&mut events, if look { 0 } else { WAIT_MS }) {
            Ok(ready) => ready,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if ready == 0 && look {
            std::thread::yield_now();
        }
        for event in &events[..ready] {
            let tag = event.u64;
            if tag == STOP {
                continue;
            }
            let index = tag as usize;
            if inputs[index].read_round(&mut waits) == Reading::Gone {
                // A device that errs would be reported ready forever.
                gone[index] = true;
                let _ = epoll.remove(inputs[index].fd());
            }
        }
        waits.run_due();
    }
    // Whatever was read before the stop has been counted; take what is
    // still waiting, so the pumps account for it.
    for (input, gone) in inputs.iter().zip(gone) {
        if !gone {
            while input.read_round(&mut waits) == Reading::Open && readable(input.fd()) {}
        }
    }
    waits.hand_to_pumps();
    for input in inputs {
        input.close();
    }
}

/// An epoll instance, closed when dropped.
struct Epoll {
    fd: RawFd,
}

impl Epoll {
    fn new() -> io::Result<Epoll> {
        // SAFETY: creating a descriptor we own from here on.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll { fd })
    }

    /// Watches `fd` for input, reporting it with `tag`.
    fn add(&self, fd: RawFd, tag: u64) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: tag,
        };
        // SAFETY: a valid epoll instance, descriptor and event.
        if unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, fd, &mut event) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn remove(&self, fd: RawFd) -> io::Result<()> {
        // SAFETY: a valid epoll instance; the event is ignored for DEL.
        if unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` for ready descriptors;
    /// how many were filled in.
    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: the buffer holds `events.len()` entries.
        let n = unsafe {
            libc::epoll_wait(
                self.fd,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                timeout_ms,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor we own.
        unsafe { libc::close(self.fd) };
    }
}
