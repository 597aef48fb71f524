//! Queues of values per key, for matching a packet's later records to its
//! earlier ones by fingerprint: a retransmission may share a fingerprint
//! with a packet still in flight, so each key holds its packets in order.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

/// Takes the oldest value under `key`, dropping the key once it is empty
/// so the map holds only what is still in flight.
pub(crate) fn pop_front<K: Hash + Eq, V>(map: &mut HashMap<K, VecDeque<V>>, key: K) -> Option<V> {
    let queue = map.get_mut(&key)?;
    let value = queue.pop_front();
    if queue.is_empty() {
        map.remove(&key);
    }
    value
}
