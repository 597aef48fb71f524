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
        "quantum" => *quantum = words.value(keyword, parse_size)?.max(1) as u32,
        "memory_limit" => *memory_limit = words.value(keyword, parse_size)?,
        _ => return Ok(false),
    }
    Ok(true)
}
