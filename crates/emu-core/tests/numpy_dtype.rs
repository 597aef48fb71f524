//! The numpy dtype that docs/log-format.md documents reads the logs emu
//! writes: the documented code block is run as it stands against a log
//! written by emu's own writer, and every field of every record must come
//! back. A wrong offset, size or order in the dtype fails here.
//!
//! Needs python3 with numpy (Debian: python3-numpy; scripts/install-deps
//! installs it).

use emu_core::log::{write_header, Direction, Event, LogHeader, Record, RECORD_SIZE};
use std::path::Path;
use std::process::Command;

/// The python block under the `numpy-dtype: tested` marker.
fn documented_code() -> String {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/log-format.md"),
    )
    .expect("docs/log-format.md");
    let after = doc
        .split("<!-- numpy-dtype: tested -->")
        .nth(1)
        .expect("the numpy-dtype marker in docs/log-format.md");
    let block = after
        .split("```python\n")
        .nth(1)
        .expect("a python block after the marker");
    block.split("```").next().unwrap().to_string()
}

/// A python that has numpy: the one on PATH, else the system's.
fn python_with_numpy() -> String {
    for candidate in ["python3", "/usr/bin/python3"] {
        let ok = Command::new(candidate)
            .args(["-c", "import numpy"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return candidate.to_string();
        }
    }
    panic!("no python3 with numpy found: install python3-numpy (scripts/install-deps does)");
}

/// Records whose every field differs from its neighbours' and uses the
/// high bytes of its width, so a field read at the wrong offset or width
/// cannot pass by luck.
fn records() -> Vec<Record> {
    (0..50u64)
        .map(|i| Record {
            time: 0x0123_4567_89ab_0000 + i * 1_000_003,
            sojourn: 0x00ff_0000_0000_0000 + i * 7,
            flow: 0xdead_0000 + i as u32,
            fingerprint: 0xf00d_0000 + (i as u32) * 3,
            bytes: 40 + i as u32 * 29,
            queue_bytes: 0x8000_0000 + i as u32 * 1500,
            queue_packets: 0x4000_0000 + i as u32,
            shell: (i % 5) as u8,
            direction: Direction::BOTH[(i % 2) as usize],
            event: [
                Event::Arrive,
                Event::Enqueue,
                Event::Depart,
                Event::Drop,
                Event::Mark,
            ][(i % 5) as usize],
            detail: if i % 5 == 3 {
                3
            } else if i % 5 == 4 {
                16
            } else {
                0
            },
            ecn: (i % 4) as u8,
        })
        .collect()
}

#[test]
fn the_documented_numpy_dtype_reads_every_field_of_a_log() {
    let dir = std::env::temp_dir().join(format!("emu-numpy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("3-link.emulog");
    let header = LogHeader {
        shell: 3,
        description: "link 10mbit seed 0 \"quoted\" ü".into(),
        monotonic_origin_ns: 477_524_000_000,
        realtime_origin_ns: 1_795_276_800_000_000_000,
        rate_bps: Some([Some(10_000_000), None]),
        command_line: "emu --log out link 10mbit".into(),
        traces: None,
        ..Default::default()
    };
    let records = records();
    let mut bytes = Vec::new();
    write_header(&mut bytes, &header).unwrap();
    for r in &records {
        let mut encoded = [0u8; RECORD_SIZE];
        r.encode(&mut encoded);
        bytes.extend_from_slice(&encoded);
    }
    // Cut short inside a 51st record, as a killed emu can leave a file.
    bytes.extend_from_slice(&[0xaa; 20]);
    std::fs::write(&path, &bytes).unwrap();

    let script = format!(
        "{}\nimport sys\nheader, r = read_emulog(sys.argv[1])\n\
         fields = [n for n in EMULOG_DTYPE.names if n != 'reserved']\n\
         print(json.dumps({{'header': header, 'records': [[int(row[n]) for n in fields] for row in r], 'fields': fields}}))\n",
        documented_code()
    );
    let out = Command::new(python_with_numpy())
        .arg("-c")
        .arg(&script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read["header"]["shell"], 3);
    assert_eq!(read["header"]["description"], header.description);
    assert_eq!(read["header"]["monotonic_origin_ns"], 477_524_000_000u64);
    let fields: Vec<&str> = read["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let rows = read["records"].as_array().unwrap();
    assert_eq!(rows.len(), records.len(), "the partial record is left out");
    for (row, r) in rows.iter().zip(&records) {
        let expected = |field: &str| -> u64 {
            match field {
                "time_ns" => r.time,
                "sojourn_ns" => r.sojourn,
                "flow" => r.flow.into(),
                "fingerprint" => r.fingerprint.into(),
                "bytes" => r.bytes.into(),
                "queue_bytes" => r.queue_bytes.into(),
                "queue_packets" => r.queue_packets.into(),
                "shell" => r.shell.into(),
                "direction" => r.direction as u64,
                "event" => r.event as u64,
                "detail" => r.detail.into(),
                "ecn" => r.ecn.into(),
                other => panic!("the dtype has a field '{other}' the log format does not"),
            }
        };
        for (k, field) in fields.iter().enumerate() {
            assert_eq!(row[k].as_u64(), Some(expected(field)), "{field} of {r:?}");
        }
    }
    assert_eq!(fields.len(), 12, "every field of the record: {fields:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
