//! What an event costs: the same whole number for every event, or a column's.

use std::fmt;
use std::str::FromStr;

use ratelimit_core::limiter::MAX_COST;

/// Where each event's cost comes from: `--cost N` or `--cost COLUMN`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cost {
    /// Every event costs this many units: 1 for an event that is one request.
    Each(u64),
    /// Each event costs what this column holds: a whole number of units.
    Column(String),
}

impl Default for Cost {
    fn default() -> Cost {
        Cost::Each(1)
    }
}

/// Reads `--cost`: a whole number (every event costs it), else a column's name.
impl FromStr for Cost {
    type Err = CostError;

    fn from_str(text: &str) -> Result<Cost, CostError> {
        if text.is_empty() {
            return Err(CostError::Nothing);
        }
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(Cost::Column(text.to_owned()));
        }
        parse_cost(text.as_bytes()).map(Cost::Each)
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cost::Each(units) => write!(f, "{units}"),
            Cost::Column(name) => f.write_str(name),
        }
    }
}

/// Why a field is not a cost: each says what the text is instead, for a message that
/// names the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// No `--cost` at all.
    #[error("a cost is a whole number of units, or the column that holds it")]
    Nothing,
    /// Nothing.
    #[error("empty: a cost is a whole number of units")]
    Empty,
    /// Below zero.
    #[error("negative: a cost is a whole number of units, 0 or more")]
    Negative,
    /// A number with a fraction or an exponent.
    #[error("fractional: a cost is a whole number of units")]
    Fractional,
    /// Not a number at all.
    #[error("not a number: a cost is a whole number of units")]
    NotANumber,
    /// More than [`MAX_COST`].
    #[error("more than {MAX_COST}, the largest cost an event may have")]
    TooLarge,
}

/// Reads a cost from a field: a whole number of units, 0 to [`MAX_COST`], in decimal
/// digits.
pub fn parse_cost(text: &[u8]) -> Result<u64, CostError> {
    if text.is_empty() {
        return Err(CostError::Empty);
    }
    if text[0] == b'-' && text.len() > 1 {
        return Err(CostError::Negative);
    }
    if text.iter().any(|&b| b == b'.' || b == b'e' || b == b'E')
        && text.iter().any(u8::is_ascii_digit)
    {
        return Err(CostError::Fractional);
    }
    if !text.iter().all(u8::is_ascii_digit) {
        return Err(CostError::NotANumber);
    }
    // All digits: the value overflows only past u64, far past the largest cost.
    let units = std::str::from_utf8(text).ok().and_then(|t| t.parse::<u64>().ok());
    match units {
        Some(units) if units <= MAX_COST => Ok(units),
        _ => Err(CostError::TooLarge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_every_events_cost_and_a_name_is_a_column() {
        assert_eq!("3".parse::<Cost>(), Ok(Cost::Each(3)));
        assert_eq!("0".parse::<Cost>(), Ok(Cost::Each(0)));
        assert_eq!("total_tokens".parse::<Cost>(), Ok(Cost::Column("total_tokens".into())));
        assert!("".parse::<Cost>().is_err());
        assert!("1000000000001".parse::<Cost>().is_err());
    }

    #[test]
    fn a_field_is_a_whole_number_or_says_what_it_is_instead() {
        assert_eq!(parse_cost(b"0"), Ok(0));
        assert_eq!(parse_cost(b"1200"), Ok(1200));
        assert_eq!(parse_cost(b"1000000000000"), Ok(MAX_COST));
        let reason = |text: &[u8]| parse_cost(text).unwrap_err().to_string();
        assert!(reason(b"").starts_with("empty"));
        assert!(reason(b"-3").starts_with("negative"));
        assert!(reason(b"2.5").starts_with("fractional"));
        assert!(reason(b"1e3").starts_with("fractional"));
        assert!(reason(b"many").starts_with("not a number"));
        assert!(reason(b" 3").starts_with("not a number"));
        assert!(reason(b"1000000000001").starts_with("more than"));
        assert!(reason(b"99999999999999999999999").starts_with("more than"));
    }
}
