//! Queue specifications in `tc qdisc` syntax: a discipline name followed by
//! keyword/value pairs, e.g. `droptail packets 100` or `droptail bytes 64kb`.
//! Every error names the keyword and says what it accepts.

use crate::fifo::{Bounded, Infinite, Limits, Overflow};
use crate::Queue;
use emu_core::size::{parse_count, parse_size};
use std::fmt;

/// A queue specification we could not build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// One discipline in the catalogue shown by `emu queues`.
pub struct Discipline {
    pub name: &'static str,
    pub summary: &'static str,
    /// (keyword, value form, default, meaning)
    pub options: &'static [(&'static str, &'static str, &'static str, &'static str)],
}

const FIFO_OPTIONS: &[(&str, &str, &str, &str)] = &[
    ("packets", "N", "none", "most packets held"),
    (
        "bytes",
        "SIZE",
        "none",
        "most bytes held (IP lengths; 64kb, 1mb accepted)",
    ),
];

/// Every discipline emu offers, with its options and defaults.
pub fn catalogue() -> &'static [Discipline] {
    &[
        Discipline {
            name: "infinite",
            summary: "unbounded FIFO (never drops)",
            options: &[],
        },
        Discipline {
            name: "droptail",
            summary: "FIFO that drops arrivals beyond its limit (at least one limit required)",
            options: FIFO_OPTIONS,
        },
        Discipline {
            name: "drophead",
            summary:
                "FIFO that drops its oldest packets to make room (at least one limit required)",
            options: FIFO_OPTIONS,
        },
    ]
}

/// Keyword/value pairs after the discipline name, consumed one at a time.
pub struct Words<'a> {
    discipline: &'a str,
    words: std::slice::Iter<'a, &'a str>,
}

impl<'a> Words<'a> {
    pub fn next_keyword(&mut self) -> Option<&'a str> {
        self.words.next().copied()
    }

    /// The value after `keyword`, read by `parse`; errors name both.
    pub fn value<T, E: fmt::Display>(
        &mut self,
        keyword: &str,
        parse: impl Fn(&str) -> Result<T, E>,
    ) -> Result<T, SpecError> {
        let text = self
            .words
            .next()
            .ok_or_else(|| SpecError(format!("{}: '{keyword}' needs a value", self.discipline)))?;
        parse(text).map_err(|e| SpecError(format!("{}: {keyword}: {e}", self.discipline)))
    }

    pub fn unknown(&self, keyword: &str) -> SpecError {
        let known: Vec<&str> = catalogue()
            .iter()
            .find(|d| d.name == self.discipline)
            .map(|d| d.options.iter().map(|o| o.0).collect())
            .unwrap_or_default();
        let accepted = if known.is_empty() {
            "no options".to_string()
        } else {
            known.join(", ")
        };
        SpecError(format!(
            "{}: unknown option '{keyword}' (it accepts: {accepted})",
            self.discipline
        ))
    }
}

fn fifo_limits(words: &mut Words) -> Result<Limits, SpecError> {
    let mut limits = Limits::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "packets" | "limit" => limits.packets = Some(words.value(keyword, parse_count)?),
            "bytes" => limits.bytes = Some(words.value(keyword, parse_size)?),
            _ => return Err(words.unknown(keyword)),
        }
    }
    if limits.packets.is_none() && limits.bytes.is_none() {
        return Err(SpecError(format!(
            "{}: needs a limit, e.g. '{} packets 100' or '{} bytes 150000'",
            words.discipline, words.discipline, words.discipline
        )));
    }
    Ok(limits)
}

/// Builds a queue from its specification.
pub fn parse_queue(spec: &str) -> Result<Box<dyn Queue>, SpecError> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let Some((&name, rest)) = words.split_first() else {
        return Err(SpecError(format!(
            "empty queue specification (known disciplines: {})",
            names()
        )));
    };
    let mut words = Words {
        discipline: name,
        words: rest.iter(),
    };
    let queue: Box<dyn Queue> = match name {
        "infinite" => {
            if let Some(keyword) = words.next_keyword() {
                return Err(words.unknown(keyword));
            }
            Box::new(Infinite::default())
        }
        "droptail" => Box::new(Bounded::new(fifo_limits(&mut words)?, Overflow::Tail)),
        "drophead" => Box::new(Bounded::new(fifo_limits(&mut words)?, Overflow::Head)),
        _ => {
            return Err(SpecError(format!(
                "unknown queue discipline '{name}' (known: {})",
                names()
            )))
        }
    };
    Ok(queue)
}

fn names() -> String {
    catalogue()
        .iter()
        .map(|d| d.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_each_fifo() {
        assert_eq!(parse_queue("infinite").unwrap().describe(), "infinite");
        assert_eq!(
            parse_queue("droptail packets 100").unwrap().describe(),
            "droptail packets 100"
        );
        assert_eq!(
            parse_queue("drophead bytes 64kb").unwrap().describe(),
            "drophead bytes 65536"
        );
        assert_eq!(
            parse_queue("droptail packets 10 bytes 15000")
                .unwrap()
                .describe(),
            "droptail packets 10 bytes 15000"
        );
    }

    #[test]
    fn errors_name_the_keyword() {
        let err = |s| parse_queue(s).err().unwrap().0;
        assert!(err("droptail packets").contains("'packets' needs a value"));
        assert!(err("droptail packets ten").contains("packets: 'ten'"));
        assert!(
            err("droptail flows 3").contains("unknown option 'flows' (it accepts: packets, bytes)")
        );
        assert!(err("droptail").contains("needs a limit"));
        assert!(err("sfq").contains("unknown queue discipline 'sfq'"));
        assert!(err("").contains("empty"));
    }
}
