//! The data path of one direction of a shell: a reader thread that stamps
//! each packet's arrival as it comes off a TUN device, a lock-free ring, and
//! a pump thread that runs the link model and writes each packet out when
//! it is due — sleeping precisely until shortly before, then spinning.
//!
//! No async runtime is involved: its timers tick in milliseconds, and the
//! model needs microseconds.

use crate::lateness::Lateness;
use crate::live::{LiveCounters, PUBLISH_EVERY_NS};
use crate::tun::{read_packet, wait_readable, write_packet, write_raw};
use emu_core::offload::{continues_run, merge_run, segment, MAX_MERGED, VNET_HDR_LEN};
use emu_core::ring::{spsc, Consumer, Producer};
use emu_core::time::{monotonic_now, Nanos};
use emu_core::Packet;
use link::Link;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Packets between reader and pump; deep enough for bursts at 10 Gbit/s.
const RING_CAPACITY: usize = 1 << 15;
/// Largest read a TUN device can hand us: a 64 KiB super-packet and its
/// virtio-net header.
const READ_BUFFER: usize = 65_536 + VNET_HDR_LEN;
/// How many arrivals the pump takes before it checks for due departures,
/// so a burst of arrivals cannot hold departures back.
const ARRIVAL_BATCH: usize = 64;

/// Something the pumps tell the control thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PumpNews {
    /// The link of shell `n` reached the end of a trace run with `--once`.
    TraceEnded(usize),
}

/// Tuning of the pump's wait.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long before a departure the pump stops sleeping and spins.
    pub spin: Nanos,
    /// Never sleep: readers and pumps poll (yielding the core to anything
    /// else runnable). Removes the wake-up latency of sleeping threads from
    /// every packet's path, at the price of keeping the cores busy.
    pub busy_poll: bool,
}

/// The devices one direction moves packets between.
#[derive(Debug, Clone, Copy)]
pub struct Devices {
    /// Read by the reader thread.
    pub input: RawFd,
    /// Written by the pump.
    pub output: RawFd,
    /// Both devices carry virtio-net headers (see `Tun::create`).
    pub offload: bool,
}

/// The two threads of one direction and what they share.
pub struct DirectionPump {
    reader: Option<JoinHandle<u64>>,
    pump: Option<JoinHandle<(Link, u64, Lateness)>>,
    wake: Arc<Wake>,
    stop_reader: Arc<AtomicBool>,
    stop_pump: Arc<AtomicBool>,
    live: Arc<LiveCounters>,
}

/// An eventfd the reader writes to when the pump sleeps with nothing due.
struct Wake {
    fd: RawFd,
}

impl Wake {
    fn new() -> io::Result<Wake> {
        // SAFETY: creating a descriptor we own from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Wake { fd })
    }

    fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.fd, (&one as *const u64).cast(), 8) };
    }

    fn clear(&self) {
        let mut value: u64 = 0;
        // SAFETY: reading 8 bytes from our eventfd (non-blocking).
        unsafe { libc::read(self.fd, (&mut value as *mut u64).cast(), 8) };
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor we own.
        unsafe { libc::close(self.fd) };
    }
}

/// What one direction did, read after its threads have stopped.
pub struct DirectionResult {
    pub link: Link,
    pub read: u64,
    pub write_errors: u64,
    /// How late each write was against its due time.
    pub lateness: Lateness,
}

impl DirectionPump {
    /// Starts the threads: packets read from `input` cross `link` and are
    /// written to `output`.
    pub fn start(
        name: &str,
        shell: usize,
        link: Link,
        devices: Devices,
        timing: Timing,
        news: Sender<PumpNews>,
    ) -> io::Result<DirectionPump> {
        let Devices {
            input,
            output,
            offload,
        } = devices;
        let (producer, consumer) = spsc::<Packet>(RING_CAPACITY);
        let stop_reader = Arc::new(AtomicBool::new(false));
        let stop_pump = Arc::new(AtomicBool::new(false));
        let sleeping = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(Wake::new()?);
        let live = Arc::new(LiveCounters::default());
        let pump = {
            let live = live.clone();
            let stop = stop_pump.clone();
            let sleeping = sleeping.clone();
            let wake = wake.clone();
            std::thread::Builder::new()
                .name(format!("{name}-pump"))
                .spawn(move || {
                    pump_loop(
                        shell, link, consumer, input, output, offload, stop, sleeping, wake,
                        timing, news, &live,
                    )
                })?
        };
        let reader = {
            let stop = stop_reader.clone();
            let wake = wake.clone();
            std::thread::Builder::new()
                .name(format!("{name}-read"))
                .spawn(move || {
                    reader_loop(
                        input,
                        offload,
                        timing.busy_poll,
                        producer,
                        stop,
                        wake,
                        sleeping,
                    )
                })?
        };
        Ok(DirectionPump {
            reader: Some(reader),
            pump: Some(pump),
            wake,
            stop_reader,
            stop_pump,
            live,
        })
    }

    /// The counters this direction publishes while it runs.
    pub fn live(&self) -> Arc<LiveCounters> {
        self.live.clone()
    }

    /// Stops reading. Call for every direction before [`finish`], so no
    /// packet is read after its pump has stopped counting.
    pub fn stop_reading(&mut self) -> u64 {
        self.stop_reader.store(true, Ordering::Release);
        self.reader
            .take()
            .map(|r| r.join().unwrap_or(0))
            .unwrap_or(0)
    }

    /// Stops the pump after it has taken every packet off the ring.
    pub fn finish(mut self, read: u64) -> DirectionResult {
        self.stop_pump.store(true, Ordering::Release);
        self.wake.ring();
        let (link, write_errors, lateness) = self
            .pump
            .take()
            .expect("finish is called once")
            .join()
            .expect("pump thread panicked");
        DirectionResult {
            link,
            read,
            write_errors,
            lateness,
        }
    }
}

fn reader_loop(
    fd: RawFd,
    offload: bool,
    busy_poll: bool,
    mut ring: Producer<Packet>,
    stop: Arc<AtomicBool>,
    wake: Arc<Wake>,
    pump_sleeping: Arc<AtomicBool>,
) -> u64 {
    let mut buffer = vec![0u8; READ_BUFFER];
    let mut segments: Vec<Vec<u8>> = Vec::with_capacity(64);
    let mut read = 0u64;
    loop {
        match read_packet(fd, &mut buffer) {
            Ok(0) => continue,
            Ok(n) => {
                let now = monotonic_now();
                if offload {
                    // One read may hold a TCP super-packet: cut it into the
                    // packets the wire would carry, all stamped now. A read
                    // that cannot be cut goes on whole, to be dropped and
                    // logged as oversize rather than vanish.
                    if segment(&buffer[..n], &mut segments).is_err() {
                        segments.clear();
                        segments.push(buffer[VNET_HDR_LEN.min(n)..n].to_vec());
                    }
                    for data in segments.drain(..) {
                        read += 1;
                        push_packet(&mut ring, Packet::new(data, now), &wake);
                    }
                } else {
                    read += 1;
                    push_packet(&mut ring, Packet::new(buffer[..n].to_vec(), now), &wake);
                }
                // Pairs with the pump's fence between announcing sleep and
                // checking the ring: one of the two sees the other.
                fence(Ordering::SeqCst);
                if pump_sleeping.load(Ordering::Relaxed) {
                    wake.ring();
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::Acquire) {
                    return read;
                }
                if busy_poll {
                    std::thread::yield_now();
                } else {
                    wait_readable(fd, 50);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return read, // the device is gone
        }
    }
}

/// Writes the packets that are due, in order; returns how many writes the
/// kernel refused. With offload, consecutive segments of one TCP flow that
/// are all due go out as one GSO packet (what GRO would make of them on a
/// real receiver), so a pump that is behind catches up with one system call
/// instead of dozens. Nothing is written before its time: only packets
/// already due are merged. Each packet's lateness is taken as its write
/// starts.
fn write_due(
    fd: RawFd,
    due: &[(Packet, Nanos)],
    offload: bool,
    merged: &mut Vec<u8>,
    lateness: &mut Lateness,
) -> u64 {
    let mut errors = 0;
    let mut start = 0;
    while start < due.len() {
        let first = &due[start].0.data;
        let mut end = start + 1;
        let mut size = first.len();
        if offload {
            while end < due.len()
                && size + due[end].0.len() <= MAX_MERGED
                && continues_run(first, &due[end - 1].0.data, &due[end].0.data)
            {
                size += due[end].0.len();
                end += 1;
            }
        }
        let now = monotonic_now();
        for (_, due_at) in &due[start..end] {
            lateness.record(now.saturating_sub(*due_at));
        }
        let written = if end - start == 1 {
            write_packet(fd, first, offload)
        } else {
            let run: Vec<&[u8]> = due[start..end]
                .iter()
                .map(|(p, _)| p.data.as_slice())
                .collect();
            merge_run(&run, merged);
            write_raw(fd, merged)
        };
        if written.is_err() {
            errors += (end - start) as u64;
        }
        start = end;
    }
    errors
}

/// Puts a packet on the ring. A full ring means the pump is behind: wait
/// for room rather than lose a packet that was already read.
fn push_packet(ring: &mut Producer<Packet>, mut packet: Packet, wake: &Wake) {
    loop {
        match ring.push(packet) {
            Ok(()) => return,
            Err(emu_core::ring::PushError::Full(back)) => {
                packet = back;
                wake.ring();
                std::thread::yield_now();
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn pump_loop(
    shell: usize,
    mut link: Link,
    mut ring: Consumer<Packet>,
    input: RawFd,
    fd: RawFd,
    offload: bool,
    stop: Arc<AtomicBool>,
    sleeping: Arc<AtomicBool>,
    wake: Arc<Wake>,
    timing: Timing,
    news: Sender<PumpNews>,
    live: &LiveCounters,
) -> (Link, u64, Lateness) {
    // Ask for wakeups to the nanosecond instead of the default 50 µs slack.
    // SAFETY: prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut write_errors = 0u64;
    let mut lateness = Lateness::default();
    let mut due: Vec<(Packet, Nanos)> = Vec::with_capacity(ARRIVAL_BATCH);
    let mut merged: Vec<u8> = Vec::with_capacity(MAX_MERGED + VNET_HDR_LEN);
    let mut told_trace_end = false;
    let mut input_woke_us = false;
    let mut next_publish: Nanos = 0;
    loop {
        let mut taken = 0;
        while taken < ARRIVAL_BATCH {
            let Ok(packet) = ring.pop() else { break };
            link.arrive(packet);
            taken += 1;
        }
        let now = monotonic_now();
        link.advance(now);
        while let Some(departure) = link.pop_due_written_at(now) {
            due.push(departure);
        }
        if !due.is_empty() {
            write_errors += write_due(fd, &due, offload, &mut merged, &mut lateness);
            due.clear();
        }
        if now >= next_publish {
            live.publish(&link);
            next_publish = now + PUBLISH_EVERY_NS;
        }
        if link.trace_ended() && !told_trace_end {
            told_trace_end = true;
            let _ = news.send(PumpNews::TraceEnded(shell));
        }
        if taken > 0 {
            input_woke_us = false;
            continue;
        }
        if stop.load(Ordering::Acquire) && ring.is_empty() {
            return (link, write_errors, lateness);
        }
        let deadline = link.next_event();
        let now = monotonic_now();
        let wait = match deadline {
            Some(d) if d <= now => continue,
            Some(d) => Some(d - now),
            None => None,
        };
        match wait {
            Some(w) if w <= timing.spin => {
                let deadline = now + w;
                // Yielding while spinning lets a reader or the command that
                // shares this core run; with nothing else runnable, the
                // yield returns at once and this is a plain spin.
                while monotonic_now() < deadline && ring.is_empty() && !stop.load(Ordering::Relaxed)
                {
                    std::thread::yield_now();
                }
            }
            _ if timing.busy_poll => std::thread::yield_now(),
            _ => {
                // What is published must be current before a sleep that
                // may last until the next packet.
                live.publish(&link);
                sleeping.store(true, Ordering::Relaxed);
                fence(Ordering::SeqCst);
                if ring.is_empty() && !stop.load(Ordering::Acquire) {
                    // Watch the input only if the last wake-up it caused found
                    // the packet on the ring; otherwise the reader has not
                    // run yet and polling the still-readable device again
                    // would spin and keep it from running.
                    let watch = if input_woke_us { None } else { Some(input) };
                    input_woke_us = sleep_until_input(watch, &wake, wait.map(|w| w - timing.spin));
                }
                sleeping.store(false, Ordering::Relaxed);
            }
        }
    }
}

/// Sleeps until `timeout` passes, the reader rings `wake`, or a packet
/// becomes readable on `input`. Waiting on the input device itself wakes
/// the pump at the same moment as the reader, instead of one wake-up after
/// the other: on a virtual machine a wake-up costs tens of microseconds.
/// The pump then spins briefly until the reader has pushed the packet.
fn sleep_until_input(input: Option<RawFd>, wake: &Wake, timeout: Option<Nanos>) -> bool {
    let mut fds = [
        libc::pollfd {
            fd: wake.fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: input.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let timeout = timeout.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let timeout_ptr = timeout
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: valid pollfds (a negative fd is ignored by ppoll) and an
    // optional valid timespec.
    unsafe { libc::ppoll(fds.as_mut_ptr(), 2, timeout_ptr, std::ptr::null()) };
    if fds[0].revents != 0 {
        wake.clear();
    }
    fds[1].revents != 0
}
