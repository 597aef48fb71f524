//! Signals sent to emu (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are passed on to
//! the command, so that `kill emu` stops the experiment the way stopping
//! the command would, and emu still tears its shells down afterwards.

/// The signals passed on to the command.
const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Blocks the forwarded signals in this thread, so every thread created
/// afterwards has them blocked and only [`spawn_forwarder`] receives them.
pub(crate) fn block_forwarded_signals() {
    // SAFETY: building and installing a signal mask for this thread, which
    // every thread created afterwards inherits.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in FORWARDED {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Waits for the blocked signals and passes on those sent with kill() to
/// `forward` (which returns false once no one listens): a terminal's
/// Ctrl-C already reaches the command, which shares our process group,
/// and must not arrive twice.
pub(crate) fn spawn_forwarder(forward: impl Fn(i32) -> bool + Send + 'static) {
    std::thread::spawn(move || {
        // SAFETY: as in block_forwarded_signals; sigwaitinfo fills `info`.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in FORWARDED {
                libc::sigaddset(&mut set, signal);
            }
            loop {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let signal = libc::sigwaitinfo(&set, &mut info);
                if signal < 0 {
                    continue;
                }
                if info.si_code == libc::SI_KERNEL || info.si_code > 0 {
                    continue; // from the terminal: the command has it already
                }
                if !forward(signal) {
                    return;
                }
            }
        }
    });
}

/// Passes on a SIGINT sent to emu with kill() as a terminal's Ctrl-C
/// would: to every process of emu's process group in the command's
/// network namespace `namespace` (the command, and what it runs in the
/// foreground), not to the command alone. `sh -c 'sleep 60'` waits for
/// its sleep, which a SIGINT to the shell alone never reached, so the run
/// went on. Falls back to `command` alone where the namespace is unknown.
pub(crate) fn interrupt(namespace: Option<(u64, u64)>, command: i32) {
    let Some(namespace) = namespace else {
        // SAFETY: sending a signal to our own child.
        unsafe { libc::kill(command, libc::SIGINT) };
        return;
    };
    // SAFETY: getpgid(0) asks for this process's group.
    let group = unsafe { libc::getpgid(0) };
    for pid in crate::sys::netns::processes_in(&[namespace]) {
        // SAFETY: asking for a process's group, then signalling it.
        if unsafe { libc::getpgid(pid) } == group {
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    }
}
