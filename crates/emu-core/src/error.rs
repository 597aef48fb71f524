//! The one error type for user-written values (durations, rates, sizes).

use std::fmt;

/// A value the user wrote that we could not read. The message names the
/// input and says what would have been accepted, so it can go to the user as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub input: String,
    pub expected: String,
}

impl ParseError {
    pub fn new(input: &str, expected: impl Into<String>) -> Self {
        ParseError {
            input: input.to_string(),
            expected: expected.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not valid: expected {}",
            self.input, self.expected
        )
    }
}

impl std::error::Error for ParseError {}

/// Splits `text` into a decimal number and a trailing unit, e.g. `"1.5gbit"`
/// into `("1.5", "gbit")`.
pub(crate) fn split_number_unit(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    (&text[..end], &text[end..])
}

/// Reads a non-negative decimal `number` (digits with at most one point) and
/// multiplies it by the integer `scale` exactly, rounding to the nearest
/// integer. Working in integers keeps `0.25ms` at exactly 250 000 ns, which a
/// float would not promise for every input.
pub(crate) fn scaled_decimal(number: &str, scale: u128) -> Option<u128> {
    if number.is_empty() || number == "." {
        return None;
    }
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if !whole.chars().all(|c| c.is_ascii_digit()) || !fraction.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole_value: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut result = whole_value.checked_mul(scale)?;
    if !fraction.is_empty() {
        let digits = fraction.len().min(30) as u32;
        let fraction_value: u128 = fraction[..digits as usize].parse().ok()?;
        let denominator = 10u128.checked_pow(digits)?;
        let numerator = fraction_value.checked_mul(scale)?;
        result = result.checked_add((numerator + denominator / 2) / denominator)?;
    }
    Some(result)
}
