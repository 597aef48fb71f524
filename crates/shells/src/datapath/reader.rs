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
//! [`Input`]). Measured (context switches of emu's
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
//! pump (see [`crate::datapath::pump`]), so reading and writing run on separate
//! cores; a round of reads per input per turn keeps a flood on one from
//! holding up the others.
//!
//! A departure a reader keeps (one due too soon to wake a pump for, see
//! [`Waits`]) it sleeps for on a timer until a spin before it, as a pump
//! does, and learns its own wake-up lateness from those sleeps (see
//! [`crate::datapath::spin`]). Looking without sleeping for the whole wait would
//! cost 53 µs of a core for each acknowledgement through a 10 Mbit/s
//! link, about a quarter of emu's CPU there. Where wake-ups are as late as
//! the wait (this project's VM: 30–50 µs at the 99th percentile) the
//! sleep saves little; the saving comes with the slack the spin leaves
//! (`--slack`), and on machines that wake promptly.

use crate::datapath::direction::Waits;
use crate::datapath::input::{Input, Reading};
use crate::datapath::pump::Timing;
use crate::datapath::spin::{Plan, Spin};
use crate::sys::epoll::{Epoll, Event, NO_EVENT};
use crate::sys::poll::readable;
use crate::sys::scheduling::realtime_priority;
use emu_core::time::{monotonic_now, Nanos};
use nix::sys::eventfd::{EfdFlags, EventFd};
use std::io;
use std::os::fd::AsRawFd;
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
    stop_fd: EventFd,
}

impl Reader {
    /// Starts reading `inputs`. With `timing.busy_poll` the thread never
    /// sleeps (it yields the core between looks); otherwise it runs in the
    /// real-time class and sleeps until an input is readable, or until
    /// shortly before a departure it keeps.
    pub(crate) fn start(name: &str, inputs: Vec<Arc<Input>>, timing: Timing) -> io::Result<Reader> {
        let stop_fd = EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?;
        let epoll = Epoll::new()?;
        epoll.add(stop_fd.as_raw_fd(), STOP)?;
        for (index, input) in inputs.iter().enumerate() {
            epoll.add(input.fd(), index as u64)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || read_loop(&epoll, &inputs, timing, &stop))?
        };
        Ok(Reader {
            thread: Some(thread),
            stop,
            stop_fd,
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
        let _ = self.stop_fd.write(1);
        let _ = thread.join();
    }
}

impl Drop for Reader {
    /// Stops the thread; the eventfd it waited on closes after it, with
    /// the fields.
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Waits for ready inputs and reads a round from each, until stopped; then
/// reads what is left waiting.
fn read_loop(epoll: &Epoll, inputs: &[Arc<Input>], timing: Timing, stop: &AtomicBool) {
    if !timing.busy_poll {
        realtime_priority();
    }
    let mut gone = vec![false; inputs.len()];
    let mut waits = Waits::default();
    // The wake-up lateness of this thread's timed sleeps. It starts at the
    // longest spin and probes its way down (see `Spin::probe_due`): until
    // then, departures kept are looked for without sleeping, as before.
    let mut timers = Spin::new(timing.spin, &[]).accepting(timing.slack);
    let mut events = [NO_EVENT; EVENTS];
    // Level-triggered: an input with more to read than a round is reported
    // again on the next wait. The wait is bounded although the stop has
    // its own eventfd: a reader that waited without limit woke about 60 µs
    // later for each packet on this project's VM (ping through `delay 20`:
    // 40.21 ms against 40.15), and one look every 50 ms costs nothing.
    while !stop.load(Ordering::Acquire) {
        let plan = plan(waits.earliest(), monotonic_now(), &timers, timing.busy_poll);
        let ready = match wait(epoll, &mut events, plan) {
            Ok(ready) => ready,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // A look, or a timed wait this kernel could not take (no
        // `epoll_pwait2`), yields rather than poll in the real-time class.
        if ready == 0 && plan != Plan::Idle && !timers.learn(plan, monotonic_now()) {
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

/// How a reader keeping departures due from `earliest` on waits at `now`:
/// as [`Spin::plan`] says, unless it busy polls.
fn plan(earliest: Option<Nanos>, now: Nanos, timers: &Spin, busy_poll: bool) -> Plan {
    match busy_poll {
        true => Plan::Look,
        false => timers.plan(earliest, now),
    }
}

/// Waits on `epoll` for ready inputs as `plan` says: a look, a wait
/// without a deadline (bounded by [`WAIT_MS`]), or a timed wait to the
/// nanosecond; how many events were filled in.
fn wait(epoll: &Epoll, events: &mut [Event], plan: Plan) -> io::Result<usize> {
    match plan {
        Plan::Look => epoll.look(events),
        Plan::Idle => epoll.wait_ms(events, WAIT_MS),
        Plan::Timed(at) | Plan::Probe(at) => epoll.wait_until(events, at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::spin::SHORTEST_SLEEP;

    /// A reader keeping an acknowledgement due 53 µs on sleeps until its
    /// spin before it; one due within the spin (and a short sleep more)
    /// is looked for; a spin stuck long is probed down.
    #[test]
    fn a_kept_departure_is_slept_for_until_the_spin_before_it() {
        let now = 1_000_000_000;
        // Settled at about 10 µs of lateness: a 13 µs spin.
        let mut timers = Spin::new(None, &[10_000]);
        timers.observe(now - 1_000, now - 1_000 + 10_000);
        let spin = timers.current();
        assert!((10_000..20_000).contains(&spin), "{spin}");
        let at = now + 53_000;
        assert_eq!(plan(Some(at), now, &timers, false), Plan::Timed(at - spin));
        let close = now + spin + SHORTEST_SLEEP - 1;
        assert_eq!(plan(Some(close), now, &timers, false), Plan::Look);
        assert_eq!(plan(None, now, &timers, false), Plan::Idle);
        assert_eq!(plan(Some(at), now, &timers, true), Plan::Look);
        // Slack comes off the spin: the sleep lasts longer.
        let slack = timers.clone().accepting(5_000);
        assert_eq!(
            plan(Some(at), now, &slack, false),
            Plan::Timed(at - spin + 5_000)
        );
        // Never taught: the longest spin, probed with half the wait.
        let fresh = Spin::new(None, &[]);
        assert_eq!(
            plan(Some(at), now, &fresh, false),
            Plan::Probe(now + 26_500)
        );
    }

    /// A timed wait (a reader sleeping until the spin before a departure
    /// it keeps) lasts until its time and no less, unless input comes
    /// first.
    #[test]
    fn a_timed_wait_ends_at_its_time_or_at_input() {
        let epoll = Epoll::new().unwrap();
        let input = EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC).unwrap();
        epoll.add(input.as_raw_fd(), 7).unwrap();
        let mut events = [NO_EVENT; 4];
        let at = monotonic_now() + 2_000_000;
        assert_eq!(wait(&epoll, &mut events, Plan::Timed(at)).unwrap(), 0);
        assert!(monotonic_now() >= at, "woke before its time");
        // Input ends a long wait at once.
        assert_eq!(input.write(1).unwrap(), 8);
        let far = monotonic_now() + 10_000_000_000;
        assert_eq!(wait(&epoll, &mut events, Plan::Timed(far)).unwrap(), 1);
        let tag = events[0].u64;
        assert_eq!(tag, 7);
        assert!(monotonic_now() < far);
        // A look returns at once, input or not.
        assert_eq!(wait(&epoll, &mut events, Plan::Look).unwrap(), 1);
    }

    /// A reader starts on its epoll set and stop eventfd and stops when
    /// asked; its descriptors close with it.
    #[test]
    fn a_reader_without_inputs_starts_and_stops() {
        let timing = Timing {
            spin: None,
            slack: 0,
            busy_poll: true,
        };
        Reader::start("emu-test-reader", Vec::new(), timing)
            .unwrap()
            .stop();
    }
}
