//! A limiter that reads a key's text (django-ratelimit's windows, shifted by the key's
//! CRC-32) decides alike through every door a keyed limit goes through, as a brute force of
//! its system's own formula says.

use crate::harness::{json, run};
use crate::peer_events::{Event, bursty, csv, decisions};

/// zlib's CRC-32, a bit at a time: written here from its definition (the reflected
/// polynomial 0xEDB88320), apart from the crate the program uses.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// What django-ratelimit 4.1.0 decides at `count` per `period` seconds, by `_get_window`
/// and `get_usage` as written: each request counted in the window ending at `w`, limited
/// if the count is then above `count`.
fn django(events: &[Event], count: usize, period: i64) -> Vec<bool> {
    let mut counts = std::collections::HashMap::new();
    events
        .iter()
        .map(|(micros, key, _)| {
            let ts = micros.div_euclid(1_000_000);
            let window = if period == 1 {
                ts
            } else {
                let w = ts - ts.rem_euclid(period) + i64::from(crc32(key.as_bytes())) % period;
                if w < ts { w + period } else { w }
            };
            let seen = counts.entry((key.clone(), window)).or_insert(0);
            *seen += 1;
            *seen <= count
        })
        .collect()
}

/// The bursty stream, and 3,000 requests of 40 users 100 ms apart, in bursts of five of
/// one user: keys whose windows open at many seconds.
fn streams() -> Vec<Vec<Event>> {
    let users = (0..3_000i64)
        .map(|i| (1_735_689_600_000_000 + i * 100_000, format!("user{}", i / 5 * 17 % 40), 1))
        .collect();
    vec![bursty(4_000, false), users]
}

#[test]
fn django_ratelimit_reads_each_keys_text_through_every_door() {
    for events in streams() {
        let input = csv(&events);
        for (count, period) in [(3usize, 7i64), (2, 60), (4, 1)] {
            let want = django(&events, count, period);
            let refused = want.iter().filter(|&&passed| !passed).count();
            assert!(refused > 0 && refused < want.len(), "{count}/{period}s: {refused} refused");
            let rate = format!("{count}/{period}s");
            // One limit, as read, and as layers.
            let algo = ["--algo", "django-ratelimit", "--rate", &rate];
            assert_eq!(decisions(&events, &algo), want, "--algo at {rate}");
            let spec = format!("algo=django-ratelimit,rate={rate},key=k");
            assert_eq!(decisions(&events, &["--limit", &spec]), want, "--limit at {rate}");
            // Decided key by key after reading, on a fleet, and side by side.
            let keyed = ["-", "--key", "k", "--rate", &rate, "--format", "json"];
            let dropped =
                |args: &[&str]| json(&run(args, &input).ok())["dropped"].as_u64().unwrap();
            let replay = [&["replay"][..], &keyed, &["--algo", "django-ratelimit"]].concat();
            assert_eq!(dropped(&replay), refused as u64, "replay --key at {rate}");
            let fleet = [&replay[..], &["--servers", "3", "--route", "hash:k"]].concat();
            assert_eq!(
                dropped(&fleet),
                refused as u64,
                "a fleet, each key on one server, at {rate}"
            );
            let compare = [&["compare"][..], &keyed, &["--algo", "django-ratelimit,gcra"]].concat();
            let out = json(&run(&compare, &input).ok());
            let django = &out[0];
            assert_eq!(
                (django["algorithm"].as_str(), django["dropped"].as_u64()),
                (Some("django-ratelimit"), Some(refused as u64))
            );
        }
    }
}
