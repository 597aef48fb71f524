//! Packets one lane of an experiment's fabric hands to the other (see
//! `fabric::lanes`): those between two hosts of one side, which leave a
//! link one lane runs for a link the other runs.
//!
//! They are rare (no bottleneck lies on their path, and an experiment's
//! flows cross it), so a mutex-guarded list is enough; an eventfd in the
//! receiving lane's wait wakes it for them, and a count read without the
//! lock keeps the lane from taking the lock on every turn when none wait.

use emu_core::Packet;
use fabric::LinkId;
use nix::sys::eventfd::{EfdFlags, EventFd};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The packets waiting for one lane, each with the link it enters.
pub struct Handover {
    packets: Mutex<Vec<(LinkId, Packet)>>,
    waiting: AtomicUsize,
    wake: EventFd,
}

impl Handover {
    pub fn new() -> io::Result<Handover> {
        Ok(Handover {
            packets: Mutex::new(Vec::new()),
            waiting: AtomicUsize::new(0),
            wake: EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?,
        })
    }

    /// The descriptor the receiving lane waits on beside its devices.
    pub fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Hands `packets` over (leaving the list empty) and wakes the
    /// receiving lane.
    pub fn give(&self, packets: &mut Vec<(LinkId, Packet)>) {
        if packets.is_empty() {
            return;
        }
        // The wake-up is written under the lock, as `take` clears it: the
        // descriptor is readable exactly while packets wait.
        let mut waiting = lock(&self.packets);
        waiting.append(packets);
        self.waiting.store(waiting.len(), Ordering::Release);
        self.wake_up();
    }

    /// Wakes the receiving lane (to hand it packets, or to stop it).
    pub fn wake_up(&self) {
        // A full counter (2^64 - 2 wake-ups unread) still wakes the lane.
        let _ = self.wake.write(1);
    }

    /// Takes what was handed over into `into`, and clears the wake-up.
    pub fn take(&self, into: &mut Vec<(LinkId, Packet)>) {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut waiting = lock(&self.packets);
        into.append(&mut waiting);
        self.waiting.store(0, Ordering::Release);
        let _ = self.wake.read();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::poll::readable;
    use emu_core::packet::build::ipv4_udp;

    #[test]
    fn what_is_given_is_taken_once_and_wakes_the_taker() {
        let handover = Handover::new().unwrap();
        let mut taken = Vec::new();
        handover.take(&mut taken);
        assert!(taken.is_empty());
        let mut given = vec![
            (
                3,
                Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 9, 0, 100), 5),
            ),
            (
                4,
                Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 2, 9, 0, 100), 6),
            ),
        ];
        handover.give(&mut given);
        assert!(given.is_empty());
        assert!(readable(handover.wake_fd()), "the taker is woken");
        handover.take(&mut taken);
        assert_eq!(
            taken.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            vec![3, 4]
        );
        assert!(!readable(handover.wake_fd()), "the wake-up is cleared");
        let mut again = Vec::new();
        handover.take(&mut again);
        assert!(again.is_empty());
    }
}
