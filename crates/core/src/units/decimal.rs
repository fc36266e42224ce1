//! Exact decimal numbers, read as integers scaled by a power of ten.

/// Why a decimal number could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecimalError {
    /// The text is not an optionally signed run of digits with at most one point.
    Malformed,
    /// The value does not fit in 64 bits once scaled.
    Overflow,
    /// The text has more fractional digits than the scale keeps (only from [`parse_exact`]).
    TooPrecise,
}

/// Reads `text` as a decimal number and returns ⌊value · 10^scale⌋.
///
/// Digits beyond the scale are not an error: the result is rounded toward negative
/// infinity, so that comparing the result against an exact scaled threshold `m`
/// gives the same answer as comparing the real value against `m / 10^scale`.
pub fn parse_floor(text: &[u8], scale: u32) -> Result<i64, DecimalError> {
    let parsed = Parsed::new(text, scale)?;
    let mut value = parsed.magnitude;
    if parsed.negative {
        // ⌊−x⌋ = −⌈x⌉: a negative number with dropped digits moves one step further down.
        value = value.checked_add(u64::from(parsed.inexact)).ok_or(DecimalError::Overflow)?;
        0i64.checked_sub_unsigned(value).ok_or(DecimalError::Overflow)
    } else {
        i64::try_from(value).map_err(|_| DecimalError::Overflow)
    }
}

/// Reads `text` as a decimal number with at most `scale` fractional digits and
/// returns value · 10^scale exactly.
pub fn parse_exact(text: &[u8], scale: u32) -> Result<i64, DecimalError> {
    let parsed = Parsed::new(text, scale)?;
    if parsed.inexact {
        return Err(DecimalError::TooPrecise);
    }
    parse_floor(text, scale)
}

/// The sign, the scaled magnitude truncated toward zero, and whether digits were dropped.
struct Parsed {
    negative: bool,
    magnitude: u64,
    inexact: bool,
}

impl Parsed {
    fn new(text: &[u8], scale: u32) -> Result<Parsed, DecimalError> {
        let (negative, rest) = match text {
            [b'-', rest @ ..] => (true, rest),
            [b'+', rest @ ..] => (false, rest),
            rest => (false, rest),
        };
        let (int, frac) = match rest.iter().position(|&b| b == b'.') {
            Some(dot) => (&rest[..dot], &rest[dot + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        let all_digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
        if int.is_empty() && frac.is_empty() || !all_digits(int) || !all_digits(frac) {
            return Err(DecimalError::Malformed);
        }
        let mut magnitude: u64 = 0;
        let push = |m: u64, digit: u8| {
            m.checked_mul(10)
                .and_then(|m| m.checked_add(u64::from(digit - b'0')))
                .ok_or(DecimalError::Overflow)
        };
        for &d in int {
            magnitude = push(magnitude, d)?;
        }
        let kept = frac.len().min(scale as usize);
        for &d in &frac[..kept] {
            magnitude = push(magnitude, d)?;
        }
        for _ in kept..scale as usize {
            magnitude = push(magnitude, b'0')?;
        }
        let inexact = frac[kept..].iter().any(|&d| d != b'0');
        Ok(Parsed { negative, magnitude, inexact })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_scales_and_rounds_toward_negative_infinity() {
        assert_eq!(parse_floor(b"5.0", 6), Ok(5_000_000));
        assert_eq!(parse_floor(b"4.95", 2), Ok(495));
        assert_eq!(parse_floor(b"4.959", 2), Ok(495));
        assert_eq!(parse_floor(b"-0.731", 2), Ok(-74));
        assert_eq!(parse_floor(b"-0.730", 2), Ok(-73));
        assert_eq!(parse_floor(b"1690000000.483", 6), Ok(1_690_000_000_483_000));
        assert_eq!(parse_floor(b"7", 0), Ok(7));
        assert_eq!(parse_floor(b".5", 1), Ok(5));
        assert_eq!(parse_floor(b"5.", 1), Ok(50));
    }

    #[test]
    fn malformed_and_overflowing_text_is_refused() {
        for bad in [&b""[..], b"-", b".", b"1e3", b"1.2.3", b" 1", b"0x10", b"--1"] {
            assert_eq!(parse_floor(bad, 3), Err(DecimalError::Malformed), "{bad:?}");
        }
        assert_eq!(parse_floor(b"9223372036854775808", 0), Err(DecimalError::Overflow));
        assert_eq!(parse_floor(b"-9223372036854775808", 0), Ok(i64::MIN));
        assert_eq!(parse_floor(b"9223372036854775.808", 3), Err(DecimalError::Overflow));
    }

    #[test]
    fn exact_refuses_digits_it_would_drop() {
        assert_eq!(parse_exact(b"4.5", 6), Ok(4_500_000));
        assert_eq!(parse_exact(b"4.50000000", 6), Ok(4_500_000));
        assert_eq!(parse_exact(b"4.9999995", 6), Err(DecimalError::TooPrecise));
    }
}
