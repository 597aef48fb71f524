//! How long the calling thread has waited for a CPU while runnable, as the
//! scheduler counts it (`/proc/thread-self/schedstat`, second field), and
//! how much of that was the thread held off its CPU rather than the
//! ordinary wait of its own wake-ups ([`HoldMeter`]).
//!
//! A real-time thread waits for a CPU long only when something holds it:
//! the kernel's budget for the real-time class (`sched_rt_runtime_us`, 95%
//! of each second per CPU by default), a thread of higher priority, or
//! another of its own priority on the same CPU. Every wake-up waits a
//! little too (3 µs on average on a 2-core virtual machine), which a
//! thread that sleeps thousands of times a second sums to over 1% of its
//! time without ever being held. A wake-up's lateness on a virtual machine
//! is not counted: the virtual CPU was not running. Cost: one read of a
//! small proc file.

use emu_core::time::Nanos;

/// Nanoseconds the calling thread has spent runnable but not running, or
/// None where the kernel does not keep the count (no `CONFIG_SCHED_INFO`).
pub fn runqueue_wait() -> Option<Nanos> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The shortest stretch of time whose waits [`HoldMeter`] judges together.
pub const HOLD_WINDOW: Nanos = 10_000_000;
/// A stretch longer than this is judged whenever the thread samples, room
/// or not: a hold in a longer one would be diluted below [`HOLD_SHARE`].
pub const HOLD_WINDOW_MAX: Nanos = 100_000_000;
/// The share of a stretch its waits must exceed to count as a hold: a
/// thread's wake-ups wait well under 2% of its time (a few µs each, at
/// most thousands a second), a hold of a few milliseconds fills a quarter
/// of a 10 ms stretch.
pub const HOLD_SHARE: f64 = 0.25;

/// The time a thread was held off its CPU: the waits of the stretches
/// (of [`HOLD_WINDOW`] or longer) in which it waited for more than
/// [`HOLD_SHARE`] of the time. The waits of wake-ups are left out, and so
/// is a hold shorter than a quarter of its stretch (under 2.5 ms of a
/// 10 ms one). Cost: one read of a small proc file a stretch, made where
/// the thread has room (see [`HoldMeter::sample`]).
#[derive(Debug, Clone, Copy)]
pub struct HoldMeter {
    since: Nanos,
    waited_since: Nanos,
    held: Nanos,
}

impl HoldMeter {
    /// A meter of the calling thread from `now`, or None where the kernel
    /// keeps no count.
    pub fn start(now: Nanos) -> Option<HoldMeter> {
        Some(HoldMeter {
            since: now,
            waited_since: runqueue_wait()?,
            held: 0,
        })
    }

    /// Closes the stretch that began at the last sample if it is long
    /// enough: of [`HOLD_WINDOW`] where `room` says the thread can afford
    /// the read now (nothing due for a while), of [`HOLD_WINDOW_MAX`]
    /// either way. Call from the thread metered.
    pub fn sample(&mut self, now: Nanos, room: bool) {
        let length = now.saturating_sub(self.since);
        if length >= HOLD_WINDOW_MAX || (room && length >= HOLD_WINDOW) {
            self.close(now);
        }
    }

    /// The time held so far, the stretch under way closed at `now`.
    pub fn held(&mut self, now: Nanos) -> Nanos {
        self.close(now);
        self.held
    }

    fn close(&mut self, now: Nanos) {
        let Some(waited) = runqueue_wait() else {
            return;
        };
        let length = now.saturating_sub(self.since);
        self.held += held_in(length, waited.saturating_sub(self.waited_since));
        self.since = now;
        self.waited_since = waited;
    }
}

/// Of a stretch of `length` in which the thread waited `waited` for a
/// CPU, the time it was held: all of the wait where it is over
/// [`HOLD_SHARE`] of the stretch, none otherwise.
pub fn held_in(length: Nanos, waited: Nanos) -> Nanos {
    if waited as f64 > HOLD_SHARE * length as f64 {
        waited
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `work` on a thread pinned to the calling thread's CPU beside
    /// one that spins there for `busy_ns`: each runs only while the other
    /// waits. Returns what `work` returns.
    fn beside_a_busy_thread<T: Send + 'static>(
        busy_ns: Nanos,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
        let pin = move || {
            // SAFETY: a zeroed cpu_set_t is valid; CPU_SET within bounds.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            }
        };
        let busy = std::thread::spawn(move || {
            pin();
            let end = emu_core::time::monotonic_now() + busy_ns;
            while emu_core::time::monotonic_now() < end {
                std::hint::spin_loop();
            }
        });
        let result = std::thread::spawn(move || {
            pin();
            work()
        })
        .join()
        .unwrap();
        busy.join().unwrap();
        result
    }

    /// The count never goes back; a thread that yields its CPU to a
    /// busy sibling pinned to the same CPU waits for it.
    #[test]
    fn a_thread_held_off_its_cpu_counts_the_wait() {
        let Some(before) = runqueue_wait() else {
            eprintln!("skipped: this kernel keeps no schedstat");
            return;
        };
        let waited = beside_a_busy_thread(200_000_000, || {
            let start = runqueue_wait().unwrap();
            let end = emu_core::time::monotonic_now() + 200_000_000;
            while emu_core::time::monotonic_now() < end {
                std::hint::spin_loop();
            }
            runqueue_wait().unwrap() - start
        });
        assert!(
            waited > 10_000_000,
            "waited {waited} ns beside a busy thread"
        );
        assert!(runqueue_wait().unwrap() >= before);
    }

    /// Wake-ups' waits are not holds; a stretch mostly spent waiting is.
    #[test]
    fn only_stretches_mostly_spent_waiting_are_holds() {
        // 5,000 wake-ups a second at 3 µs each: 1.5% of 10 ms.
        assert_eq!(held_in(HOLD_WINDOW, 150_000), 0);
        assert_eq!(held_in(HOLD_WINDOW, 2_500_000), 0);
        assert_eq!(held_in(HOLD_WINDOW, 2_600_000), 2_600_000);
        // A 50 ms throttle inside a stretch that grew to 60 ms.
        assert_eq!(held_in(60_000_000, 50_000_000), 50_000_000);
        // Diluted in a stretch too long to see it.
        assert_eq!(held_in(1_000_000_000, 50_000_000), 0);
        assert_eq!(held_in(0, 0), 0);
    }

    /// A thread that shares its CPU with a busy one, sampling as it goes,
    /// is metered as held for a good part of the time; the meter waits
    /// for its stretches to be long enough before it reads.
    #[test]
    fn a_thread_sharing_its_cpu_is_metered_as_held() {
        if runqueue_wait().is_none() {
            eprintln!("skipped: this kernel keeps no schedstat");
            return;
        }
        let (held, over) = beside_a_busy_thread(300_000_000, || {
            let start = emu_core::time::monotonic_now();
            let mut meter = HoldMeter::start(start).unwrap();
            let end = start + 300_000_000;
            let mut now = start;
            while now < end {
                meter.sample(now, true);
                std::hint::spin_loop();
                now = emu_core::time::monotonic_now();
            }
            (meter.held(now), now - start)
        });
        assert!(
            held > over / 5,
            "held {held} ns of {over} ns beside a busy thread"
        );
    }
}
