//! The log of a path's parameter changes: the base delay and the rate each
//! time they change, and every outage's start and end, stamped with the
//! instant they happened (not the time the model got to them).
//!
//! It reads its own cursors over the same schedules the model uses, so it
//! sees exactly the model's changes — the same random walk from the same
//! seed — without the model paying for it per packet.

use crate::outage::OutageCursor;
use crate::schedule::Cursor;
use emu_core::log::Change;
use emu_core::Nanos;

/// A value followed for the log.
#[derive(Debug, Clone)]
struct Followed {
    kind: Change,
    cursor: Cursor,
    last: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct ChangeLog {
    start: Nanos,
    followed: Vec<Followed>,
    outage: Option<OutageCursor>,
    /// Time up to which outages have been logged, and whether one is open.
    outage_position: Nanos,
    in_outage: bool,
    pending: Vec<(Nanos, Change, u64)>,
}

impl ChangeLog {
    pub fn new(start: Nanos) -> ChangeLog {
        ChangeLog {
            start,
            followed: Vec::new(),
            outage: None,
            outage_position: start,
            in_outage: false,
            pending: Vec::new(),
        }
    }

    pub fn follow(&mut self, kind: Change, cursor: Cursor) {
        self.followed.push(Followed {
            kind,
            cursor,
            last: None,
        });
    }

    /// Stops following `kind`: its schedule no longer applies (a
    /// controller set the value).
    pub fn unfollow(&mut self, kind: Change) {
        self.followed.retain(|f| f.kind != kind);
    }

    pub fn follow_outages(&mut self, cursor: OutageCursor) {
        self.outage = Some(cursor);
    }

    pub fn is_empty(&self) -> bool {
        self.followed.is_empty() && self.outage.is_none()
    }

    /// Every change at or before `now` not yet reported, in time order.
    pub fn until(&mut self, now: Nanos) -> std::vec::Drain<'_, (Nanos, Change, u64)> {
        self.pending.clear();
        for followed in &mut self.followed {
            if followed.last.is_none() {
                let value = followed.cursor.value_at(self.start);
                followed.last = Some(value);
                self.pending.push((self.start, followed.kind, value));
            }
            while let Some(at) = followed.cursor.next_change() {
                if at > now {
                    break;
                }
                let value = followed.cursor.value_at(at);
                if followed.last != Some(value) {
                    followed.last = Some(value);
                    self.pending.push((at, followed.kind, value));
                }
            }
        }
        if let Some(cursor) = &mut self.outage {
            while let Some((from, until)) = cursor.down_from(self.outage_position) {
                if !self.in_outage {
                    if from > now {
                        break;
                    }
                    self.pending.push((from, Change::OutageStart, until - from));
                    self.in_outage = true;
                }
                if until > now {
                    break;
                }
                self.pending.push((until, Change::OutageEnd, 0));
                self.in_outage = false;
                self.outage_position = until;
            }
        }
        self.pending.sort_by_key(|c| c.0);
        self.pending.drain(..)
    }
}
