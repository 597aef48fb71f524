use super::header::HEADER_RESERVE;
use super::*;
use std::path::PathBuf;

fn sample(i: u64) -> Record {
    Record {
        time: 1_000 + i,
        sojourn: i * 7,
        flow: 0xdead_beef,
        fingerprint: i as u32,
        bytes: 1500,
        queue_bytes: 3000,
        queue_packets: 2,
        shell: 1,
        direction: Direction::Downlink,
        event: Event::Drop,
        detail: DropReason::Aqm as u8,
        ecn: 3,
    }
}

#[test]
fn the_default_record_is_what_zero_bytes_decode_to() {
    assert_eq!(Record::decode(&[0; RECORD_SIZE]), Ok(Record::default()));
    let mut bytes = [1u8; RECORD_SIZE];
    Record::default().encode(&mut bytes);
    assert_eq!(bytes, [0; RECORD_SIZE]);
}

#[test]
fn change_records_round_trip() {
    let record = Record::change(5, 2, Direction::Uplink, Change::Rate, 20_000_000);
    let mut bytes = [0u8; RECORD_SIZE];
    record.encode(&mut bytes);
    let back = Record::decode(&bytes).unwrap();
    assert_eq!(back, record);
    assert_eq!(back.change_kind(), Some(Change::Rate));
    assert_eq!((back.value(), back.detail_name()), (20_000_000, "rate"));
    // A record of the first format version decodes as before.
    assert_eq!(sample(3).value(), 0);
}

#[test]
fn records_round_trip() {
    let mut bytes = [0u8; RECORD_SIZE];
    sample(5).encode(&mut bytes);
    assert_eq!(Record::decode(&bytes).unwrap(), sample(5));
    assert_eq!(sample(5).drop_reason(), Some(DropReason::Aqm));
}

fn header() -> LogHeader {
    LogHeader {
        shell: 1,
        description: "link 10mbit".into(),
        monotonic_origin_ns: 1,
        realtime_origin_ns: 2,
        rate_bps: None,
        command_line: String::new(),
        traces: None,
        queues: None,
        shaper_bps: Some([Some(500_000), None]),
        kernel_dropped: None,
    }
}

/// Writes `count` sample records to a fresh log `name` in a new
/// directory named after `test`; returns the directory and the path.
fn sample_log(test: &str, name: &str, count: u64) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("emu-log-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let mut writer = LogWriter::new();
    let file = writer.add_file(&path, &header()).unwrap();
    let mut sink = writer.sink(file);
    writer.start();
    for i in 0..count {
        sink.record(sample(i));
    }
    let totals = writer.finish().unwrap();
    assert_eq!((totals.records, totals.records_lost), (count, 0));
    (dir, path)
}

/// The exit-time counts go into the header of a finished log without
/// moving its records; a header that no longer fits is refused.
#[test]
fn a_finished_log_takes_the_kernel_drops_into_its_header() {
    let (dir, path) = sample_log("update", "0-delay.emulog", 10);
    let updated = LogHeader {
        kernel_dropped: Some([280_066, u64::MAX]),
        ..header()
    };
    update_header(&path, &updated).unwrap();
    let reader = LogReader::open(&path).unwrap();
    assert_eq!(reader.header, updated);
    let records: Vec<Record> = reader.map(|r| r.unwrap()).collect();
    assert_eq!(records, (0..10).map(sample).collect::<Vec<_>>());
    let too_long = LogHeader {
        command_line: "x".repeat(HEADER_RESERVE + 1),
        ..header()
    };
    assert!(update_header(&path, &too_long).is_err());
    assert_eq!(LogReader::open(&path).unwrap().header, updated);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A follower reads a log as it grows: a record cut by the end of the
/// file so far is held, not an error, and completed by a later read.
#[test]
fn a_follower_completes_a_record_the_writer_finishes_later() {
    use std::io::Write;
    let (dir, path) = sample_log("follow", "1-link.emulog", 3);
    let whole = std::fs::read(&path).unwrap();
    // The file as a writer might leave it mid-way: 1.5 records.
    let cut = whole.len() - RECORD_SIZE - RECORD_SIZE / 2;
    std::fs::write(&path, &whole[..cut]).unwrap();
    let mut reader = LogReader::open(&path).unwrap();
    assert_eq!(reader.follow().unwrap().unwrap(), sample(0));
    assert!(reader.follow().is_none());
    assert_eq!(reader.partial_bytes(), RECORD_SIZE / 2);
    assert!(reader.follow().is_none());
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&whole[cut..]).unwrap();
    assert_eq!(reader.follow().unwrap().unwrap(), sample(1));
    assert_eq!(reader.follow().unwrap().unwrap(), sample(2));
    assert!(reader.follow().is_none());
    assert_eq!(reader.partial_bytes(), 0);
    assert_eq!(reader.offset(), whole.len() as u64);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writer_and_reader_agree_and_truncation_names_the_offset() {
    let (dir, path) = sample_log("test", "1-link.emulog", 1000);

    let reader = LogReader::open(&path).unwrap();
    assert_eq!(reader.header, header());
    let records: Vec<Record> = reader.map(|r| r.unwrap()).collect();
    assert_eq!(records.len(), 1000);
    assert_eq!(records[999], sample(999));

    // Cut the file in the middle of the last record.
    let length = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(length - 10).unwrap();
    let results: Vec<_> = LogReader::open(&path).unwrap().collect();
    assert_eq!(results.len(), 1000);
    assert!(results[..999].iter().all(|r| r.is_ok()));
    let error = results[999].as_ref().unwrap_err();
    assert_eq!(error.offset, length - RECORD_SIZE as u64);
    assert!(error.message.contains("truncated"), "{}", error.message);

    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn foreign_files_are_refused() {
    let path = std::env::temp_dir().join(format!("emu-not-a-log-{}", std::process::id()));
    std::fs::write(&path, b"hello world, this is text").unwrap();
    let err = LogReader::open(&path).err().unwrap();
    assert!(err.message.contains("not an emu log"));
    std::fs::remove_file(&path).unwrap();
    // A log directory given for a log: said so, not "too short".
    let err = LogReader::open(&std::env::temp_dir()).err().unwrap();
    assert!(err.message.contains("is a directory"), "{}", err.message);
}
