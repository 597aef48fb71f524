//! Durations, rates and sizes as an experiment file writes them ("40ms",
//! "100mbit", "10MB"), read with emu's own parsers so a file and the
//! command line accept the same spellings, and written back the same way
//! into the resolved experiment.

use emu_core::time::{format_duration, parse_duration};
use emu_core::{Nanos, Rate};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A duration: a string with a unit ("40ms", "2s", "500us") or a bare
/// number of milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Duration(pub Nanos);

/// A rate such as "100mbit", "1.5gbit" or "12mbps".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateValue(pub Rate);

/// A byte count such as "10MB", "64kb" or a bare number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

struct TextOrNumber<'a>(&'a str);

impl Visitor<'_> for TextOrNumber<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = d.deserialize_any(TextOrNumber("a duration such as \"40ms\" or \"2s\""))?;
        parse_duration(&text)
            .map(Duration)
            .map_err(|e| de::Error::custom(e.to_string()))
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0).replace(' ', ""))
    }
}

impl<'de> Deserialize<'de> for RateValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = d.deserialize_any(TextOrNumber("a rate such as \"100mbit\""))?;
        Rate::parse(&text)
            .map(RateValue)
            .map_err(|e| de::Error::custom(e.to_string()))
    }
}

impl Serialize for RateValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}bit", self.0.bits_per_sec()))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = d.deserialize_any(TextOrNumber("a size such as \"10MB\""))?;
        emu_core::size::parse_size(&text)
            .map(Bytes)
            .map_err(|e| de::Error::custom(e.to_string()))
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct Doc {
        d: Duration,
        r: RateValue,
        b: Bytes,
    }

    #[test]
    fn units_read_and_write_back() {
        let doc: Doc = toml::from_str("d = \"40ms\"\nr = \"12mbit\"\nb = \"1MB\"").unwrap();
        assert_eq!(doc.d.0, 40_000_000);
        assert_eq!(doc.r.0.bits_per_sec(), 12_000_000);
        assert!(doc.b.0 >= 1_000_000);
        let again: Doc = toml::from_str(&toml::to_string(&doc).unwrap()).unwrap();
        assert_eq!((again.d, again.r, again.b), (doc.d, doc.r, doc.b));
        let bare: Doc = toml::from_str("d = 25\nr = \"1gbit\"\nb = 1500").unwrap();
        assert_eq!(bare.d.0, 25_000_000);
        assert_eq!(bare.b.0, 1500);
    }

    #[test]
    fn a_bad_unit_names_its_line() {
        let error = toml::from_str::<Doc>("d = \"40ms\"\nr = \"fast\"\nb = 1")
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("fast"), "{error}");
    }
}
