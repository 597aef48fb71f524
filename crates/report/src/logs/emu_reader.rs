//! Reads a run's emu logs (one file per shell) into the analysis.
//!
//! A packet is followed across shells by its fingerprint, which no NAT
//! rewrites: it enters the path at the first shell it crosses (the
//! innermost for uplink, the outermost for downlink) and leaves it at the
//! last, so its one-way delay includes every shell's delay, queue and
//! serialization. The shells' files are merged in time order, one
//! direction at a time (each file's records of one direction are in time
//! order), holding one record per file and the packets in flight: memory
//! is bounded by what the path holds, not by the length of the log.

use crate::analysis::direction::DirectionAnalysis;
use crate::analysis::events::{
    FlowName, PathEvent, PathKind, ShellEvent, ShellInfo, ShellKind, Unmatched,
};
use crate::measures::capacity::Capacity;
use crate::measures::in_flight::InFlight;
use emu_core::flow::FlowTable;
use emu_core::log::{Direction, Event, LogError, LogHeader, LogReader, Mark, Record};
use emu_core::Nanos;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The logs of one run.
pub struct EmuRun {
    pub files: Vec<(PathBuf, LogHeader)>,
    /// When the last shell started, so the whole path was up: time 0 of
    /// the report. (The command starts after it; counting from the first
    /// shell's start would charge the setup of the others as idle time.)
    pub origin: Nanos,
}

impl EmuRun {
    /// Opens the `.emulog` files given; one whose header cannot be read is
    /// left out and its error returned.
    pub fn open(paths: &[PathBuf]) -> (EmuRun, Vec<LogError>) {
        let mut files = Vec::new();
        let mut errors = Vec::new();
        for path in paths {
            match LogReader::open(path) {
                Ok(reader) => files.push((path.clone(), reader.header)),
                Err(e) => errors.push(e),
            }
        }
        files.sort_by_key(|(_, h)| h.shell);
        // Logs of an earlier run left in the same directory (it had more
        // shells than this one) started before this run's outermost shell:
        // read with it, they would make one path of two runs.
        if let Some((shell, first)) = files.first().map(|(_, h)| (h.shell, h.realtime_origin_ns)) {
            files.retain(|(path, h)| {
                let earlier = h.realtime_origin_ns < first;
                if earlier {
                    errors.push(LogError {
                        path: path.clone(),
                        offset: 0,
                        message: format!(
                            "written by an earlier run (it began before shell {}'s log did): \
                             give each run a --log directory of its own",
                            shell
                        ),
                    });
                }
                !earlier
            });
        }
        let origin = files
            .iter()
            .map(|(_, h)| h.monotonic_origin_ns)
            .max()
            .unwrap_or(0);
        (EmuRun { files, origin }, errors)
    }

    /// Where packets of `direction` enter and leave the path.
    pub fn ends(&self, direction: Direction) -> (u8, u8) {
        let inner = self.files.iter().map(|(_, h)| h.shell).max().unwrap_or(0);
        let outer = self.files.iter().map(|(_, h)| h.shell).min().unwrap_or(0);
        match direction {
            Direction::Uplink => (inner, outer),
            Direction::Downlink => (outer, inner),
        }
    }

    /// Each shell's description and capacity in `direction`; problems
    /// loading a copied trace come back as warnings.
    pub fn shells(&self, direction: Direction) -> (Vec<ShellInfo>, Vec<String>) {
        let d = direction as usize;
        let mut warnings = Vec::new();
        let infos = self
            .files
            .iter()
            .map(|(path, h)| {
                let mut capacity = match h.rate_bps.and_then(|r| r[d]) {
                    Some(bps) => Capacity::Rate(bps),
                    None => Capacity::Unknown,
                };
                if let Some(file) = h.traces.as_ref().and_then(|t| t[d].as_ref()) {
                    let trace_path = path.parent().unwrap_or(Path::new(".")).join(&file.file);
                    match emu_core::trace::Trace::load(&trace_path) {
                        Ok(trace) => {
                            capacity = Capacity::Trace {
                                trace: Arc::new(trace),
                                repeat: file.repeat,
                                start: h.monotonic_origin_ns as i64 - self.origin as i64,
                            }
                        }
                        Err(e) => warnings.push(format!(
                            "{e}; shell {}'s {} capacity is left out",
                            h.shell,
                            direction.name()
                        )),
                    }
                }
                ShellInfo {
                    shell: h.shell,
                    description: h.description.clone(),
                    capacity,
                    shaper_bps: h.shaper_bps.and_then(|s| s[d]),
                }
            })
            .collect();
        (infos, warnings)
    }

    /// Streams one direction of every file into `analysis`. Returns the
    /// packets it could not follow through the path, the last record time, and the
    /// read errors (a damaged file stops at the damage; what came before
    /// it counts).
    pub fn feed(
        &self,
        direction: Direction,
        analysis: &mut DirectionAnalysis,
    ) -> (Unmatched, Nanos, Vec<LogError>) {
        let (entry, exit) = self.ends(direction);
        let mut errors = Vec::new();
        let mut streams: Vec<LogReader> = Vec::new();
        for (path, _) in &self.files {
            match LogReader::open(path) {
                Ok(reader) => streams.push(reader),
                Err(e) => errors.push(e),
            }
        }
        // One pending record per stream, ordered by time.
        let mut heads: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
        let mut pending: Vec<Option<Record>> = vec![None; streams.len()];
        let next = |i: usize, streams: &mut Vec<LogReader>, errors: &mut Vec<LogError>| {
            for item in streams[i].by_ref() {
                match item {
                    Ok(r) if r.direction == direction => return Some(r),
                    Ok(_) => continue,
                    Err(e) => {
                        errors.push(e);
                        return None;
                    }
                }
            }
            None
        };
        for (i, slot) in pending.iter_mut().enumerate() {
            if let Some(r) = next(i, &mut streams, &mut errors) {
                heads.push(Reverse((r.time, i)));
                *slot = Some(r);
            }
        }
        let mut tracker = Tracker {
            origin: self.origin,
            entry,
            exit,
            in_flight: InFlight::default(),
            in_shell: InFlight::default(),
            entered_mid_path: 0,
            flow_table: FlowTable::default(),
            left_as: HashMap::new(),
        };
        let mut end = 0;
        while let Some(Reverse((_, i))) = heads.pop() {
            let record = pending[i].take().expect("a head has a record");
            end = end.max(record.time.saturating_sub(self.origin));
            tracker.record(&record, analysis);
            if let Some(r) = next(i, &mut streams, &mut errors) {
                heads.push(Reverse((r.time, i)));
                pending[i] = Some(r);
            }
        }
        analysis.name_flows(tracker.names(direction));
        let unmatched = Unmatched {
            in_flight: tracker.in_flight.len() as u64,
            entered_mid_path: tracker.entered_mid_path,
        };
        (unmatched, end, errors)
    }
}

/// Follows packets through the path and through each shell.
struct Tracker {
    origin: Nanos,
    entry: u8,
    exit: u8,
    /// Packets inside the path: fingerprint → (entry time, entry flow).
    in_flight: InFlight<u32, (Nanos, u32)>,
    /// Packets inside one shell: (shell, fingerprint) → arrival time.
    in_shell: InFlight<(u8, u32), Nanos>,
    /// Packets that left the path without having entered at its start.
    entered_mid_path: u64,
    /// Every shell's flow records.
    flow_table: FlowTable,
    /// Entry flow id → the flow id its first delivered packet had at the
    /// exit (different where a shell's NAT rewrote the tuple).
    left_as: HashMap<u32, u32>,
}

impl Tracker {
    /// Each flow's name: its tuple at the entry shell, and at the exit
    /// shell where that differs.
    fn names(&self, direction: Direction) -> HashMap<u32, FlowName> {
        self.flow_table
            .seen_by(self.entry, direction)
            .map(|(flow, entry)| {
                let exit = self
                    .left_as
                    .get(&flow)
                    .and_then(|exit| self.flow_table.get(self.exit, direction, *exit))
                    .filter(|exit| *exit != entry)
                    .cloned();
                let entry = entry.clone();
                (flow, FlowName { entry, exit })
            })
            .collect()
    }

    // Long: one arm per kind of record, each the event the analysis is given.
    fn record(&mut self, r: &Record, analysis: &mut DirectionAnalysis) {
        if r.event == Event::Flow {
            self.flow_table.add(r);
            return;
        }
        let time = r.time.saturating_sub(self.origin);
        let key = (r.shell, r.fingerprint);
        let kind = match r.event {
            Event::Arrive => {
                self.in_shell.push(key, time);
                ShellKind::Arrive
            }
            Event::Enqueue => ShellKind::Enqueue,
            Event::Depart => ShellKind::Depart {
                sojourn: r.sojourn,
                arrived: self.in_shell.pop(&key),
            },
            Event::Drop => {
                self.in_shell.pop(&key);
                match r.drop_reason() {
                    Some(reason) => ShellKind::Drop(reason),
                    None => return,
                }
            }
            Event::Mark => match r.detail {
                16 => ShellKind::Mark(Mark::Ce),
                17 => ShellKind::Mark(Mark::Ect1),
                _ => return,
            },
            Event::Flow => return, // taken above
            Event::Duplicate => {
                // The copy is a packet of its own from here on: it is in
                // the shell and, if its original was, in the path.
                self.in_shell.push(key, time);
                if let Some(&entry) = self.in_flight.newest(&r.fingerprint) {
                    self.in_flight.push(r.fingerprint, entry);
                }
                return;
            }
            // Not about a packet's fate: the path's own parameters.
            Event::Change => {
                if let Some(change) = r.change_kind() {
                    analysis.change(r.shell, time, change, r.value());
                }
                return;
            }
            // Not about a packet's fate (corruption keeps it on its way).
            Event::Corrupt => return,
        };
        analysis.shell(ShellEvent {
            time,
            shell: r.shell,
            bytes: r.bytes,
            queue: Some((r.queue_bytes, r.queue_packets)),
            kind,
        });
        let path = |kind, flow| PathEvent {
            time,
            flow,
            bytes: r.bytes,
            kind,
        };
        match kind {
            ShellKind::Arrive if r.shell == self.entry => {
                self.in_flight.push(r.fingerprint, (time, r.flow));
                analysis.path(path(PathKind::Arrive, r.flow));
            }
            // Only packets that entered at the first shell belong to the
            // path; others were sent from between two shells (a nested
            // shell's own namespace) and are counted apart.
            ShellKind::Depart { .. } if r.shell == self.exit => {
                match self.in_flight.pop(&r.fingerprint) {
                    Some((entered, flow)) => {
                        self.left_as.entry(flow).or_insert(r.flow);
                        let delay = time.saturating_sub(entered);
                        analysis.path(path(PathKind::Deliver { delay }, flow));
                    }
                    None => self.entered_mid_path += 1,
                }
            }
            ShellKind::Drop(reason) => {
                if let Some((_, flow)) = self.in_flight.pop(&r.fingerprint) {
                    analysis.path(path(PathKind::Drop(reason), flow));
                }
            }
            ShellKind::Mark(mark) => {
                if let Some(&(_, flow)) = self.in_flight.oldest(&r.fingerprint) {
                    analysis.path(path(PathKind::Mark(mark), flow));
                }
            }
            _ => {}
        }
    }
}
