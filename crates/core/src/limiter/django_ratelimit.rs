//! django-ratelimit: windows of whole seconds, each key's shifted by the CRC-32 of its
//! text, every request counted.

use std::fmt::Write as _;
use std::num::NonZeroU64;

use super::aligned::floor_to;
use super::export::{BurstRule, Export, ExportAsk, ExportKey};
use super::promise::{Bound, Limit};
use super::rack_attack::{Counted, RackAttack};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// django-ratelimit's `is_ratelimited` (4.1.0: `core.get_usage`, `_get_window`,
/// `_make_cache_key`) on a Django cache:
///
/// - The clock is `int(time.time())`, whole seconds; the rate is `count/period` with the
///   period in whole seconds (`_split_rate`: `5/m`, `100/h`, `10/5m`).
/// - **Each key's windows are its own**: the window a request at second `ts` counts in ends
///   at `w = ts - ts % P + crc32(key) % P`, or P later if that is before `ts`, and holds the
///   seconds `(w - P, w]`. A key's windows so open `crc32(key) % P + 1` seconds past a
///   multiple of P, at a second that differs from key to key; a period of 1 s is each
///   second.
/// - **Every request increments the count** (`increment=True`: `cache.add`, then
///   `cache.incr`), limited or not, and is limited if the count is then above N.
///
/// The key's text is what a reading numbered (an address, a header's value), as its CRC-32
/// ([`KeyedState::key_text`]); a limit not keyed is of one key, whose text is empty (CRC 0:
/// its windows open 1 s past each multiple of P). Each request counts once, whatever it
/// costs. The cache entry outlives its window (`P + 5` s), so expiry never ends a window
/// early.
#[derive(Clone, Debug)]
pub struct DjangoRatelimit {
    /// Its windows' counting, rack-attack's: whole seconds, every request counted.
    windows: RackAttack,
    state: Shifted,
}

/// One key's CRC-32 and its window's count.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shifted {
    crc: u32,
    counted: Counted,
}

impl DjangoRatelimit {
    /// Returns the limit at N per P, P whole seconds.
    pub fn new(rate: Rate) -> DjangoRatelimit {
        DjangoRatelimit { windows: RackAttack::new(rate), state: Shifted::default() }
    }

    /// The number of the window that `now`'s second counts in, for a key of CRC-32 `crc`:
    /// its windows are `crc % P + 1` seconds past the epoch's.
    #[inline]
    fn window(&self, crc: u32, now: Timestamp) -> i64 {
        let period = self.windows.period_s().max(1);
        let shift = i64::from(crc) % period + 1;
        (now.as_micros().div_euclid(1_000_000) - shift).div_euclid(period)
    }
}

impl KeyedState for DjangoRatelimit {
    type State = Shifted;
    type Keys = super::Apart;

    const READS_KEY_TEXT: bool = true;

    #[inline]
    fn step(&self, shifted: &mut Shifted, now: Timestamp, _cost: u64, force: bool) -> Decision {
        let window = self.window(shifted.crc, now);
        self.windows.count(&mut shifted.counted, window, force)
    }

    /// A limited request counts, wherever it was limited.
    fn refuse(&self, shifted: &mut Shifted, now: Timestamp, cost: u64) {
        self.step(shifted, now, cost, false);
    }

    /// In a later window than its count's, a key decides as a fresh one.
    fn at_rest(&self, shifted: &Shifted, now: Timestamp) -> bool {
        RackAttack::before(&shifted.counted, self.window(shifted.crc, now))
    }

    /// The last request's window ends at most P − 1 seconds past its second, whatever the
    /// key: every key is at rest from P seconds past it.
    fn rests_after(&self, last: Timestamp) -> Option<Timestamp> {
        let period = self.windows.period_s().max(1).checked_mul(1_000_000)?;
        Timestamp::from_micros(floor_to(last.as_micros(), 1_000_000).checked_add(period)?)
    }

    fn key_text(&self, shifted: &mut Shifted, crc: u32) {
        shifted.crc = crc;
    }

    fn state_mut(&mut self) -> &mut Shifted {
        &mut self.state
    }
}

/// A period as django-ratelimit's rate writes it: `s`, `m`, `h`, `d`, or whole seconds.
fn period_word(seconds: i64) -> String {
    match seconds {
        1 => "s".into(),
        60 => "m".into(),
        3_600 => "h".into(),
        86_400 => "d".into(),
        _ => format!("{seconds}s"),
    }
}

/// django-ratelimit, as `config --for django-ratelimit` writes it.
const EXPORT: Export = Export {
    system: "django-ratelimit",
    help: "django-ratelimit's decorator on a view (Python, views.py)",
    burst: BurstRule::Without,
    key: super::export::client_or_header,
    write,
};

/// One decorated view, keyed by the client's address or a request header.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let mut text = format!("# ratelimit: django-ratelimit at {rate}\n");
    if let Some(why) = <DjangoRatelimit as Rule>::refuses(rate) {
        let _ = writeln!(text, "# {why}");
    }
    let period = (rate.period().as_micros() / 1_000_000).max(1);
    let key = match ask.key {
        // A header's name is letters, digits, - and _: as django-ratelimit's `header:` takes it.
        Some(ExportKey::Header(name)) => format!("header:{}", name.to_ascii_lowercase()),
        _ => "ip".to_owned(),
    };
    let _ = write!(
        text,
        "from django_ratelimit.decorators import ratelimit\n\n\
         @ratelimit(key=\"{key}\", rate=\"{}/{}\", block=True)\n\
         def view(request):\n    ...\n",
        rate.count(),
        period_word(period)
    );
    text
}

impl Rule for DjangoRatelimit {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // Every request so far, by the end of its window as `_get_window` writes it, for
        // the empty key (CRC 0).
        let p = (rate.p() / 1_000_000).max(1);
        let crc = 0;
        let end = |t: i128| {
            let ts = t.div_euclid(1_000_000);
            if p == 1 {
                return ts;
            }
            let w = ts - ts.rem_euclid(p) + crc % p;
            if w < ts { w + p } else { w }
        };
        let mut seen: Vec<i128> = Vec::new();
        events
            .iter()
            .map(|&(t, _)| {
                seen.push(end(t));
                let count = seen.iter().filter(|&&w| w == end(t)).count();
                i128::try_from(count).unwrap() <= rate.n()
            })
            .collect()
    }

    const NAME: &'static str = "django-ratelimit";
    const HELP: &'static str = "django-ratelimit: windows of whole seconds, each key's shifted \
                                by crc32(key) % P, limited requests counted";
    const USES_BURST: bool = false;
    const SPENDS_COST: bool = false;
    const MODELS: Option<&'static str> =
        Some("django-ratelimit 4.1.0 (core.get_usage, _get_window), a Django cache");
    const QUIRKS: Option<&'static str> = Some(
        "each key's windows are shifted by crc32(key) % P, and end at (and hold) that second: \
         they open crc32(key) % P + 1 s past the epoch's; whole seconds (int(time.time())); \
         limited requests count",
    );
    const PROVEN: Option<&'static str> = Some(
        "PyPI django-ratelimit 4.1.0 on Django 5.2's LocMemCache, time.time frozen \
         (python/tests/test_django_ratelimit_peer.py)",
    );
    const EXPORT: Option<Export> = Some(EXPORT);

    fn refuses(rate: Rate) -> Option<String> {
        (rate.period().as_micros() % 1_000_000 != 0).then(|| {
            format!("django-ratelimit's period is whole seconds (_split_rate), and {rate}'s is not")
        })
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> DjangoRatelimit {
        DjangoRatelimit::new(rate)
    }

    fn promise(limit: &Limit) -> String {
        let (n, p) = (limit.rate.count(), limit.rate.period());
        format!("at most {n} per window of a key, so at most {} in any {p}", 2 * n)
    }

    fn bound(limit: &Limit) -> Bound {
        // Each key's windows are its own, so no window is aligned for all.
        Bound::Period { most: 2 * limit.rate.count() }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::decisions;
    use super::*;
    use crate::event::KeyNotes;
    use crate::limiter::PerKey;

    fn at(micros: &[i64]) -> Vec<Timestamp> {
        micros.iter().map(|&t| Timestamp::from_micros(t).unwrap()).collect()
    }

    #[test]
    fn the_empty_keys_windows_open_a_second_past_the_epochs_and_limited_requests_count() {
        // 2 per 2 s, CRC 0: windows (w − 2, w] for even w, so seconds {1, 2}, {3, 4}.
        // 0.999 s is in (−2, 0]; 1 s and 2.5 s in (0, 2] with a third at 2.9 s (limited,
        // counted); 3 s opens (2, 4].
        let mut limiter = DjangoRatelimit::new("2/2s".parse().unwrap());
        let got = decisions(&mut limiter, &at(&[999_999, 1_000_000, 2_500_000, 2_900_000, 3_000_000]));
        assert_eq!(got, [true, true, true, false, true]);
        let mut limiter = DjangoRatelimit::new("1/s".parse().unwrap());
        decisions(&mut limiter, &at(&[0, 1, 2]));
        assert_eq!(limiter.state.counted, Counted(Some((-1, 3))), "limited requests count");
    }

    #[test]
    fn django_ratelimit_shifts_each_keys_windows_by_its_crc32() {
        // 1 a minute. zlib.crc32(b"a") % 60 = 27, of b"b" 41: "a"'s windows end at second
        // 27 of each minute, "b"'s at 41. Both keys at 0:27 and 0:28: "a" opens a window at
        // 0:28, "b" is still in the one its 0:27 counted in.
        // Shared before the reading notes the keys, which it does only once asked.
        let notes = KeyNotes::default();
        let mut keys = PerKey::new(DjangoRatelimit::new("1/m".parse().unwrap()));
        keys.share_key_notes(&notes);
        notes.note_keys(2, |n| [b"a".as_slice(), b"b"][n]);
        let s = |second: i64| Timestamp::from_micros(second * 1_000_000).unwrap();
        let got: Vec<bool> = [(0, 27), (1, 27), (0, 28), (1, 28), (1, 41), (1, 42)]
            .iter()
            .map(|&(key, second)| keys.decide(key, s(second), 1).passed)
            .collect();
        assert_eq!(got, [true, true, true, false, false, true]);
        // Unnoted, a key is of the empty text: its windows open at second 1.
        let mut unnoted = PerKey::new(DjangoRatelimit::new("1/m".parse().unwrap()));
        let got: Vec<bool> = [0, 1, 60, 61].iter().map(|&t| unnoted.decide(0, s(t), 1).passed).collect();
        assert_eq!(got, [true, true, false, true]);
    }

    #[test]
    fn every_key_rests_a_period_past_its_last_second() {
        let limiter = DjangoRatelimit::new("3/m".parse().unwrap());
        let last = Timestamp::from_micros(90_500_000).unwrap();
        assert_eq!(limiter.rests_after(last), Timestamp::from_micros(150_000_000));
        for crc in [0, 27, 41, 59, u32::MAX] {
            let mut state = Shifted { crc, ..Shifted::default() };
            limiter.step(&mut state, last, 1, false);
            assert!(!limiter.at_rest(&state, last));
            assert!(limiter.at_rest(&state, Timestamp::from_micros(150_000_000).unwrap()), "crc {crc}");
        }
    }

    #[test]
    fn a_period_is_whole_seconds_and_written_as_django_writes_it() {
        assert!(<DjangoRatelimit as Rule>::refuses("5/1500ms".parse().unwrap()).is_some());
        assert_eq!(<DjangoRatelimit as Rule>::refuses("5/m".parse().unwrap()), None);
        assert_eq!([1, 60, 3_600, 86_400, 300].map(period_word), ["s", "m", "h", "d", "300s"]);
    }
}
