//! Signals sent to emu (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are passed on to
//! the command, so that `kill emu` stops the experiment the way stopping
//! the command would, and emu still tears its shells down afterwards.

use nix::sys::signal::{kill, SigSet, Signal};
use nix::unistd::{getpgid, Pid};

/// The signals passed on to the command.
const FORWARDED: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// [`FORWARDED`] as a signal set.
fn forwarded() -> SigSet {
    let mut set = SigSet::empty();
    for signal in FORWARDED {
        set.add(signal);
    }
    set
}

/// Blocks the forwarded signals in this thread, so every thread created
/// afterwards has them blocked and only [`spawn_forwarder`] receives them.
pub(crate) fn block_forwarded_signals() {
    let _ = forwarded().thread_block();
}

/// Waits for the blocked signals and passes on those sent with kill() to
/// `forward` (which returns false once no one listens): a terminal's
/// Ctrl-C already reaches the command, which shares our process group,
/// and must not arrive twice.
pub(crate) fn spawn_forwarder(forward: impl Fn(i32) -> bool + Send + 'static) {
    std::thread::spawn(move || {
        let set = forwarded();
        loop {
            // sigwaitinfo, not nix's sigwait: the sender's si_code tells a
            // terminal's signal from one sent with kill().
            // SAFETY: an all-zero siginfo_t is a valid one.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: a valid set; sigwaitinfo fills `info`.
            let signal = unsafe { libc::sigwaitinfo(set.as_ref(), &mut info) };
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
        // Our own child.
        let _ = kill(Pid::from_raw(command), Signal::SIGINT);
        return;
    };
    let Ok(group) = getpgid(None) else {
        return;
    };
    for pid in crate::sys::netns::processes_in(&[namespace]) {
        let pid = Pid::from_raw(pid);
        if getpgid(Some(pid)) == Ok(group) {
            let _ = kill(pid, Signal::SIGINT);
        }
    }
}

/// Sends `signal` to the command, emu's own child `pid`, not yet reaped
/// (so the pid is still the command's); a signal number kill() refuses is
/// not sent.
pub(crate) fn send(pid: i32, signal: i32) {
    if let Ok(signal) = Signal::try_from(signal) {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forwarded signals are blocked in the thread that blocks them
    /// (and so in every thread it creates afterwards), others are not.
    #[test]
    fn the_forwarded_signals_are_blocked() {
        let mask = std::thread::spawn(|| {
            block_forwarded_signals();
            let inherited = std::thread::spawn(|| SigSet::thread_get_mask().unwrap());
            inherited.join().unwrap()
        })
        .join()
        .unwrap();
        for signal in FORWARDED {
            assert!(mask.contains(signal), "{signal}");
        }
        assert!(!mask.contains(Signal::SIGUSR1));
    }
}
