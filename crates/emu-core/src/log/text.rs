//! The text form of a packet log (`emu log dump`): CSV with a header line,
//! or JSON Lines with the CSV's columns as keys. A flow record shows the
//! tuple it names in a column of its own, and a change record its new
//! value.

use crate::flow::FlowTable;
use crate::log::{Event, LogReader, Record};
use serde::Serialize;
use std::io::Write;

/// Text forms of a log for `emu log dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpFormat {
    Csv,
    JsonLines,
}

/// One record as a JSON Lines object: the CSV's columns, under the same
/// names, numbers as numbers, names and hexadecimal hashes as strings.
#[derive(Serialize)]
struct JsonRecord {
    time_ns: u64,
    shell: u8,
    direction: &'static str,
    event: &'static str,
    detail: &'static str,
    bytes: u32,
    flow: String,
    fingerprint: String,
    queue_bytes: u32,
    queue_packets: u32,
    sojourn_ns: u64,
    ecn: u8,
    /// A change record's new value (0 for packet records).
    value: u64,
    /// A flow record's tuple, decoded (empty for other records).
    tuple: String,
}

impl JsonRecord {
    fn of(r: &Record, tuple: String) -> JsonRecord {
        let r = &shown(r);
        JsonRecord {
            time_ns: r.time,
            shell: r.shell,
            direction: r.direction.name(),
            event: r.event.name(),
            detail: r.detail_name(),
            bytes: r.bytes,
            flow: format!("{:08x}", r.flow),
            fingerprint: format!("{:08x}", r.fingerprint),
            queue_bytes: r.queue_bytes,
            queue_packets: r.queue_packets,
            sojourn_ns: if r.event == Event::Change {
                0
            } else {
                r.sojourn
            },
            ecn: r.ecn,
            value: r.value(),
            tuple,
        }
    }
}

/// A record as the dump shows it: a flow record's packed addresses and
/// ports are not byte counts or a fingerprint, so those fields read 0 and
/// the decoded tuple goes in its own column.
fn shown(r: &Record) -> Record {
    if r.event != Event::Flow {
        return *r;
    }
    Record {
        sojourn: 0,
        fingerprint: 0,
        bytes: 0,
        queue_bytes: 0,
        queue_packets: 0,
        ecn: 0,
        ..*r
    }
}

/// The CSV columns of a record (also the keys of its JSON Lines object).
const COLUMNS: [&str; 14] = [
    "time_ns",
    "shell",
    "direction",
    "event",
    "detail",
    "bytes",
    "flow",
    "fingerprint",
    "queue_bytes",
    "queue_packets",
    "sojourn_ns",
    "ecn",
    "value",
    "tuple",
];

/// The values of a record in the order of [`COLUMNS`]; `tuple` is a flow
/// record's decoded tuple.
fn column_values(r: &Record, tuple: String) -> [String; 14] {
    let r = &shown(r);
    [
        r.time.to_string(),
        r.shell.to_string(),
        r.direction.name().to_string(),
        r.event.name().to_string(),
        r.detail_name().to_string(),
        r.bytes.to_string(),
        format!("{:08x}", r.flow),
        format!("{:08x}", r.fingerprint),
        r.queue_bytes.to_string(),
        r.queue_packets.to_string(),
        if r.event == Event::Change {
            0
        } else {
            r.sojourn
        }
        .to_string(),
        r.ecn.to_string(),
        r.value().to_string(),
        tuple,
    ]
}

/// The tuple a flow record completes (`tcp 10.0.0.1:40312 → 10.0.0.2:5201`,
/// on the second half of an IPv6 tuple), empty for any other record.
fn tuple_of(table: &mut FlowTable, r: &Record) -> String {
    if r.event != Event::Flow {
        return String::new();
    }
    table.add(r);
    table
        .get(r.shell, r.direction, r.flow)
        .filter(|_| r.detail != 6)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Writes every record of `reader` as text. Stops at the first bad record
/// with its offset, after writing everything before it.
pub fn dump(
    reader: LogReader,
    format: DumpFormat,
    out: &mut impl Write,
) -> Result<u64, Box<dyn std::error::Error>> {
    if format == DumpFormat::Csv {
        writeln!(out, "{}", COLUMNS.join(","))?;
    }
    let mut count = 0;
    let mut flows = FlowTable::default();
    for record in reader {
        let record = record?;
        let tuple = tuple_of(&mut flows, &record);
        match format {
            DumpFormat::Csv => writeln!(out, "{}", column_values(&record, tuple).join(","))?,
            DumpFormat::JsonLines => {
                serde_json::to_writer(&mut *out, &JsonRecord::of(&record, tuple))?;
                writeln!(out)?
            }
        }
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::FlowTuple;
    use crate::log::{write_log_file, Change, Direction, DropReason, LogHeader};

    /// A drop by the AQM at 1000 + `i` ns: what the dump tests look for.
    fn sample(i: u64) -> Record {
        Record {
            time: 1_000 + i,
            sojourn: i * 7,
            flow: 0xdead_beef,
            bytes: 1500,
            event: Event::Drop,
            detail: DropReason::Aqm as u8,
            ..Default::default()
        }
    }

    #[test]
    fn change_records_dump_their_value() {
        let back = Record::change(5, 2, Direction::Uplink, Change::Rate, 20_000_000);
        let values = column_values(&back, String::new());
        assert_eq!(values[3], "change");
        assert_eq!(values[10], "0", "sojourn_ns is no packet's");
        assert_eq!(values[12], "20000000");
    }

    /// A flow record is dumped as the tuple it names, not as its packed
    /// addresses posing as byte counts.
    #[test]
    fn flow_records_dump_their_tuple() {
        let mut table = FlowTable::default();
        let v4 = FlowTuple {
            protocol: 6,
            source: "10.0.0.1".parse().unwrap(),
            destination: "10.0.0.2".parse().unwrap(),
            source_port: 40312,
            destination_port: 5201,
        };
        let (records, n) = v4.records(9, 0xabc, 0, Direction::Uplink);
        assert_eq!(n, 1);
        let values = column_values(&records[0], tuple_of(&mut table, &records[0]));
        assert_eq!(values[3], "flow");
        assert_eq!(values[13], "tcp 10.0.0.1:40312 → 10.0.0.2:5201");
        assert_eq!((values[5].as_str(), values[8].as_str()), ("0", "0"));
        let v6 = FlowTuple {
            protocol: 17,
            source: "fd00::1".parse().unwrap(),
            destination: "fd00::2".parse().unwrap(),
            source_port: 443,
            destination_port: 50000,
        };
        let (records, n) = v6.records(10, 0xdef, 0, Direction::Downlink);
        assert_eq!(n, 2);
        assert_eq!(
            tuple_of(&mut table, &records[0]),
            "",
            "the source half alone"
        );
        assert_eq!(
            tuple_of(&mut table, &records[1]),
            "udp [fd00::1]:443 → [fd00::2]:50000"
        );
        assert_eq!(tuple_of(&mut table, &sample(1)), "", "a packet record");
        let json = serde_json::to_value(JsonRecord::of(&records[1], "x".into())).unwrap();
        assert_eq!(
            (json["tuple"].as_str(), json["bytes"].as_u64()),
            (Some("x"), Some(0))
        );
    }

    /// A log cut in the middle of its last record is dumped up to the cut,
    /// and the error names it; JSON Lines carry the CSV's columns.
    #[test]
    fn a_cut_log_is_dumped_up_to_its_damage() {
        let path = std::env::temp_dir().join(format!("emu-dump-{}.emulog", std::process::id()));
        let records: Vec<Record> = (0..1000).map(sample).collect();
        write_log_file(&path, &LogHeader::default(), &records).unwrap();
        let length = std::fs::metadata(&path).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(length - 10).unwrap();

        let mut text = Vec::new();
        let err = dump(LogReader::open(&path).unwrap(), DumpFormat::Csv, &mut text).unwrap_err();
        assert!(err.to_string().contains("truncated"));
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().count(), 1000); // header + 999 good records
        assert!(text.lines().nth(1).unwrap().contains(",drop,aqm,1500,"));
        let mut json = Vec::new();
        let _ = dump(
            LogReader::open(&path).unwrap(),
            DumpFormat::JsonLines,
            &mut json,
        );
        let first: serde_json::Value =
            serde_json::from_str(String::from_utf8(json).unwrap().lines().next().unwrap()).unwrap();
        assert_eq!(first["event"], "drop");
        assert_eq!(first["detail"], "aqm");
        assert_eq!(first["flow"], "deadbeef");
        assert_eq!(first["time_ns"], 1000);
        // Every line is one object with exactly the CSV's columns.
        let keys: Vec<&str> = first
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut columns = COLUMNS.to_vec();
        columns.sort_unstable();
        let mut keys_sorted = keys.clone();
        keys_sorted.sort_unstable();
        assert_eq!(keys_sorted, columns);
        assert_eq!(first["sojourn_ns"], 0);
        assert_eq!(first["bytes"], 1500);
        std::fs::remove_file(&path).unwrap();
    }
}
