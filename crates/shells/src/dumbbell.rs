//! The hosts of an experiment and the threads that carry their packets.
//!
//! Each host is a network namespace whose only way out is one TUN device.
//! Two threads serve the hosts' devices, one per lane of the pure
//! `fabric::Fabric` (see `fabric::lanes`): the lane of a side reads that
//! side's hosts, stamps each packet's arrival, takes it through its side
//! link, the bottlenecks away from that side and the receiver's side link
//! (each an exact `link::Link`), and writes it once into the receiving
//! host's device when its last link lets it go. Each watches its side's
//! devices with one epoll set: it reads only the devices that are ready,
//! and waits on all of them at once until the earliest due time across
//! its links, then spins the last stretch; neither grows a thread per
//! link or per host.
//!
//! Each moves packets as the shells' pumps do (`crate::datapath::wire`): with offload
//! (off by default: see [`HostSetup::offload`]), a host's TCP super-packet
//! is one read, cut into the segments the links see; with or without it,
//! segments of one flow that are due together go into the receiving host
//! as one super-packet, so a system call carries tens of packets at high
//! rates.
//!
//! How long a lane spins before a due time adapts as a pump's spin does
//! (see `crate::datapath::spin`): the high quantile of its own timed
//! wake-ups' lateness, less the slack. Where its departures come close
//! together its spin is held to a budget (see
//! `crate::datapath::spin::SpinBudget`); where they come closer than
//! [`TICK`] it does not wait for each at all, but wakes for input or on a
//! timer kept set at most [`TICK`] after the next due time, and writes
//! what is due then; and where it has work without end it rests a little
//! every few milliseconds (see `crate::datapath::rest`). Each way it
//! leaves the kernel the share of each second that keeps the real-time
//! class from being throttled.
//!
//! Like the shells' pumps each lane runs in the real-time class
//! (SCHED_FIFO 1), so that other work on the machine does not hold every
//! host's deliveries.
//!
//! Cost: two threads in the real-time class, each spinning for its own
//! departures (the second about 0.4 of a core more at 1 Gbit/s); while a
//! lane spins, the hosts' senders on its core wait. The measurements
//! behind each choice (two lanes, epoll, the adaptive spin, the real-time
//! class, the tick) are in docs/performance-history.md, "The experiments'
//! fabric threads".

use crate::accounting::lateness::Lateness;
use crate::datapath::handover::Handover;
use crate::datapath::rest::Rests;
use crate::datapath::spin::{
    Plan, Spacing, Spin, SpinBudget, Tick, CALIBRATION_SLEEP, CALIBRATION_SLEEPS,
};
use crate::datapath::wire::{write_due, Reception, MERGED_HEADERS};
use crate::error::{Result, ShellError};
use crate::sys::devices::{self, DeviceEnd};
use crate::sys::epoll::{Epoll, Event, NO_EVENT};
use crate::sys::guardian::Guardian;
use crate::sys::netns::NetNs;
use crate::sys::schedstat::HoldMeter;
use crate::sys::timer::KeptTimer;
use crate::sys::tun::Tun;
use crate::sys::{scheduling, sysctl};
use emu_core::time::{monotonic_now, Nanos};
use emu_core::Packet;
use fabric::{Delivery, Fabric, HostId, Side};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The device inside every host.
pub const HOST_DEVICE: &str = "emu0";
/// Packets taken from one device before the others get their turn.
const READ_BATCH: usize = 64;
/// Longest sleep, so a stop request is seen promptly.
const MAX_SLEEP: Nanos = 20_000_000;
/// How far off the next due time must be for a lane to read its hold
/// meter (a small proc file, tens of µs) before it waits.
const METER_ROOM: Nanos = 200_000;
/// How a lane ticks (see [`Tick`]): input wakes it, so for any departure
/// where they come closer together than 30 µs, sleeping on its hosts'
/// devices and the kept timer; sparser departures are spun for. Cost: a
/// departure may leave up to 30 µs late where departures are that dense,
/// in exchange for the lane's CPU staying inside the real-time class's
/// budget at 1 Gbit/s (see docs/performance-history.md). A pump ticks at
/// the run's slack (20 µs by default); the lane's 30 µs is the period its
/// measurements were made with.
const TICK: Tick = Tick {
    every: 30_000,
    woken_by_input: true,
};

/// A host as the experiment asks for it.
#[derive(Debug, Clone)]
pub struct HostSetup {
    pub name: String,
    pub address: Ipv4Addr,
    /// Prefix length of the experiment's subnet: every other host's address
    /// is reached through the device.
    pub prefix: u8,
    pub mtu: u32,
    /// The kernel hands the fabric the host's TCP super-packets (TSO), as
    /// the shells' devices do unless `--no-offload`. A host's super-packet
    /// then reaches its side link as a burst of segments stamped at one
    /// instant; experiments leave it off unless asked (see
    /// `experiment::file::RunSection::offload`). Deliveries into the
    /// host are merged either way (see `wire::write_due`).
    pub offload: bool,
    /// `net.*` sysctls set in the host's namespace, e.g.
    /// (`net.ipv4.tcp_ecn`, `1`).
    pub sysctls: Vec<(String, String)>,
}

/// A running host: its namespace and device. Dropping it closes both; a
/// namespace without processes then vanishes.
pub struct Host {
    pub name: String,
    pub address: Ipv4Addr,
    pub namespace: Arc<NetNs>,
    tun: Tun,
}

impl Host {
    /// Creates the namespace, its device and addresses, and sets its
    /// sysctls. The guardian learns of the namespace before anything can
    /// run in it.
    pub fn create(setup: &HostSetup, guardian: &mut Guardian) -> Result<Host> {
        let namespace = devices::new_namespace(guardian)?;
        let tun = devices::bring_up(
            &namespace,
            DeviceEnd {
                name: HOST_DEVICE,
                mtu: setup.mtu,
                offload: setup.offload,
                ipv4: (setup.address, setup.prefix, None),
                ipv6: None,
            },
        )?;
        for (key, value) in &setup.sysctls {
            sysctl::set_in(&namespace, key, value)
                .map_err(|e| ShellError::new(format!("host {}: {e}", setup.name)))?;
        }
        Ok(Host {
            name: setup.name.clone(),
            address: setup.address,
            namespace,
            tun,
        })
    }
}

/// What the fabric thread did, read after it stopped.
pub struct FabricResult {
    pub fabric: Fabric,
    /// Packets read from each host's device.
    pub read: Vec<u64>,
    /// Writes the kernel refused, per receiving host.
    pub write_errors: Vec<u64>,
    /// How late each packet was written against its due time, per
    /// receiving host (the error of its last link; the hops before it are
    /// exact in the model's time).
    pub lateness: Vec<Lateness>,
    /// Each lane's time held off a CPU while it had work (left, right):
    /// see [`LaneHold`].
    pub held: Vec<LaneHold>,
}

/// How long a lane's thread was held off its CPU while runnable, over how
/// long it ran: the waits of stretches mostly spent waiting, not those of
/// its own wake-ups (see [`crate::sys::schedstat::HoldMeter`]). A
/// real-time lane is held only by the kernel's budget for the real-time
/// class or threads of its priority or above: then every delivery due
/// meanwhile is late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneHold {
    pub side: Side,
    /// None where the kernel keeps no count.
    pub held_ns: Option<Nanos>,
    pub over_ns: Nanos,
}

/// The two threads that carry every host's packets: one per lane of the
/// fabric (see `fabric::lanes`), each reading one side's hosts.
pub struct FabricThread {
    lanes: Vec<JoinHandle<LaneResult>>,
    handovers: [Arc<Handover>; 2],
    stop: Arc<AtomicBool>,
}

/// What one lane's thread did.
struct LaneResult {
    lane: Fabric,
    read: Vec<u64>,
    write_errors: Vec<u64>,
    lateness: Vec<Lateness>,
    held: LaneHold,
}

/// What a lane's thread is given.
struct LaneSetup {
    lane: Fabric,
    /// Every host's device, in the fabric's host order (a lane writes into
    /// the hosts its links deliver to).
    devices: Vec<RawFd>,
    /// The devices this lane reads (one side's hosts') and its inbox,
    /// watched.
    ready: Ready,
    /// Packets handed to this lane, and to the other.
    inbox: Arc<Handover>,
    outbox: Arc<Handover>,
    stop: Arc<AtomicBool>,
    slack: Nanos,
    side: Side,
}

impl FabricThread {
    /// Starts carrying packets between `hosts` (in the fabric's host order)
    /// through `fabric`, split into its two lanes. `slack`: the lateness
    /// their adaptive spin accepts (see
    /// [`crate::datapath::pump::Timing::slack`]).
    pub fn start(fabric: Fabric, hosts: &[Host], slack: Nanos) -> Result<FabricThread> {
        let topology = fabric.topology().clone();
        if hosts.len() != topology.hosts() {
            return Err(ShellError::new(format!(
                "{} hosts for a fabric of {}",
                hosts.len(),
                topology.hosts()
            )));
        }
        let devices: Vec<RawFd> = hosts.iter().map(|h| h.tun.raw_fd()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let handover =
            || Handover::new().map_err(|e| ShellError::os("creating the fabric lanes' eventfd", e));
        let handovers = [Arc::new(handover()?), Arc::new(handover()?)];
        let mut thread = FabricThread {
            lanes: Vec::new(),
            handovers: handovers.clone(),
            stop: stop.clone(),
        };
        for (index, (lane, side)) in fabric
            .split_by_side()
            .into_iter()
            .zip([Side::Left, Side::Right])
            .enumerate()
        {
            let reads: Vec<HostId> = (0..topology.hosts())
                .filter(|&h| topology.side(h) == side)
                .collect();
            let ready = Ready::watch(&reads, &devices, handovers[index].wake_fd())
                .map_err(|e| ShellError::os("watching the hosts' devices", e))?;
            let setup = LaneSetup {
                lane,
                devices: devices.clone(),
                ready,
                inbox: handovers[index].clone(),
                outbox: handovers[1 - index].clone(),
                stop: stop.clone(),
                slack,
                side,
            };
            let name = match side {
                Side::Left => "emu-lane-left",
                Side::Right => "emu-lane-right",
            };
            let handle = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || carry(setup))
                .map_err(|e| ShellError::os("starting a fabric thread", e))?;
            // Dropped on an error, `thread` stops the lanes started so far.
            thread.lanes.push(handle);
        }
        Ok(thread)
    }

    /// Stops reading and returns the fabric with everything still in it
    /// (counted as queued by its links), its lanes joined again.
    pub fn stop(mut self) -> Result<FabricResult> {
        let results = self.stop_lanes()?;
        let hosts = results.first().map_or(0, |r| r.read.len());
        let mut read = vec![0u64; hosts];
        let mut write_errors = vec![0u64; hosts];
        let mut lateness: Vec<Lateness> = (0..hosts).map(|_| Lateness::default()).collect();
        let mut lanes = Vec::new();
        let held = results.iter().map(|r| r.held).collect();
        for (index, mut result) in results.into_iter().enumerate() {
            for h in 0..hosts {
                read[h] += result.read[h];
                write_errors[h] += result.write_errors[h];
                lateness[h].merge(&result.lateness[h]);
            }
            // Handed over, not yet admitted: it enters its link as queued.
            let mut waiting = Vec::new();
            self.handovers[index].take(&mut waiting);
            for (link, packet) in waiting {
                result.lane.keep_handed(link, packet);
            }
            lanes.push(result.lane);
        }
        let lanes: [Fabric; 2] = lanes
            .try_into()
            .map_err(|_| ShellError::new("the fabric did not have two lanes"))?;
        let fabric = Fabric::join(lanes).map_err(|e| ShellError::new(e.to_string()))?;
        Ok(FabricResult {
            fabric,
            read,
            write_errors,
            lateness,
            held,
        })
    }

    fn stop_lanes(&mut self) -> Result<Vec<LaneResult>> {
        self.stop.store(true, Ordering::Release);
        for handover in &self.handovers {
            handover.wake_up();
        }
        let mut results = Vec::new();
        let mut panicked = false;
        for handle in self.lanes.drain(..) {
            match handle.join() {
                Ok(result) => results.push(result),
                Err(_) => panicked = true,
            }
        }
        if panicked {
            return Err(ShellError::new("a fabric thread panicked"));
        }
        Ok(results)
    }
}

impl Drop for FabricThread {
    fn drop(&mut self) {
        let _ = self.stop_lanes();
    }
}

/// One lane's thread: reads its side's ready devices, admits what the
/// other lane handed it, runs its links to now, hands on what crosses to
/// the other lane, writes what is due, and waits for the next event; at
/// the stop, returns its links and what it counted.
// Long: the loop's phases share its buffers and counters, each a call;
// split, every phase would take them all as arguments.
fn carry(setup: LaneSetup) -> LaneResult {
    let LaneSetup {
        mut lane,
        devices,
        mut ready,
        inbox,
        outbox,
        stop,
        slack,
        side,
    } = setup;
    scheduling::precise_timer_slack();
    // Ahead of ordinary threads, as the shells' readers and pumps are: on
    // a busy machine an ordinary thread waits for a core for milliseconds,
    // and every host's deliveries wait with it.
    scheduling::realtime_priority();
    let started = monotonic_now();
    let mut hold_meter = HoldMeter::start(started);
    let hosts = devices.len();
    let mut read = vec![0u64; hosts];
    let mut write_errors = vec![0u64; hosts];
    let mut lateness: Vec<Lateness> = (0..hosts).map(|_| Lateness::default()).collect();
    let mut reception = Reception::default();
    let mut packets: Vec<Packet> = Vec::new();
    let mut out: Vec<Delivery> = Vec::with_capacity(256);
    let mut due: Vec<Vec<(Packet, Nanos)>> = (0..hosts).map(|_| Vec::new()).collect();
    let mut merged = Vec::with_capacity(MERGED_HEADERS);
    let mut handed = Vec::new();
    let samples = calibration_waits(&mut ready);
    let mut ready_hosts = Vec::new();
    let mut timers = Spin::new(None, &samples).accepting(slack);
    let mut budget = SpinBudget::new(monotonic_now());
    let mut rests = Rests::new(monotonic_now());
    let mut spacing = Spacing::between_deliveries(MAX_SLEEP);
    loop {
        ready.hosts(&mut ready_hosts);
        let took = read_hosts(
            &devices,
            &ready_hosts,
            &mut reception,
            &mut packets,
            &mut lane,
            &mut out,
            &mut read,
        );
        inbox.take(&mut handed);
        for (link, packet) in handed.drain(..) {
            lane.admit(link, packet, &mut out);
        }
        let mut now = monotonic_now();
        if let Some(rest) = rests.due(now) {
            std::thread::sleep(std::time::Duration::from_nanos(rest));
            rests.slept(rest);
            now = monotonic_now();
        }
        lane.run_until(now, &mut out);
        lane.take_handed(&mut handed);
        outbox.give(&mut handed);
        if !out.is_empty() {
            budget.departed(now);
            for delivery in &out {
                spacing.due(delivery.due);
            }
            deliver(
                &devices,
                &mut out,
                &mut due,
                &mut merged,
                &mut write_errors,
                &mut lateness,
            );
        }
        if stop.load(Ordering::Acquire) {
            let held = LaneHold {
                side,
                held_ns: hold_meter.as_mut().map(|m| m.held(now)),
                over_ns: now.saturating_sub(started),
            };
            return LaneResult {
                lane,
                read,
                write_errors,
                lateness,
                held,
            };
        }
        if took > 0 {
            continue;
        }
        let now = monotonic_now();
        let due = match lane.next_event() {
            Some((due, _)) if due <= now => continue,
            Some((due, _)) => due,
            None => now + MAX_SLEEP,
        };
        if let Some(meter) = hold_meter.as_mut() {
            meter.sample(now, due.saturating_sub(now) > METER_ROOM);
        }
        let slept = wait(&mut timers, &mut budget, &spacing, &mut ready, due, now);
        rests.slept(slept);
    }
}

/// Reads up to a batch from each of `hosts`' devices (the lane's, ready)
/// into it, which puts what is due at once in `out`; how many reads found
/// packets.
fn read_hosts(
    devices: &[RawFd],
    hosts: &[HostId],
    reception: &mut Reception,
    packets: &mut Vec<Packet>,
    fabric: &mut Fabric,
    out: &mut Vec<Delivery>,
    read: &mut [u64],
) -> usize {
    let mut took = 0;
    for &host in hosts {
        let fd = devices[host];
        for _ in 0..READ_BATCH {
            match reception.read(fd) {
                Ok(0) => break,
                Ok(_) => {
                    took += 1;
                    reception.split(monotonic_now(), packets);
                    read[host] += packets.len() as u64;
                    for packet in packets.drain(..) {
                        fabric.send(host, packet, out);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break, // WouldBlock, or the device is gone
            }
        }
    }
    took
}

/// Waits for `due` as the spin's plan says, the spin held to `budget`:
/// asleep on the devices until the spin before it (learning how late such
/// sleeps end), then looking without sleeping; a device that becomes
/// readable ends the wait. Returns how long it slept.
fn wait(
    timers: &mut Spin,
    budget: &mut SpinBudget,
    spacing: &Spacing,
    ready: &mut Ready,
    due: Nanos,
    now: Nanos,
) -> Nanos {
    if let Some(until) = TICK.until(spacing, due, now) {
        ready.wait_by(until);
        return monotonic_now().saturating_sub(now);
    }
    let spin = budget.allow(timers.current(), now);
    match timers.plan_spinning(spin, Some(due), now) {
        plan @ (Plan::Timed(until) | Plan::Probe(until)) => {
            let readable = ready.wait_until(until.min(now + MAX_SLEEP));
            let woke = monotonic_now();
            if !readable {
                timers.learn(plan, woke);
            }
            woke.saturating_sub(now)
        }
        _ => {
            let mut spun_to = now;
            while spun_to < due && !ready.any() {
                std::thread::yield_now();
                spun_to = monotonic_now();
            }
            budget.spend(spun_to.saturating_sub(now));
            0
        }
    }
}

/// The lateness of a few short timed waits on the hosts' devices, taken
/// before the first packet, where the adaptive spin starts (see
/// [`crate::datapath::spin::calibration_estimate`]); a device ready ends them.
fn calibration_waits(ready: &mut Ready) -> Vec<Nanos> {
    (0..CALIBRATION_SLEEPS)
        .map_while(|_| {
            let target = monotonic_now() + CALIBRATION_SLEEP;
            (!ready.wait_until(target)).then(|| monotonic_now().saturating_sub(target))
        })
        .collect()
}

/// Writes the packets that reached their hosts: each host's in the order
/// they came due, merged into super-packets (see [`write_due`]).
fn deliver(
    devices: &[RawFd],
    out: &mut Vec<Delivery>,
    due: &mut [Vec<(Packet, Nanos)>],
    merged: &mut Vec<u8>,
    write_errors: &mut [u64],
    lateness: &mut [Lateness],
) {
    for delivery in out.drain(..) {
        due[delivery.host].push((delivery.packet, delivery.due));
    }
    for (host, packets) in due.iter_mut().enumerate() {
        if packets.is_empty() {
            continue;
        }
        let record = &mut lateness[host];
        write_errors[host] += write_due(devices[host], packets, merged, |late| record.record(late));
        packets.clear();
    }
}

/// What is ready among a lane's devices and its inbox, one epoll set: a
/// look is one system call, however many devices.
struct Ready {
    epoll: Epoll,
    /// Wakes the lane by a deadline while its departures come closer
    /// than [`TICK`] (see [`wait`]).
    timer: KeptTimer,
    /// What the last look or wait found (tags: host ids, or [`INBOX`]),
    /// not yet read.
    events: Vec<Event>,
    found: usize,
}

/// The epoll tags of the lane's inbox and its timer (devices are tagged
/// with their host).
const INBOX: u64 = u64::MAX;
const TIMER: u64 = u64::MAX - 1;

impl Ready {
    fn watch(hosts: &[HostId], devices: &[RawFd], inbox: RawFd) -> io::Result<Ready> {
        let epoll = Epoll::new()?;
        for &host in hosts {
            epoll.add(devices[host], host as u64)?;
        }
        epoll.add(inbox, INBOX)?;
        let timer = KeptTimer::new()?;
        epoll.add(timer.fd(), TIMER)?;
        Ok(Ready {
            epoll,
            timer,
            events: vec![NO_EVENT; hosts.len() + 2],
            found: 0,
        })
    }

    /// Looks, without waiting: whether anything is ready.
    fn any(&mut self) -> bool {
        let found = self.epoll.look(&mut self.events).unwrap_or(0);
        self.keep_input(found)
    }

    /// Waits until `at` at the latest, on a timed wait to the nanosecond:
    /// whether anything became ready.
    fn wait_until(&mut self, at: Nanos) -> bool {
        let found = self.epoll.wait_until(&mut self.events, at).unwrap_or(0);
        self.keep_input(found)
    }

    /// Waits until `at` at the latest, on the kept timer (see
    /// [`KeptTimer`]): whether anything became ready. It may end earlier,
    /// on a deadline the timer still held.
    fn wait_by(&mut self, at: Nanos) -> bool {
        if self.timer.by(at).is_err() {
            return self.wait_until(at);
        }
        let found = self
            .epoll
            .wait_ms(&mut self.events, (MAX_SLEEP / 1_000_000) as i32)
            .unwrap_or(0);
        self.keep_input(found)
    }

    /// Keeps the devices and inbox among the `found` events, noting the
    /// timer if it went off; whether any input is ready.
    fn keep_input(&mut self, found: usize) -> bool {
        let mut kept = 0;
        for index in 0..found {
            if self.events[index].u64 == TIMER {
                self.timer.went_off();
            } else {
                self.events[kept] = self.events[index];
                kept += 1;
            }
        }
        self.found = kept;
        kept > 0
    }

    /// Puts the hosts whose devices are ready in `hosts`: those the last
    /// look or wait found, if it found any and they are not read yet (a
    /// wait that ended on input is not followed by a second look), or
    /// else those a look finds now.
    fn hosts(&mut self, hosts: &mut Vec<HostId>) {
        hosts.clear();
        if self.found == 0 {
            self.any();
        }
        let ready = self.events[..self.found].iter().map(|event| event.u64);
        hosts.extend(ready.filter(|&tag| tag != INBOX).map(|tag| tag as HostId));
        self.found = 0;
    }
}
