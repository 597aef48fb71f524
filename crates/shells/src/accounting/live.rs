//! Counters a running direction shares with the status line. The pump
//! owns the link model and its counters; it copies them here a few times a
//! second (relaxed stores, once per pass of its loop at most, never per
//! packet), and the status thread reads them without stopping anything.

use link::Link;
use std::sync::atomic::{AtomicU64, Ordering};

/// How often a busy pump copies its counters: well under the status
/// line's one second, so each refresh sees fresh numbers.
pub const PUBLISH_EVERY_NS: u64 = 50_000_000;

/// One direction's counters as last published.
#[derive(Debug, Default)]
pub struct LiveCounters {
    arrived_bytes: AtomicU64,
    delivered_bytes: AtomicU64,
    dropped: AtomicU64,
    marked: AtomicU64,
    queue_packets: AtomicU64,
    queue_bytes: AtomicU64,
}

/// A consistent-enough copy of [`LiveCounters`] (each field is exact; the
/// fields may be up to one publication apart).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub arrived_bytes: u64,
    pub delivered_bytes: u64,
    pub dropped: u64,
    /// CE and ECT(1) marks together.
    pub marked: u64,
    pub queue_packets: u64,
    pub queue_bytes: u64,
}

impl LiveCounters {
    /// Copies the link's counters; called by the pump thread only.
    pub fn publish(&self, link: &Link) {
        let c = link.counters();
        let (packets, bytes) = link.queue_occupancy();
        let store = |cell: &AtomicU64, value: u64| cell.store(value, Ordering::Relaxed);
        store(&self.arrived_bytes, c.arrived_bytes);
        store(&self.delivered_bytes, c.delivered_bytes);
        store(&self.dropped, c.dropped_total());
        store(&self.marked, c.marked_ce + c.marked_ect1);
        store(&self.queue_packets, packets as u64);
        store(&self.queue_bytes, bytes as u64);
    }

    pub fn snapshot(&self) -> Snapshot {
        let load = |cell: &AtomicU64| cell.load(Ordering::Relaxed);
        Snapshot {
            arrived_bytes: load(&self.arrived_bytes),
            delivered_bytes: load(&self.delivered_bytes),
            dropped: load(&self.dropped),
            marked: load(&self.marked),
            queue_packets: load(&self.queue_packets),
            queue_bytes: load(&self.queue_bytes),
        }
    }
}
