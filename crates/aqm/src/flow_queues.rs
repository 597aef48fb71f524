//! What fq_codel and fq_pie share: flows hashed from the 5-tuple, served
//! by DRR++ (RFC 8290 §4), with limits over all flows together.

use crate::spec::catalogue::Opt;
use crate::spec::words::Words;
use crate::spec::SpecError;
use emu_core::size::{parse_count, parse_size};

/// The flow-queue options fq_codel and fq_pie share.
pub(crate) const OPTIONS: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "10240",
        "most packets held in all flows",
    ),
    ("flows", "N", "1024", "number of flow queues"),
    (
        "quantum",
        "BYTES",
        "1514",
        "bytes a flow may send per round",
    ),
    (
        "memory_limit",
        "SIZE",
        "32mb",
        "most bytes held in all flows",
    ),
];

/// The most a flow may send per round: Linux refuses a larger quantum
/// (fq_codel_change, fq_pie_change), and without a bound a size such as
/// `4g` would wrap to a zero quantum that never lets a flow send.
pub(crate) const MAX_QUANTUM: u64 = 1 << 20;

fn parse_quantum(text: &str) -> Result<u32, String> {
    match parse_size(text) {
        Ok(bytes) if bytes <= MAX_QUANTUM => Ok(bytes.max(1) as u32),
        Ok(_) => Err(format!(
            "'{text}' is more than {MAX_QUANTUM} bytes, the most Linux allows"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Handles a flow-queue keyword (limit, flows, quantum, memory_limit) of
/// fq_codel or fq_pie; false if it is not one.
pub(crate) fn option(
    words: &mut Words,
    keyword: &str,
    (limit, flows, quantum, memory_limit): (&mut u64, &mut usize, &mut u32, &mut u64),
) -> Result<bool, SpecError> {
    match keyword {
        "limit" => *limit = words.value(keyword, parse_count)?,
        "flows" => *flows = words.value(keyword, parse_count)?.clamp(1, 65_536) as usize,
        "quantum" => *quantum = words.value(keyword, parse_quantum)?,
        "memory_limit" => *memory_limit = words.value(keyword, parse_size)?,
        _ => return Ok(false),
    }
    Ok(true)
}
