//! Hand-worked cases for reading times, and the edges of the range.

use chrono::{SecondsFormat, Utc};

use super::*;

fn ts(text: &str) -> Timestamp {
    rfc3339(text).unwrap()
}

#[test]
fn reads_usgs_times_offsets_and_dates() {
    assert_eq!(ts("1970-01-01T00:00:00Z").as_micros(), 0);
    assert_eq!(ts("2025-07-29T23:24:52.483Z").as_micros(), 1_753_831_492_483_000);
    assert_eq!(ts("2025-07-30T01:24:52.483+02:00"), ts("2025-07-29T23:24:52.483Z"));
    // ISO 8601's basic offsets: +0530 and +05 are +05:30 and +05:00.
    assert_eq!(ts("2025-01-01T05:30:00+0530"), ts("2025-01-01T00:00:00Z"));
    assert_eq!(ts("2025-01-01T00:00:00.250-0700"), ts("2025-01-01T07:00:00.250Z"));
    assert_eq!(ts("2025-01-01T05:00:00+05"), ts("2025-01-01T00:00:00Z"));
    assert!(rfc3339("2025-01-01T05:00:00+053").is_err());
    assert!(rfc3339("2025-01-01T05:00:00+2530").is_err());
    assert_eq!(ts("2025-07-29 23:24:52.483Z"), ts("2025-07-29T23:24:52.483Z"));
    assert_eq!(ts("2025-07-29"), ts("2025-07-29T00:00:00Z"));
    assert_eq!(ts("1969-12-31T23:59:59.999999Z").as_micros(), -1);
    // Nanoseconds are rounded down to the microsecond.
    assert_eq!(ts("1970-01-01T00:00:00.000001999Z").as_micros(), 1);
}

#[test]
fn refuses_times_without_an_offset() {
    let err = parse(b"2025-07-29T23:24:52", TimeFormat::Rfc3339);
    assert_eq!(err, Err(TimeError::Rfc3339));
    assert!(rfc3339("2025-13-01T00:00:00Z").is_err());
    assert!(rfc3339("yesterday").is_err());
}

#[test]
fn reads_unix_epoch_times() {
    let at = |text: &str, f| parse(text.as_bytes(), f).unwrap().as_micros();
    assert_eq!(at("1753831492.483", TimeFormat::UnixS), 1_753_831_492_483_000);
    assert_eq!(at("1753831492483", TimeFormat::UnixMs), 1_753_831_492_483_000);
    assert_eq!(at("1753831492483123", TimeFormat::UnixUs), 1_753_831_492_483_123);
    assert_eq!(at("-1.5", TimeFormat::UnixS), -1_500_000);
    assert_eq!(parse(b"99999999999999999", TimeFormat::UnixS), Err(TimeError::OutOfRange));
    assert_eq!(parse(b"12:00", TimeFormat::UnixS), Err(TimeError::Unix));
}

#[test]
fn prints_rfc3339_utc_with_the_digits_needed() {
    assert_eq!(ts("2025-07-29T23:24:52.483Z").to_string(), "2025-07-29T23:24:52.483Z");
    assert_eq!(ts("2025-07-29T23:24:52Z").to_string(), "2025-07-29T23:24:52Z");
    assert_eq!(ts("2025-07-29T23:24:52.000001Z").to_string(), "2025-07-29T23:24:52.000001Z");
}

/// Reads with chrono alone, as before the fast path.
fn chrono_micros(text: &[u8]) -> Option<i64> {
    let time = DateTime::parse_from_rfc3339(std::str::from_utf8(text).ok()?).ok()?;
    Some(time.timestamp() * MICROS_PER_SEC + i64::from(time.timestamp_subsec_nanos() / 1_000))
}

proptest::proptest! {
    #[test]
    fn the_fast_path_reads_what_chrono_writes(
        micros in Timestamp::MIN..=Timestamp::MAX,
        nanos in 0u32..1_000,
        form in 0usize..5,
    ) {
        let time = DateTime::<Utc>::from_timestamp_micros(micros).unwrap()
            + chrono::Duration::nanoseconds(i64::from(nanos));
        let format = [SecondsFormat::Secs, SecondsFormat::Millis, SecondsFormat::Micros, SecondsFormat::Nanos, SecondsFormat::AutoSi][form];
        let text = time.to_rfc3339_opts(format, true);
        let fast = parse_canonical(text.as_bytes());
        proptest::prop_assert!(fast.is_some(), "{}", text);
        proptest::prop_assert_eq!(fast, chrono_micros(text.as_bytes()), "{}", text);
    }

    #[test]
    fn the_fast_path_agrees_with_chrono_or_declines(
        base in Timestamp::MIN..=Timestamp::MAX,
        edits in proptest::collection::vec((0usize..30, proptest::sample::select(b"0123456789-:TZ.z +x".to_vec())), 0..4),
        cut in 15usize..32,
    ) {
        let mut text = DateTime::<Utc>::from_timestamp_micros(base).unwrap().to_rfc3339_opts(SecondsFormat::Micros, true).into_bytes();
        for (at, byte) in edits {
            if at < text.len() {
                text[at] = byte;
            }
        }
        text.truncate(cut);
        if let Some(fast) = parse_canonical(&text) {
            proptest::prop_assert_eq!(Some(fast), chrono_micros(&text), "{}", String::from_utf8_lossy(&text));
        }
    }
}

#[test]
fn the_fast_path_checks_the_calendar() {
    assert_eq!(parse_canonical(b"2024-02-29T00:00:00Z"), chrono_micros(b"2024-02-29T00:00:00Z"));
    assert_eq!(parse_canonical(b"2025-02-29T00:00:00Z"), None);
    assert_eq!(parse_canonical(b"1900-02-29T00:00:00Z"), None);
    assert_eq!(parse_canonical(b"2000-02-29T00:00:00Z"), chrono_micros(b"2000-02-29T00:00:00Z"));
    assert_eq!(parse_canonical(b"2025-04-31T00:00:00Z"), None);
    assert_eq!(parse_canonical(b"2025-07-29T24:00:00Z"), None);
    assert_eq!(parse_canonical(b"2016-12-31T23:59:60Z"), None, "a leap second goes to chrono");
    assert_eq!(parse_canonical(b"2025-07-29T23:24:52.Z"), None);
    assert_eq!(parse_canonical(b"2025-07-29T23:24:52+00:00"), None);
}

#[test]
fn timestamp_range_ends_print() {
    for micros in [Timestamp::MIN, Timestamp::MAX] {
        let t = Timestamp::from_micros(micros).unwrap();
        assert_eq!(ts(&t.to_string()), t);
    }
    assert!(Timestamp::from_micros(Timestamp::MAX + 1).is_none());
}
