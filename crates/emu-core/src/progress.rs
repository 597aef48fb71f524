//! How many bytes of logs this process has read so far, for progress
//! reports on long inputs (`emu report` on a multi-gigabyte log). Readers
//! wrap their file in [`Counted`], which adds each underlying read (a
//! buffer refill of up to a megabyte, never a record) to one counter.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};

static BYTES_READ: AtomicU64 = AtomicU64::new(0);

/// Bytes read through every [`Counted`] reader of this process.
pub fn bytes_read() -> u64 {
    BYTES_READ.load(Ordering::Relaxed)
}

/// A reader whose reads count towards [`bytes_read`].
pub struct Counted<R>(pub R);

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        BYTES_READ.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_counted() {
        let before = bytes_read();
        let mut data = Vec::new();
        Counted(&[7u8; 3000][..]).read_to_end(&mut data).unwrap();
        assert_eq!(data.len(), 3000);
        assert!(bytes_read() - before >= 3000);
    }
}
