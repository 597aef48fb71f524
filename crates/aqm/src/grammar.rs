//! The shared grammar of every discipline's options: keyword/value pairs
//! read one at a time, values in tc's units, and errors that name the
//! discipline, the keyword and what it accepts. It stands below the
//! disciplines (each parses its options with it) and the catalogue (which
//! gathers their option tables), and names neither.

use emu_core::error::ParseError;
use emu_core::rate::Rate;
use emu_core::time::{parse_duration, Nanos};
use std::fmt;

/// A queue specification we could not understand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// One option: keyword, value form, default, meaning.
pub type Opt = (&'static str, &'static str, &'static str, &'static str);

/// Keyword/value pairs after the discipline name, consumed one at a time.
pub struct Words<'a> {
    discipline: &'a str,
    /// The discipline's options, in groups, as the catalogue lists them.
    options: &'a [&'a [Opt]],
    words: std::slice::Iter<'a, &'a str>,
}

impl<'a> Words<'a> {
    /// The words after `discipline`'s name; `options` are those it takes.
    pub fn new(discipline: &'a str, options: &'a [&'a [Opt]], words: &'a [&'a str]) -> Words<'a> {
        Words {
            discipline,
            options,
            words: words.iter(),
        }
    }

    /// The discipline these words configure, for error messages.
    pub fn discipline(&self) -> &'a str {
        self.discipline
    }

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

    /// The error for a keyword the discipline does not take, listing those
    /// it does (the catalogue's, so the list is what `emu queues` shows).
    pub fn unknown(&self, keyword: &str) -> SpecError {
        let known: Vec<&str> = self
            .options
            .iter()
            .flat_map(|group| group.iter())
            .map(|o| o.0)
            .collect();
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

/// A time in tc's syntax: a bare number is microseconds, as in tc.
pub fn tc_time(text: &str) -> Result<Nanos, ParseError> {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return parse_duration(&format!("{text}us"));
    }
    parse_duration(text)
}

/// A shaper rate in tc's syntax, in bytes per second: `unlimited` is 0.
pub fn shaper_rate(text: &str) -> Result<u64, ParseError> {
    if text == "unlimited" {
        Ok(0)
    } else {
        Rate::parse(text).map(|r| r.bits_per_sec() / 8)
    }
}

/// An SCE divisor (`sce-thresh N`): 1 to 1024.
pub fn sce_divisor(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!("'{text}' is not a divisor: expected 1 to 1024")),
    }
}

/// A probability in (0, 1].
pub fn probability(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1.0 => Ok(p),
        _ => Err(format!(
            "'{text}' is not a probability: expected a number in (0, 1]"
        )),
    }
}
