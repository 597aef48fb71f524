//! How long the calling thread has waited for a CPU while runnable, as the
//! scheduler counts it (`/proc/thread-self/schedstat`, second field).
//!
//! A real-time thread waits for a CPU only when something holds it: the
//! kernel's budget for the real-time class (`sched_rt_runtime_us`, 95% of
//! each second per CPU by default), a thread of higher priority, or
//! another of its own priority on the same CPU. A wake-up's lateness on a
//! virtual machine is not counted: the virtual CPU was not running. Cost:
//! one read of a small proc file.

use emu_core::time::Nanos;

/// Nanoseconds the calling thread has spent runnable but not running, or
/// None where the kernel does not keep the count (no `CONFIG_SCHED_INFO`).
pub fn runqueue_wait() -> Option<Nanos> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count never goes back; a thread that yields its CPU to a
    /// busy sibling pinned to the same CPU waits for it.
    #[test]
    fn a_thread_held_off_its_cpu_counts_the_wait() {
        let Some(before) = runqueue_wait() else {
            eprintln!("skipped: this kernel keeps no schedstat");
            return;
        };
        // Both threads on one CPU: each runs only while the other waits.
        let cpu = {
            // SAFETY: sched_getcpu has no preconditions.
            let c = unsafe { libc::sched_getcpu() };
            c.max(0) as usize
        };
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
            let end = emu_core::time::monotonic_now() + 200_000_000;
            while emu_core::time::monotonic_now() < end {
                std::hint::spin_loop();
            }
        });
        let waited = std::thread::spawn(move || {
            pin();
            let start = runqueue_wait().unwrap();
            let end = emu_core::time::monotonic_now() + 200_000_000;
            while emu_core::time::monotonic_now() < end {
                std::hint::spin_loop();
            }
            runqueue_wait().unwrap() - start
        })
        .join()
        .unwrap();
        busy.join().unwrap();
        assert!(
            waited > 10_000_000,
            "waited {waited} ns beside a busy thread"
        );
        assert!(runqueue_wait().unwrap() >= before);
    }
}
