//! `--log` and `--pcap` on a filesystem that fills during the run: emu says
//! so once, keeps emulating, counts what it could not write, leaves files
//! that end on a whole record (and a whole pcapng block) so `emu log dump`
//! and `emu report` read everything before the cut, and exits non-zero.
//!
//! It needs root (a tmpfs mount, namespaces); see [`support`].

mod support;

use emu_core::log::{LogReader, RECORD_SIZE};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::*;

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(name: &str, size: &str) -> SmallDisk {
        let dir = temp_dir(name);
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "emu-test"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success(), "mounting a tmpfs on {}", dir.display());
        SmallDisk(dir)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The length of the whole pcapng blocks at the start of `bytes`: each
/// block says its total length at offset 4.
fn whole_pcapng_blocks(bytes: &[u8]) -> usize {
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        if length < 12 || at + length > bytes.len() {
            break;
        }
        at += length;
    }
    at
}

/// The number before `suffix` in `text`.
fn count_before(text: &str, suffix: &str) -> u64 {
    let at = text
        .find(suffix)
        .unwrap_or_else(|| panic!("no '{suffix}' in: {text}"));
    text[..at]
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("no count before '{suffix}' in: {text}"))
}

#[test]
fn a_full_disk_cuts_the_files_cleanly_and_the_run_goes_on() {
    let Some(_serial) = start() else { return };
    let disk = SmallDisk::mount("full-disk", "64k");
    let log = disk.0.join("log");
    let pcap = disk.0.join("pcap");
    // 3000 datagrams make some 10000 records, far more than 64 KiB of
    // them; the pings after them show the path still works once the disk
    // is full.
    let sender = "import socket,os,time\n\
        s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
        for i in range(3000):\n    s.sendto(b'x'*200,(os.environ['EMU_BASE'],9))\n    time.sleep(0.0003) if i%10==0 else None\n";
    let out = emu()
        .arg("--log")
        .arg(&log)
        .arg("--pcap")
        .arg(&pcap)
        .args(["delay", "1", "--", "sh", "-c"])
        .arg(format!(
            "python3 -c \"{sender}\" && ping -c 3 -i 0.2 -W 2 $EMU_BASE"
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("3 received"),
        "the path stopped working: {stdout}{stderr}"
    );
    assert_ne!(out.status.code(), Some(0), "a cut log must fail the run");
    assert!(
        out.status.code().is_some(),
        "emu died of a signal: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Said once, when it happened; named at the end with the counts.
    assert_eq!(stderr.matches("cannot write the").count(), 1, "{stderr}");
    assert!(stderr.contains("0-delay.emulog is incomplete"), "{stderr}");
    let unwritten = count_before(&stderr, " log records and");
    assert!(unwritten > 0, "{stderr}");

    // The log ends on a whole record and reads to its end without error.
    let file = log.join("0-delay.emulog");
    let records: Vec<_> = LogReader::open(&file)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!records.is_empty());
    let bytes = std::fs::read(&file).unwrap();
    let header = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    assert_eq!(
        bytes.len(),
        header + records.len() * RECORD_SIZE,
        "a torn record at the end"
    );
    // Every datagram was taken off the rings: either in the file or
    // counted (each makes at least an arrival and a departure).
    assert!(
        records.len() as u64 + unwritten >= 2 * 3000,
        "{} written + {unwritten} unwritten",
        records.len()
    );
    let dump = emu().args(["log", "dump"]).arg(&file).output().unwrap();
    assert!(dump.status.success(), "{}", text(&dump.stderr));
    assert_eq!(text(&dump.stdout).lines().count(), records.len() + 1);
    let report_dir = temp_dir("full-disk-report");
    let report = emu()
        .args(["report", "--json", "--out"])
        .arg(&report_dir)
        .arg(&file)
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report.stderr));
    assert!(
        !text(&report.stdout).contains("truncated"),
        "the report found a torn record: {}",
        text(&report.stdout)
    );
    let _ = std::fs::remove_dir_all(&report_dir);

    // The captures end on whole blocks too.
    for entry in std::fs::read_dir(&pcap).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            whole_pcapng_blocks(&bytes),
            bytes.len(),
            "{} ends in a torn block",
            Path::new(&path).display()
        );
    }
}
