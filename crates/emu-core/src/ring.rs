//! The lock-free single-producer single-consumer ring that joins a reader
//! thread to its pump, and a pump to the log writer.
//!
//! We use the `rtrb` crate rather than our own: it is a small, well-kept,
//! wait-free SPSC ring with exactly the interface the data path needs.

pub use rtrb::{Consumer, PopError, Producer, PushError};

/// A ring with room for `capacity` items, split into its two ends.
pub fn spsc<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    rtrb::RingBuffer::new(capacity)
}
