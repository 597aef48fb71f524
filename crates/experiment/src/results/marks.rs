//! The CE marks each flow got on the path, counted from the links' packet
//! logs.
//!
//! Why not TCP's own count: `tcp_info`'s `delivered_ce` counts the
//! segments the sender saw acknowledged with ECE, and with classic ECN
//! (RFC 3168) the receiver echoes ECE on every acknowledgement until the
//! sender's CWR, so one mark shows as about a window of segments: through
//! Cake, a cubic flow the links marked 14 times reported 1117. The links'
//! logs hold each mark once, as a `mark` record of the queue that made it.

use emu_core::flow::{FlowTable, FlowTuple};
use emu_core::log::{Direction, Event, LogReader, Mark};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;

/// What names a flow's packets on the path: the addresses of its two
/// hosts and the port its server listens on (either end of the tuple).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEnds {
    pub hosts: [IpAddr; 2],
    pub port: u16,
}

impl FlowEnds {
    fn names(&self, tuple: &FlowTuple) -> bool {
        tuple.has_port(self.port) && self.hosts.iter().all(|&a| tuple.has_address(a))
    }
}

/// The CE marks in `logs` on packets of each of `flows`, in their order.
/// A log that cannot be read whole is an error naming it: a count from
/// part of a log would pass for the whole.
pub fn ce_marks(logs: &[PathBuf], flows: &[FlowEnds]) -> Result<Vec<u64>, String> {
    let mut counts = vec![0u64; flows.len()];
    for path in logs {
        let reader = LogReader::open(path).map_err(|e| e.to_string())?;
        let mut names = FlowTable::default();
        let mut marked: HashMap<(u8, Direction, u32), u64> = HashMap::new();
        for record in reader {
            let record = record.map_err(|e| e.to_string())?;
            names.add(&record);
            if record.event == Event::Mark && record.detail == Mark::Ce as u8 {
                *marked
                    .entry((record.shell, record.direction, record.flow))
                    .or_default() += 1;
            }
        }
        for ((shell, direction, flow), n) in marked {
            let Some(tuple) = names.get(shell, direction, flow) else {
                continue;
            };
            if let Some(i) = flows.iter().position(|f| f.names(tuple)) {
                counts[i] += n;
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::flow::FlowNamer;
    use emu_core::log::{write_log_file, LogHeader, Record};
    use emu_core::packet::flow_hash;

    fn tcp4(source: [u8; 4], destination: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&40u16.to_be_bytes());
        p[9] = 6;
        p[12..16].copy_from_slice(&source);
        p[16..20].copy_from_slice(&destination);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    fn record(time: u64, flow: u32, event: Event, detail: u8) -> Record {
        Record {
            time,
            flow,
            bytes: 40,
            event,
            detail,
            ecn: 3,
            ..Record::default()
        }
    }

    /// Two flows through one link, each named by a flow record; marks of
    /// another kind (ECT(1)) and other events are not CE marks.
    #[test]
    fn each_flows_ce_marks_are_counted_once() {
        let dir = std::env::temp_dir().join(format!("emu-marks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("0-link.emulog");
        let mut namer = FlowNamer::default();
        let (a, b, c) = ([10, 0, 0, 1], [10, 0, 0, 3], [10, 0, 0, 2]);
        let first = tcp4(a, b, 40000, 5201);
        let second = tcp4(c, b, 40001, 5202);
        let mut records = Vec::new();
        for (i, packet) in [&first, &second].into_iter().enumerate() {
            let flow = flow_hash(packet);
            let (named, n) = namer
                .first_sight(packet, i as u64, flow, 0, Direction::Uplink)
                .unwrap();
            records.extend(&named[..n]);
            records.push(record(10, flow, Event::Arrive, 0));
        }
        let (one, two) = (flow_hash(&first), flow_hash(&second));
        records.push(record(11, one, Event::Mark, Mark::Ce as u8));
        records.push(record(12, one, Event::Mark, Mark::Ce as u8));
        records.push(record(13, two, Event::Mark, Mark::Ect1 as u8));
        records.push(record(14, two, Event::Mark, Mark::Ce as u8));
        records.push(record(15, two, Event::Drop, 1));
        write_log_file(&path, &LogHeader::default(), &records).unwrap();
        let ends = |host: [u8; 4], port| FlowEnds {
            hosts: [IpAddr::from(host), IpAddr::from(b)],
            port,
        };
        // The second flow's port with the first flow's host names nothing.
        let flows = [ends(a, 5201), ends(c, 5202), ends(a, 5202)];
        assert_eq!(
            ce_marks(std::slice::from_ref(&path), &flows).unwrap(),
            [2, 1, 0]
        );
        // A log cut inside a record is refused, not counted in part.
        let length = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(length - 5)
            .unwrap();
        let error = ce_marks(&[path], &flows).unwrap_err();
        assert!(error.contains("truncated"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
