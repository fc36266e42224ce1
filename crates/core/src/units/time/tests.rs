//! Hand-worked cases for times and spans: printing, and the edges of the range.

use chrono::{DateTime, SecondsFormat, Utc};

use super::*;

proptest::proptest! {
    #[test]
    fn prints_as_chrono_does(micros in Timestamp::MIN..=Timestamp::MAX) {
        let ours = Timestamp::from_micros(micros).unwrap().to_string();
        let chrono = DateTime::<Utc>::from_timestamp_micros(micros).unwrap();
        proptest::prop_assert_eq!(ours, chrono.to_rfc3339_opts(SecondsFormat::AutoSi, true));
        let mut millis = Vec::new();
        Timestamp(micros).write_rfc3339(&mut millis, Subsecond::Millis);
        let chrono = chrono.to_rfc3339_opts(SecondsFormat::Millis, true);
        proptest::prop_assert_eq!(String::from_utf8(millis).unwrap(), chrono);
    }
}

#[test]
fn prints_whole_seconds_and_days_around_the_calendar() {
    for micros in [0, 86_400 * MICROS_PER_SEC - 1, 951_782_400 * MICROS_PER_SEC, -1] {
        let chrono = DateTime::<Utc>::from_timestamp_micros(micros).unwrap();
        let want = chrono.to_rfc3339_opts(SecondsFormat::AutoSi, true);
        assert_eq!(Timestamp(micros).to_string(), want);
    }
}

#[test]
fn spans_read_and_print() {
    let span = |t: &str| t.parse::<Span>().unwrap().as_micros();
    assert_eq!(span("48h"), 48 * 3_600 * MICROS_PER_SEC);
    assert_eq!(span("15m"), span("15min"));
    assert_eq!(span("1h30m"), 5_400 * MICROS_PER_SEC);
    assert_eq!(span("250ms"), 250_000);
    assert_eq!(span("0s"), 0);
    for bad in ["", "-1h", "h", "5", "5x", "1.5h", "1h 30m", "99999999999d"] {
        assert!(bad.parse::<Span>().is_err(), "{bad}");
    }
    assert_eq!("90m".parse::<Span>().unwrap().to_string(), "90m");
    assert_eq!("120m".parse::<Span>().unwrap().to_string(), "2h");
}

#[test]
fn compact_spans_read_back() {
    for text in ["11h46m1s350ms", "1d", "6h45m12s318ms500us", "0s", "59m59s999ms999us"] {
        assert_eq!(text.parse::<Span>().unwrap().compact(), text);
    }
}

#[test]
fn human_durations() {
    assert_eq!(human_duration(0), "0s");
    assert_eq!(human_duration(250_000), "250ms");
    assert_eq!(human_duration(2_879_517_000_i64), "47m 59.517s");
    assert_eq!(human_duration(183_600 * MICROS_PER_SEC), "2d 3h");
    assert_eq!(human_duration(1), "0.000001s");
}
