//! `control.jsonl`: every change a controller made, one line each with the
//! run time it took effect at and the settings as they were asked, and the
//! same file read back as a schedule (`--control-replay`), so a
//! closed-loop run can be rerun without its controller.

use super::protocol::{self, Named, VERSION};
use emu_core::Nanos;
use serde_json::{json, Map, Value};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// The file's name in the log directory.
pub const FILE: &str = "control.jsonl";

/// Where the changes are recorded (nowhere without a log directory).
#[derive(Default)]
pub struct Recorder {
    file: Mutex<Option<File>>,
}

impl Recorder {
    pub fn new(file: Option<File>) -> Recorder {
        Recorder {
            file: Mutex::new(file),
        }
    }

    /// Records the settings `given`, taken at run time `at`. A write that
    /// fails (a full disk) is said once and recording stops.
    pub fn record(&self, at: Nanos, given: &Map<String, Value>) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let Some(f) = file.as_mut() else {
            return;
        };
        let line = json!({"v": VERSION, "t_ns": at, "set": given});
        if let Err(e) = writeln!(f, "{line}") {
            eprintln!("emu: writing {FILE}: {e}; the control changes after this are not recorded");
            *file = None;
        }
    }
}

/// One recorded change: its run time, its settings, and them as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub at: Nanos,
    pub settings: Vec<Named>,
    pub given: Map<String, Value>,
}

/// Reads a `control.jsonl`; the error names the file, the line and what
/// is wrong with it.
pub fn read(path: &Path) -> Result<Vec<Recorded>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--control-replay {}: {e}", path.display()))?;
    let mut changes = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let place = format!("--control-replay {} line {}", path.display(), n + 1);
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("{place}: not JSON: {e}"))?;
        let at = value["t_ns"].as_u64().ok_or_else(|| {
            format!("{place}: no \"t_ns\" (a file emu wrote as control.jsonl is expected)")
        })?;
        let Some(Value::Object(given)) = value.get("set") else {
            return Err(format!(
                "{place}: no \"set\" (a file emu wrote as control.jsonl is expected)"
            ));
        };
        let settings = given
            .iter()
            .map(|(name, value)| protocol::setting(name, value))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{place}: {e}"))?;
        changes.push(Recorded {
            at,
            settings,
            given: given.clone(),
        });
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_recorded_reads_back_as_the_same_changes() {
        let dir = std::env::temp_dir().join(format!("emu-control-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE);
        let recorder = Recorder::new(Some(File::create(&path).unwrap()));
        let mut given = Map::new();
        given.insert("0.uplink.rate".into(), json!("5mbit"));
        given.insert("0.uplink.delay".into(), json!("30ms"));
        recorder.record(1_500_000_000, &given);
        recorder.record(2_000_000_000, &given);
        let back = read(&path).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].at, 1_500_000_000);
        assert_eq!(back[1].given, given);
        assert_eq!(back[0].settings.len(), 2);
        std::fs::write(&path, "{\"t_ns\":5,\"set\":{\"0.uplink.rate\":\"fast\"}}\n").unwrap();
        let e = read(&path).unwrap_err();
        assert!(e.contains("line 1") && e.contains("'fast'"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
