//! Packets inside a path, a shell or a queue, found again by their
//! fingerprint when a later record of theirs comes. A retransmission may
//! share a fingerprint with a packet still inside, so each fingerprint
//! holds its packets in the order they came.
//!
//! A fingerprint is dropped once its last packet has left: the map holds
//! what is inside now, never every packet a long log has seen.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Values (an arrival time, a queue) of the packets inside, per key.
#[derive(Debug, Clone)]
pub struct InFlight<K, V> {
    inside: HashMap<K, VecDeque<V>>,
}

impl<K, V> Default for InFlight<K, V> {
    fn default() -> Self {
        InFlight {
            inside: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq, V> InFlight<K, V> {
    /// A packet came in: it is the newest under `key`.
    pub fn push(&mut self, key: K, value: V) {
        self.inside.entry(key).or_default().push_back(value);
    }

    /// The oldest packet under `key` left: taken out, and the key with it
    /// once it holds no other.
    pub fn pop(&mut self, key: &K) -> Option<V> {
        let queue = self.inside.get_mut(key)?;
        let value = queue.pop_front();
        if queue.is_empty() {
            self.inside.remove(key);
        }
        value
    }

    /// The oldest packet under `key`, left where it is.
    pub fn oldest(&self, key: &K) -> Option<&V> {
        self.inside.get(key)?.front()
    }

    /// The newest packet under `key`, left where it is.
    pub fn newest(&self, key: &K) -> Option<&V> {
        self.inside.get(key)?.back()
    }

    /// How many packets are inside.
    pub fn len(&self) -> usize {
        self.inside.values().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.inside.is_empty()
    }

    /// How many keys the map holds (each with at least one packet).
    pub fn keys(&self) -> usize {
        self.inside.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packets under one key leave in the order they came; a key whose
    /// packets have all left is gone, however many came and went.
    #[test]
    fn packets_leave_in_order_and_their_keys_with_them() {
        let mut inside = InFlight::default();
        inside.push(7u32, 'a');
        inside.push(7, 'b');
        assert_eq!(
            (inside.oldest(&7), inside.newest(&7)),
            (Some(&'a'), Some(&'b'))
        );
        assert_eq!(inside.pop(&7), Some('a'));
        assert_eq!(inside.pop(&7), Some('b'));
        assert_eq!(inside.pop(&7), None);
        for key in 0..100_000u32 {
            inside.push(key, 'x');
            inside.pop(&key);
        }
        assert_eq!((inside.keys(), inside.len()), (0, 0));
        assert!(inside.is_empty());
    }
}
