//! How the threads that move packets are scheduled: woken to the
//! nanosecond, and ahead of ordinary threads. Every packet thread (a
//! shell's readers and pumps, an experiment's fabric lanes) readies
//! itself here.

/// Asks for timed wake-ups to the nanosecond instead of the default
/// 50 µs of slack, for the calling thread only: a departure's sleep then
/// ends when it is due. Cost: the kernel merges fewer timers, so a
/// thread that sleeps often wakes the CPU more often.
pub(crate) fn precise_timer_slack() {
    // SAFETY: prctl on the calling thread, with a value, no pointer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Puts the calling thread in the lowest real-time class (SCHED_FIFO,
/// priority 1), so that when it wakes for a packet it runs at once instead
/// of waiting for the command's threads to use up their time slice: on a
/// loaded machine that wait, not the model, is what makes packets late
/// (milliseconds at the 99th percentile with both cores busy). The thread
/// sleeps whenever it has nothing due, and spins at most `--spin` before a
/// departure, so it takes little from the command; the kernel's real-time
/// throttling (sched_rt_runtime_us) bounds it in any case. Not for
/// `--busy-poll`, whose threads never sleep. Where the class is refused
/// (rootless, a container without CAP_SYS_NICE) the thread keeps its
/// ordinary class.
pub(crate) fn realtime_priority() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: changes the calling thread's (pid 0) policy with a valid param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}
