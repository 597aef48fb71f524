//! Mahimahi's queue arguments (`mm-link --uplink-queue=TYPE
//! --uplink-queue-args="NAME=NUMBER, ..."`) as one more front end to
//! [`QueueSpec`]. Mahimahi's own types (infinite, droptail, drophead, codel,
//! pie) take its argument names and units (times in whole milliseconds);
//! any other emu discipline takes its own keywords, written `keyword=value`
//! or as bare words.
//!
//! ```
//! use aqm::spec::mahimahi;
//!
//! let queue = mahimahi::parse(Some("codel"), Some("packets=200, target=5")).unwrap();
//! assert_eq!(queue.emu_text, "codel limit 200 target 5ms");
//! assert_eq!(queue.spec.name(), "codel");
//! ```

use super::{QueueSpec, SpecError};

/// A Mahimahi queue, in emu's spelling and parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct MahimahiQueue {
    /// The same queue as an emu specification (what the Mahimahi log's
    /// `# queue:` line shows).
    pub emu_text: String,
    pub spec: QueueSpec,
}

/// The types Mahimahi itself offers, whose arguments are Mahimahi's.
const MAHIMAHI_TYPES: [&str; 5] = ["infinite", "droptail", "drophead", "codel", "pie"];

/// Reads a Mahimahi queue type (None: Mahimahi's default, infinite) and
/// its `NAME=NUMBER, ...` arguments.
pub fn parse(kind: Option<&str>, args: Option<&str>) -> Result<MahimahiQueue, SpecError> {
    let emu_text = emu_spelling(kind.unwrap_or("infinite"), args.unwrap_or(""))?;
    let spec = QueueSpec::parse(&emu_text)?;
    Ok(MahimahiQueue { emu_text, spec })
}

/// The emu specification text of a Mahimahi queue.
fn emu_spelling(kind: &str, args: &str) -> Result<String, SpecError> {
    let mut pairs = Vec::new();
    for item in args.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            Some((k, v)) => pairs.push((k.trim().to_string(), Some(v.trim().to_string()))),
            None => pairs.push((item.to_string(), None)),
        }
    }
    let mut words = vec![kind.to_string()];
    if !MAHIMAHI_TYPES.contains(&kind) {
        for (k, v) in pairs {
            words.push(k);
            words.extend(v);
        }
        return Ok(words.join(" "));
    }
    for (k, v) in &pairs {
        // Mahimahi's myatoi: a whole non-negative number.
        let n = v
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| {
                SpecError(format!(
                    "queue argument '{k}' needs a whole number (NAME=NUMBER)"
                ))
            })?;
        let keyword = match (kind, k.as_str()) {
            ("droptail" | "drophead", "packets") => "packets",
            ("codel" | "pie", "packets") => "limit",
            (_, "bytes") if kind != "infinite" => "bytes",
            ("codel", "target") => "target",
            ("codel", "interval") => "interval",
            ("pie", "qdelay_ref") => "target",
            ("pie", "max_burst") => "max_burst",
            _ => {
                return Err(SpecError(format!(
                    "'{k}' is not an argument of the {kind} queue"
                )))
            }
        };
        words.push(keyword.to_string());
        words.push(if matches!(keyword, "target" | "interval" | "max_burst") {
            format!("{n}ms")
        } else {
            n.to_string()
        });
    }
    if matches!(kind, "droptail" | "drophead") && pairs.is_empty() {
        return Err(SpecError(format!(
            "the {kind} queue needs packets=N or bytes=N in its queue args"
        )));
    }
    Ok(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mahimahi_queues_become_emu_specs() {
        let queue_spec = |k: Option<&str>, a: Option<&str>| parse(k, a).map(|queue| queue.emu_text);
        let q = |k: &str, a: &str| queue_spec(Some(k), (!a.is_empty()).then_some(a));
        assert_eq!(
            q("droptail", "packets=100").unwrap(),
            "droptail packets 100"
        );
        assert_eq!(
            q("drophead", "bytes=45000").unwrap(),
            "drophead bytes 45000"
        );
        assert_eq!(
            q("codel", "packets=200, target=5, interval=100").unwrap(),
            "codel limit 200 target 5ms interval 100ms"
        );
        assert_eq!(
            q("pie", "bytes=30000, qdelay_ref=20, max_burst=100").unwrap(),
            "pie bytes 30000 target 20ms max_burst 100ms"
        );
        assert_eq!(queue_spec(None, None).unwrap(), "infinite");
        assert_eq!(
            q("cake", "bandwidth=10mbit, sce").unwrap(),
            "cake bandwidth 10mbit sce"
        );
        assert!(q("droptail", "")
            .unwrap_err()
            .0
            .contains("needs packets=N or bytes=N"));
        assert!(q("codel", "qdelay_ref=5")
            .unwrap_err()
            .0
            .contains("not an argument of the codel queue"));
        assert!(q("droptail", "packets=ten")
            .unwrap_err()
            .0
            .contains("whole number"));
        assert!(q("sfq", "")
            .unwrap_err()
            .0
            .contains("unknown queue discipline"));
    }

    /// The parsed spec is the one the emu spelling gives.
    #[test]
    fn the_spec_is_the_emu_spelling_parsed() {
        let queue = parse(Some("pie"), Some("packets=50, qdelay_ref=20")).unwrap();
        assert_eq!(
            queue.spec,
            QueueSpec::parse("pie limit 50 target 20ms").unwrap()
        );
    }
}
