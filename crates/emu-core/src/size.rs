//! Byte counts as `tc` writes them (`1500`, `64kb`, `4mb`).

use crate::error::{scaled_decimal, split_number_unit, ParseError};

const SIZE_HELP: &str =
    "a size in bytes such as 1500, 64kb or 4mb (k/kb, m/mb, g/gb are ×1024 as in tc)";

/// Reads a size in bytes: bare or `b` = bytes; `k`/`kb`, `m`/`mb`, `g`/`gb`
/// are binary multiples as in tc; `kbit`, `mbit`, `gbit` are bits (×1000/8).
pub fn parse_size(text: &str) -> Result<u64, ParseError> {
    let lowered = text.trim().to_ascii_lowercase();
    let (number, unit) = split_number_unit(&lowered);
    // Bits are carried ×8 so every multiplier is an integer.
    let (multiplier, divisor): (u128, u128) = match unit {
        "" | "b" => (1, 1),
        "k" | "kb" => (1 << 10, 1),
        "m" | "mb" => (1 << 20, 1),
        "g" | "gb" => (1 << 30, 1),
        "kbit" => (1_000, 8),
        "mbit" => (1_000_000, 8),
        "gbit" => (1_000_000_000, 8),
        _ => return Err(ParseError::new(text, SIZE_HELP)),
    };
    let value = scaled_decimal(number, multiplier)
        .ok_or_else(|| ParseError::new(text, SIZE_HELP))?
        / divisor;
    u64::try_from(value).map_err(|_| ParseError::new(text, SIZE_HELP))
}

/// Reads a plain non-negative integer count (packets, flows), naming the
/// input in the error.
pub fn parse_count(text: &str) -> Result<u64, ParseError> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| ParseError::new(text, "a whole number such as 100"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_sizes() {
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert_eq!(parse_size("64kb").unwrap(), 65536);
        assert_eq!(parse_size("4mb").unwrap(), 4 << 20);
        assert_eq!(parse_size("8kbit").unwrap(), 1000);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert!(parse_size("12 apples").is_err());
        assert!(parse_count("-1").is_err());
        assert_eq!(parse_count("100").unwrap(), 100);
    }
}
