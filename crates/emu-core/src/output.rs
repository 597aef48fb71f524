//! One output stream of the log writer thread: items (log records, captured
//! packets) taken off the pumps' rings, encoded whole, and written to their
//! files in large chunks. Both streams of a run go through this one code,
//! so they fail the same way when the disk does.
//!
//! **When a write fails** (a full disk, a quota, an I/O error) the file is
//! cut back to the end of its last whole item, so every reader reads
//! everything before the cut and finds no torn item at its end; the file
//! is closed to further items, which are counted instead of written, and
//! the rings keep being drained so the pumps never find them full because
//! of the disk: emulation is never held hostage to the log. The first
//! failure of a run is said once on stderr, when it happens; the caller
//! reports the counts at the end.

use crate::ring::Consumer;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Bytes of encoded items gathered before one write to a file.
const WRITE_CHUNK: usize = 1 << 20;

/// Turns an item into the bytes a file holds for it.
pub trait Encode<T>: Send {
    /// Appends `item`'s bytes, whole, to `out`.
    fn encode(&mut self, item: &T, out: &mut Vec<u8>) -> io::Result<()>;
}

/// An item that may go to one of two files of its ring: slot 0 or slot 1
/// (a capture's departures or its drops; a record always to slot 0).
pub trait Routed {
    fn slot(&self) -> usize;
}

/// A file written whole items at a time.
struct OutputFile<T> {
    path: PathBuf,
    file: File,
    encoder: Box<dyn Encode<T>>,
    /// Encoded items not yet handed to the kernel.
    buffer: Vec<u8>,
    /// Where each buffered item ends in `buffer`.
    ends: Vec<usize>,
    /// Bytes the kernel has accepted, all of them whole items (or header).
    on_disk: u64,
    /// Items in the file.
    written: u64,
    /// Items given to this file, written or not.
    taken: u64,
    /// Why writing stopped, once it has.
    failure: Option<io::Error>,
}

/// What became of one file's items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTotals {
    pub path: PathBuf,
    /// Items in the file.
    pub written: u64,
    /// Items that were meant for the file but are not in it: a write failed.
    pub unwritten: u64,
    /// Why writing stopped, if it did.
    pub failure: Option<String>,
}

impl<T> OutputFile<T> {
    fn push(&mut self, item: &T, kind: (&str, &str), said: &AtomicBool) {
        self.taken += 1;
        if self.failure.is_some() {
            return;
        }
        let before = self.buffer.len();
        if let Err(e) = self.encoder.encode(item, &mut self.buffer) {
            self.buffer.truncate(before);
            self.fail(e, kind, said);
            return;
        }
        self.ends.push(self.buffer.len());
        if self.buffer.len() >= WRITE_CHUNK {
            self.flush(kind, said);
        }
    }

    /// Hands the buffered items to the kernel; on failure cuts the file
    /// back to its last whole item.
    fn flush(&mut self, kind: (&str, &str), said: &AtomicBool) {
        if self.failure.is_some() || self.buffer.is_empty() {
            return;
        }
        let mut done = 0;
        let mut error = None;
        while done < self.buffer.len() {
            match self.file.write(&self.buffer[done..]) {
                Ok(0) => {
                    error = Some(io::Error::from(io::ErrorKind::WriteZero));
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        // The items that reached the kernel whole.
        let whole = self.ends.partition_point(|&end| end <= done);
        let whole_bytes = if whole == 0 { 0 } else { self.ends[whole - 1] };
        self.written += whole as u64;
        self.on_disk += whole_bytes as u64;
        self.buffer.clear();
        self.ends.clear();
        if let Some(error) = error {
            if done > whole_bytes {
                // Freeing the torn item's bytes cannot need more space.
                if let Err(cut) = self.file.set_len(self.on_disk) {
                    self.failure = Some(io::Error::other(format!(
                        "{error} (and cutting its torn last item failed: {cut})"
                    )));
                    self.announce(kind, said);
                    return;
                }
            }
            self.fail(error, kind, said);
        }
    }

    fn fail(&mut self, error: io::Error, kind: (&str, &str), said: &AtomicBool) {
        self.buffer.clear();
        self.ends.clear();
        self.failure = Some(error);
        self.announce(kind, said);
    }

    /// Says, once per run, that the disk refused.
    fn announce(&self, (kind, items): (&str, &str), said: &AtomicBool) {
        if said.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Some(error) = &self.failure {
            eprintln!(
                "emu: warning: cannot write the {kind} {}: {error}; it ends after {} \
                 {items}; emulation goes on, and what follows is counted, not written",
                self.path.display(),
                self.written
            );
        }
    }

    fn totals(self) -> FileTotals {
        FileTotals {
            path: self.path,
            written: self.written,
            unwritten: self.taken - self.written,
            failure: self.failure.map(|e| e.to_string()),
        }
    }
}

/// One stream (records, or captures) of the writer thread: its files and
/// the rings that feed them.
pub struct Stream<T> {
    /// What the files are and hold, for messages: ("packet log",
    /// "records"), ("capture", "packets").
    kind: (&'static str, &'static str),
    files: Vec<OutputFile<T>>,
    /// Each ring with the files of its slots.
    rings: Vec<([Option<usize>; 2], Consumer<T>)>,
    /// Shared by every stream of a writer: whether a failure was said.
    said: Arc<AtomicBool>,
}

impl<T: Routed> Stream<T> {
    pub fn new(kind: (&'static str, &'static str), said: Arc<AtomicBool>) -> Stream<T> {
        Stream {
            kind,
            files: Vec::new(),
            rings: Vec::new(),
            said,
        }
    }

    /// Creates `path` holding `header`; returns the file's index.
    pub fn add_file(
        &mut self,
        path: &Path,
        header: &[u8],
        encoder: Box<dyn Encode<T>>,
    ) -> io::Result<usize> {
        let mut file = File::create(path)?;
        file.write_all(header)?;
        self.files.push(OutputFile {
            path: path.to_path_buf(),
            file,
            encoder,
            buffer: Vec::new(),
            ends: Vec::new(),
            on_disk: header.len() as u64,
            written: 0,
            taken: 0,
            failure: None,
        });
        Ok(self.files.len() - 1)
    }

    /// Feeds `ring` into the files of its slots; an item whose slot has
    /// no file is not wanted and goes nowhere.
    pub fn add_ring(&mut self, slots: [Option<usize>; 2], ring: Consumer<T>) {
        self.rings.push((slots, ring));
    }

    /// Moves every item waiting on the rings into the files' buffers
    /// (writing a chunk whenever one fills); returns how many.
    pub fn drain(&mut self) -> u64 {
        let mut moved = 0;
        for (slots, ring) in self.rings.iter_mut() {
            while let Ok(item) = ring.pop() {
                if let Some(file) = slots[item.slot()] {
                    self.files[file].push(&item, self.kind, &self.said);
                }
                moved += 1;
            }
        }
        moved
    }

    /// Hands every buffered item to the kernel.
    pub fn flush(&mut self) {
        for file in self.files.iter_mut() {
            file.flush(self.kind, &self.said);
        }
    }

    /// What became of every file's items.
    pub fn totals(self) -> Vec<FileTotals> {
        self.files.into_iter().map(OutputFile::totals).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::spsc;

    struct Bytes;
    impl Routed for Vec<u8> {
        fn slot(&self) -> usize {
            usize::from(self.first() == Some(&1))
        }
    }
    impl Encode<Vec<u8>> for Bytes {
        fn encode(&mut self, item: &Vec<u8>, out: &mut Vec<u8>) -> io::Result<()> {
            out.extend_from_slice(item);
            Ok(())
        }
    }

    #[test]
    fn items_reach_the_file_of_their_slot_and_unwanted_ones_nowhere() {
        let dir = std::env::temp_dir().join(format!("emu-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut stream = Stream::new(("test", "items"), Arc::new(AtomicBool::new(false)));
        let zero = stream
            .add_file(&dir.join("zero"), b"H", Box::new(Bytes))
            .unwrap();
        let (mut producer, consumer) = spsc(16);
        stream.add_ring([Some(zero), None], consumer);
        for item in [vec![0, 2], vec![1, 9], vec![0, 3]] {
            producer.push(item).unwrap();
        }
        assert_eq!(stream.drain(), 3);
        stream.flush();
        assert_eq!(
            std::fs::read(dir.join("zero")).unwrap(),
            b"H\x00\x02\x00\x03"
        );
        let totals = stream.totals();
        assert_eq!((totals[0].written, totals[0].unwritten), (2, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// /dev/full refuses every write with ENOSPC: the stream says so,
    /// counts, and goes on draining.
    #[test]
    fn a_refused_write_is_counted_not_fatal() {
        let said = Arc::new(AtomicBool::new(false));
        let mut stream = Stream::new(("test", "items"), said.clone());
        let file = OutputFile {
            path: "/dev/full".into(),
            file: std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
            encoder: Box::new(Bytes) as Box<dyn Encode<Vec<u8>>>,
            buffer: Vec::new(),
            ends: Vec::new(),
            on_disk: 0,
            written: 0,
            taken: 0,
            failure: None,
        };
        stream.files.push(file);
        let (mut producer, consumer) = spsc(16);
        stream.add_ring([Some(0), Some(0)], consumer);
        producer.push(vec![0; 10]).unwrap();
        stream.drain();
        stream.flush();
        assert!(said.load(Ordering::Relaxed));
        producer.push(vec![0; 10]).unwrap();
        assert_eq!(stream.drain(), 1, "the ring is still drained");
        stream.flush();
        let totals = stream.totals();
        assert_eq!((totals[0].written, totals[0].unwritten), (0, 2));
        assert!(totals[0].failure.as_deref().unwrap().contains("space"));
    }
}
