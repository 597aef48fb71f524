//! The writer thread: the pumps push records (and captured packets) onto
//! rings that never block the data path, and one thread writes them to
//! their files, counting what a full ring or a failing disk cost.

use crate::capture::{CaptureEncoder, CaptureHeader, CaptureOptions, Captured, Fate};
use crate::log::header::{write_header, LogHeader};
use crate::log::record::{Record, RECORD_SIZE};
use crate::output::{Encode, FileTotals, Routed, Stream};
use crate::ring::{spsc, Consumer, Producer};
use crate::time::Nanos;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The pump's end of a log ring. Pushing never blocks: if the writer has
/// fallen so far behind that the ring is full, the record is counted in
/// `lost` (reported at exit) rather than stalling a packet.
pub struct LogSink {
    producer: Option<Producer<Record>>,
    lost: Arc<AtomicU64>,
    capture: Option<CaptureSink>,
}

/// The pump's end of a capture ring, with what to capture. Like records,
/// a capture that finds the ring full is counted as lost, never waited for.
pub struct CaptureSink {
    producer: Producer<Captured>,
    options: CaptureOptions,
    lost: Arc<AtomicU64>,
}

impl LogSink {
    /// A sink that records nothing (logging off).
    pub fn disabled() -> LogSink {
        LogSink {
            producer: None,
            lost: Arc::new(AtomicU64::new(0)),
            capture: None,
        }
    }

    /// This sink, also capturing packets into `capture`.
    pub fn with_capture(mut self, capture: CaptureSink) -> LogSink {
        self.capture = Some(capture);
        self
    }

    /// True when packets are captured (departures at least).
    #[inline]
    pub fn captures(&self) -> bool {
        self.capture.is_some()
    }

    /// Captures the first bytes of a packet that departed or was dropped
    /// at `time`; drops only when they were asked for.
    pub fn capture(&mut self, time: Nanos, data: &[u8], fate: Fate) {
        let Some(capture) = &mut self.capture else {
            return;
        };
        if matches!(fate, Fate::Dropped { .. }) && !capture.options.drops {
            return;
        }
        if capture.producer.is_full() {
            capture.lost.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let kept = data.len().min(capture.options.snaplen as usize);
        let packet = Captured {
            time,
            original_len: data.len() as u32,
            data: data[..kept].to_vec(),
            fate,
        };
        if capture.producer.push(packet).is_err() {
            capture.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.producer.is_some()
    }

    #[inline]
    pub fn record(&mut self, record: Record) {
        if let Some(producer) = &mut self.producer {
            if producer.push(record).is_err() {
                self.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A capture ring read directly, for virtual-time tests.
impl CaptureSink {
    pub fn in_memory(
        capacity: usize,
        options: CaptureOptions,
    ) -> (CaptureSink, Consumer<Captured>) {
        let (producer, consumer) = spsc(capacity);
        (
            CaptureSink {
                producer,
                options,
                lost: Arc::new(AtomicU64::new(0)),
            },
            consumer,
        )
    }
}

/// A sink that keeps records in memory, for virtual-time tests.
impl LogSink {
    pub fn in_memory(capacity: usize) -> (LogSink, Consumer<Record>) {
        let (producer, consumer) = spsc(capacity);
        (
            LogSink {
                producer: Some(producer),
                lost: Arc::new(AtomicU64::new(0)),
                capture: None,
            },
            consumer,
        )
    }
}

/// Encodes records as the log format has them, 48 bytes each.
struct RecordEncoder;

impl Encode<Record> for RecordEncoder {
    fn encode(&mut self, record: &Record, out: &mut Vec<u8>) -> io::Result<()> {
        let mut bytes = [0u8; RECORD_SIZE];
        record.encode(&mut bytes);
        out.extend_from_slice(&bytes);
        Ok(())
    }
}

/// A record has one file per ring.
impl Routed for Record {
    fn slot(&self) -> usize {
        0
    }
}

/// The thread that drains every sink's ring into its shell's file, and
/// every capture ring into its pcapng files: two [`Stream`]s, one thread.
/// A file the disk refuses is cut at its last whole item and what follows
/// is counted (see [`crate::output`]); the rings keep being drained.
pub struct LogWriter {
    stop: Arc<AtomicBool>,
    lost: Arc<AtomicU64>,
    captures_lost: Arc<AtomicU64>,
    thread: Option<JoinHandle<(Vec<FileTotals>, Vec<FileTotals>)>>,
    records: Option<Stream<Record>>,
    captures: Option<Stream<Captured>>,
}

/// What the writer wrote, what it had to lose (a ring was full: the
/// writer fell behind) and what it could not write (the disk refused).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriterTotals {
    /// Records in the log files.
    pub records: u64,
    pub records_lost: u64,
    /// Records taken off the rings that are not in their file.
    pub records_unwritten: u64,
    /// Packets in the capture files.
    pub captures: u64,
    pub captures_lost: u64,
    pub captures_unwritten: u64,
    /// Every file, log files first, with what it holds and why it stopped.
    pub files: Vec<FileTotals>,
}

impl WriterTotals {
    fn new(records: Vec<FileTotals>, captures: Vec<FileTotals>, lost: [u64; 2]) -> WriterTotals {
        let sum = |files: &[FileTotals], f: fn(&FileTotals) -> u64| files.iter().map(f).sum();
        WriterTotals {
            records: sum(&records, |f| f.written),
            records_lost: lost[0],
            records_unwritten: sum(&records, |f| f.unwritten),
            captures: sum(&captures, |f| f.written),
            captures_lost: lost[1],
            captures_unwritten: sum(&captures, |f| f.unwritten),
            files: records.into_iter().chain(captures).collect(),
        }
    }

    /// The files the disk refused, with why: each holds everything before
    /// its failure and nothing after.
    pub fn incomplete(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.files
            .iter()
            .filter_map(|f| f.failure.as_deref().map(|e| (f.path.as_path(), e)))
    }
}

/// Captured packets per ring: they carry their bytes, so fewer than records.
pub const CAPTURE_CAPACITY: usize = 1 << 16;

/// Records per ring: about 4 s of a saturated 1 Gbit/s direction, so the
/// writer can stall on a slow disk without losing any.
pub const SINK_CAPACITY: usize = 1 << 20;

impl LogWriter {
    pub fn new() -> LogWriter {
        let said = Arc::new(AtomicBool::new(false));
        LogWriter {
            stop: Arc::new(AtomicBool::new(false)),
            lost: Arc::new(AtomicU64::new(0)),
            captures_lost: Arc::new(AtomicU64::new(0)),
            thread: None,
            records: Some(Stream::new(("packet log", "records"), said.clone())),
            captures: Some(Stream::new(("capture", "packets"), said)),
        }
    }

    fn streams(&mut self) -> (&mut Stream<Record>, &mut Stream<Captured>) {
        match (&mut self.records, &mut self.captures) {
            (Some(records), Some(captures)) => (records, captures),
            _ => panic!("files and sinks are added before LogWriter::start"),
        }
    }

    /// Creates a pcapng capture file; returns its index for [`capture_sink`].
    pub fn add_capture(&mut self, path: &Path, header: &CaptureHeader) -> io::Result<usize> {
        let (encoder, start) = CaptureEncoder::new(header)?;
        self.streams().1.add_file(path, &start, Box::new(encoder))
    }

    /// A new capture ring whose departures go to capture file `departures`
    /// and whose drops, if captured, to `drops`.
    pub fn capture_sink(
        &mut self,
        departures: usize,
        drops: Option<usize>,
        options: CaptureOptions,
    ) -> CaptureSink {
        let (producer, consumer) = spsc(CAPTURE_CAPACITY);
        self.streams()
            .1
            .add_ring([Some(departures), drops], consumer);
        CaptureSink {
            producer,
            options: CaptureOptions {
                drops: drops.is_some(),
                ..options
            },
            lost: self.captures_lost.clone(),
        }
    }

    /// Creates a log file with its header; returns its index for [`sink`].
    pub fn add_file(&mut self, path: &Path, header: &LogHeader) -> io::Result<usize> {
        let mut start = Vec::new();
        write_header(&mut start, header)?;
        self.streams()
            .0
            .add_file(path, &start, Box::new(RecordEncoder))
    }

    /// A new sink whose records go to file `file`.
    pub fn sink(&mut self, file: usize) -> LogSink {
        let (producer, consumer) = spsc(SINK_CAPACITY);
        self.streams().0.add_ring([Some(file), None], consumer);
        LogSink {
            producer: Some(producer),
            lost: self.lost.clone(),
            capture: None,
        }
    }

    /// Starts the writer thread.
    pub fn start(&mut self) {
        let stop = self.stop.clone();
        let (Some(mut records), Some(mut captures)) = (self.records.take(), self.captures.take())
        else {
            return; // started already
        };
        self.thread = Some(
            std::thread::Builder::new()
                .name("emu-log".into())
                .spawn(move || {
                    loop {
                        // Read the flag before draining so nothing pushed
                        // before stop() is left behind.
                        let stopping = stop.load(Ordering::Acquire);
                        let moved = records.drain() + captures.drain();
                        if stopping {
                            break;
                        }
                        if moved == 0 {
                            records.flush();
                            captures.flush();
                            std::thread::sleep(Duration::from_millis(2));
                        }
                    }
                    records.flush();
                    captures.flush();
                    (records.totals(), captures.totals())
                })
                .expect("spawning the log writer thread"),
        );
    }

    /// Drains every ring, flushes, and says what was written, lost and
    /// unwritten. A disk that refused is no error here: it shows in the
    /// totals' [`WriterTotals::incomplete`] files, for the caller to report.
    pub fn finish(mut self) -> io::Result<WriterTotals> {
        self.stop.store(true, Ordering::Release);
        let (records, captures) = match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| io::Error::other("the log writer thread panicked"))?,
            None => {
                let (records, captures) = self.streams();
                records.flush();
                captures.flush();
                (
                    self.records.take().map(Stream::totals).unwrap_or_default(),
                    self.captures.take().map(Stream::totals).unwrap_or_default(),
                )
            }
        };
        Ok(WriterTotals::new(
            records,
            captures,
            [
                self.lost.load(Ordering::Relaxed),
                self.captures_lost.load(Ordering::Relaxed),
            ],
        ))
    }
}

impl Default for LogWriter {
    fn default() -> Self {
        Self::new()
    }
}
