//! HAProxy's `http_req_rate(period)` with `deny if { sc_http_req_rate(0) gt N }`.

use std::fmt::Write as _;

use super::export::{self, BurstRule, Export, ExportAsk, ExportKey};
use std::num::NonZeroU64;

use super::promise::{Bound, Limit};
use super::{Decision, KeyedState, Rule};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// A stick table storing `http_req_rate(P)`, tracked by `http-request track-sc0 KEY` and
/// read by `http-request deny if { sc_http_req_rate(0) gt N }`, as HAProxy 2.6 decides
/// (v2.6.0: `include/haproxy/freq_ctr.h` 38–75, `update_freq_ctr_period`, and 99–104,
/// `read_freq_ctr_period`; `src/freq_ctr.c` 27–96, `freq_ctr_total`; the counter is updated
/// when `track-sc0` runs, `src/http_act.c` 2001–2070, before the deny rule reads it):
///
/// - Time is HAProxy's `now_ms`, whole milliseconds in 32 bits that wrap, and the counter
///   keeps two periods: `curr` since `tick`, and `prev` before it. An update within the
///   period adds to `curr`; else `curr` becomes `prev` and the period moves on by P, or,
///   if two periods or more passed, `prev` is 0 and the period starts now. `tick` is kept
///   even (its low bit is a lock).
/// - The rate read is `⌊(prev·remain + curr·P)/P⌋`, `remain` the part of the period still
///   to come (a period further back counts `curr` as `prev`), except that with no `curr`
///   and `prev` at most 1, it is `prev` (the "flapping correction").
/// - Every request is counted, the denied ones too, before the rule reads the rate: a
///   request passes if the rate with it is at most N. A cost counts as that many
///   requests (`sc_inc_gpc` aside, HAProxy counts requests).
#[derive(Clone, Debug)]
pub struct Haproxy {
    limit: u64,
    /// P, in ms.
    period: u32,
    state: Counter,
}

/// A key's `freq_ctr`: the tick its period began, and the counts of it and the one before.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counter {
    tick: u32,
    curr: u32,
    prev: u32,
}

impl Haproxy {
    /// Returns the rule for N per P, P a whole number of milliseconds ([`Haproxy::refuses`]).
    pub fn new(rate: Rate) -> Haproxy {
        let period = u32::try_from(rate.period().as_micros() / 1000).unwrap_or(u32::MAX);
        Haproxy { limit: rate.count(), period: period.max(1), state: Counter::default() }
    }
}

impl Counter {
    /// `update_freq_ctr_period`: counts `inc` at `now`.
    fn update(&mut self, now: u32, period: u32, inc: u32) {
        if now.wrapping_sub(self.tick) < period {
            self.curr = self.curr.wrapping_add(inc);
            return;
        }
        self.prev = std::mem::replace(&mut self.curr, inc);
        let mut tick = self.tick.wrapping_add(period);
        if now.wrapping_sub(tick) >= period {
            // Two periods or more were missed.
            self.prev = 0;
            tick = now;
        }
        self.tick = tick & !1;
    }

    /// `read_freq_ctr_period`: the rate at `now`, over `period`.
    fn rate(&self, now: u32, period: u32) -> u64 {
        let (mut curr, mut past) = (u64::from(self.curr), u64::from(self.prev));
        // `int remain = tick + period - now`, in 32 bits.
        #[allow(clippy::cast_possible_wrap)] // As C converts it.
        let mut remain = i64::from(self.tick.wrapping_add(period).wrapping_sub(now) as i32);
        if remain < 0 {
            remain += i64::from(period);
            past = if remain >= 0 { curr } else { 0 };
            curr = 0;
        }
        if curr == 0 && past <= 1 {
            return past;
        }
        // remain is at most P here, and at least 0 unless past is 0.
        let remain = u64::try_from(remain).unwrap_or(0);
        (past * remain + curr * u64::from(period)) / u64::from(period)
    }
}

impl Haproxy {
    /// Counts a request of `cost` at `now` and returns the rate the deny rule then reads:
    /// what `gt N` compares, whatever N is, as every request is counted.
    #[inline]
    pub(crate) fn counted(&self, counter: &mut Counter, now: Timestamp, cost: u64) -> u64 {
        // now_ms: whole milliseconds, in 32 bits that wrap.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Wraps, as C's.
        let now = now.as_micros().div_euclid(1000) as u32;
        counter.update(now, self.period, u32::try_from(cost).unwrap_or(u32::MAX));
        counter.rate(now, self.period)
    }
}

impl KeyedState for Haproxy {
    type State = Counter;
    type Keys = super::Apart;

    #[inline]
    fn step(&self, counter: &mut Counter, now: Timestamp, cost: u64, force: bool) -> Decision {
        // Counted first: a forced request is counted too.
        let rate = self.counted(counter, now, cost);
        Decision { passed: force || rate <= self.limit, wait: 0 }
    }

    /// A denied request was counted too.
    fn refuse(&self, counter: &mut Counter, now: Timestamp, cost: u64) {
        self.step(counter, now, cost, false);
    }

    fn state_mut(&mut self) -> &mut Counter {
        &mut self.state
    }
}

/// HAProxy, as `config --for haproxy` writes it.
const EXPORT: Export = Export {
    system: "haproxy",
    help: "HAProxy's stick table of http_req_rate and a deny rule",
    burst: BurstRule::Without,
    key: export::client_or_header,
    write,
};

/// A stick table of `http_req_rate(P)`, tracked per key (the client's address, or a header),
/// and `deny if { sc_http_req_rate(0) gt N }`; `--algo haproxy` replays it. Entries expire
/// two periods after their last request, when a kept counter reads as a new one would.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let mut text = format!("# ratelimit: haproxy at {rate} (--algo haproxy replays it)\n");
    // HAProxy's periods are whole milliseconds below 2^31; a longer one is taken at the
    // most, the count scaled down (no faster than asked while it stays at least 1), and a
    // fraction of a millisecond rounded up (slower).
    // Widening, so exact (From is not const).
    const MOST: i64 = i32::MAX as i64;
    let micros = rate.period().as_micros();
    let (mut count, mut ms) = (rate.count(), micros / 1000 + i64::from(micros % 1000 != 0));
    let mut faster = "";
    if ms > MOST {
        let scaled = i128::from(count) * i128::from(MOST) * 1000 / i128::from(micros);
        faster = if scaled == 0 { ", faster than asked" } else { "" };
        (count, ms) = (u64::try_from(scaled).unwrap_or(u64::MAX).max(1), MOST);
    }
    if let Some(why) = <Haproxy as Rule>::refuses(rate) {
        let _ = writeln!(text, "# {why}: it becomes {count} per {ms} ms{faster}");
    }
    // Without a key, one entry for all requests: a constant.
    let (kind, track) = match ask.key {
        Some(ExportKey::Client) => ("ip", "src".to_owned()),
        Some(ExportKey::Header(name)) => ("string len 64", format!("req.hdr({name})")),
        Some(ExportKey::Variable(_) | ExportKey::Quoted(_)) | None => {
            ("integer", "int(0)".to_owned())
        }
    };
    let expire = ms.saturating_mul(2).min(MOST);
    let _ = write!(
        text,
        "# in the frontend:\n    \
         stick-table type {kind} size 1m expire {expire}ms store http_req_rate({ms}ms)\n    \
         http-request track-sc0 {track}\n    \
         http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt {count} }}\n"
    );
    text
}

impl Rule for Haproxy {
    type Params = super::NoParams;

    #[cfg(test)]
    fn by_the_rule(rate: Rate, _b: u64, events: &[(i128, u64)]) -> Vec<bool> {
        // The freq_ctr as freq_ctr.h writes it, in 32-bit ms that wrap: a fresh counter's
        // period begins at tick 0; an update past the period moves it on by P, or starts it
        // now (even) after two; every request counts; the rate is ⌊(prev·remain + curr·P)/P⌋,
        // with the flapping correction. The counter's tick, and its current and previous
        // counts.
        let (n, p) = (rate.n(), rate.p());
        let mut counter: (i128, i128, i128) = (0, 0, 0);
        super::tests::by_rule(events, |_, t, c| {
            let wrap = |x: i128| x.rem_euclid(1 << 32);
            let (period, now) = ((p / 1000).max(1), wrap(t.div_euclid(1000)));
            let (tick, curr, prev) = &mut counter;
            if wrap(now - *tick) < period {
                *curr += c;
            } else {
                *prev = std::mem::replace(curr, c);
                *tick = wrap(*tick + period);
                if wrap(now - *tick) >= period {
                    (*prev, *tick) = (0, now);
                }
                *tick -= *tick % 2;
            }
            let mut remain = wrap(*tick + period - now);
            remain -= if remain >= 1 << 31 { 1 << 32 } else { 0 };
            let (mut cur, mut past) = (*curr, *prev);
            if remain < 0 {
                remain += period;
                past = if remain >= 0 { cur } else { 0 };
                cur = 0;
            }
            let rate = if cur == 0 && past <= 1 {
                past
            } else {
                (past * remain + cur * period) / period
            };
            rate <= n
        })
    }

    const NAME: &'static str = "haproxy";
    const HELP: &'static str =
        "HAProxy's http_req_rate(P) gt N: two counters and a tick, denied requests counted";
    const USES_BURST: bool = false;
    const SKIPS_EMPTY_KEY: bool = true;
    const MODELS: Option<&'static str> = Some("HAProxy 2.6, a stick table's http_req_rate");
    const QUIRKS: Option<&'static str> = Some("a rate estimated over two periods; denied requests count; the clock moves with its poll");
    const PROVEN: Option<&'static str> = Some("Debian's HAProxy 2.6 under libfaketime (tests/cli/haproxy.rs)");
    const EXPORT: Option<Export> = Some(EXPORT);
    const OWN_SIZE: Option<super::OwnSize> = Some(super::OwnSize {
        setting: "gt",
        help: "HAProxy's stick table: the N of sc_http_req_rate(0) gt N",
        finder: |rate, _| Box::new(super::HaproxyLimit::new(rate)),
        refuses: <Haproxy as Rule>::refuses,
        weighs: true,
        line: |rate, gt| format!("http_req_rate({}) gt {gt} denies none of the events", rate.period()),
        in_replay: false,
    });
    const RATE_WORDS: Option<super::RateWords> = Some(super::RateWords {
        system: "HAProxy",
        keys: &["gt", "http_req_rate"],
        how: "gt=N with http_req_rate=PERIOD: give both",
        read: rate_from_words,
        written: rate_as_words,
    });

    fn refuses(rate: Rate) -> Option<String> {
        let micros = rate.period().as_micros();
        (micros % 1000 != 0 || micros / 1000 > i64::from(i32::MAX)).then(|| {
            format!("HAProxy counts a period in whole milliseconds up to 24.8 days, and {rate}'s is not")
        })
    }

    fn new_limit(rate: Rate, _burst: NonZeroU64) -> Haproxy {
        Haproxy::new(rate)
    }

    /// A sliding estimate over two periods: at most 2N in any period.
    fn promise(limit: &Limit) -> String {
        let (n, p) = (limit.rate.count(), limit.rate.period());
        format!("about {n} per {p}, estimated over two periods: at most {} in any {p}", 2 * n)
    }

    fn bound(limit: &Limit) -> Bound {
        Bound::Period { most: 2 * limit.rate.count() }
    }


}

/// HAProxy's rate, `sc_http_req_rate(0) gt N` over `http_req_rate(PERIOD)`; `None`
/// without both.
fn rate_from_words(given: &[(&str, &str)]) -> Option<super::RateRead> {
    let word = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| v.trim());
    Some(format!("{}/{}", word("gt")?, word("http_req_rate")?).parse())
}

/// A rate as HAProxy's stick table and deny rule write it: `http_req_rate=P,gt=N`.
#[allow(clippy::unnecessary_wraps)] // The shape every system's writer has.
fn rate_as_words(rate: Rate) -> Option<String> {
    Some(format!("http_req_rate={},gt={}", rate.period(), rate.count()))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{decisions, secs};
    use super::*;

    #[test]
    fn every_request_counts_and_the_rate_reads_the_period_before() {
        // gt 2 per 10 s, a fresh counter's period beginning at tick 0: rates 1 and 2 pass at
        // 1 s and 2 s, 3 > 2 at 3 s is denied and counted, and so 4 at 4 s. At 12.5 s the
        // period moves on by 10 s (tick 10 000): prev 4, curr 1, 7.5 s to come:
        // ⌊(4·7 500 + 1·10 000)/10 000⌋ = 4, denied. At 40 s two periods were missed: prev
        // 0, the period starts now, curr 1: rate 1, it passes.
        let mut haproxy = Haproxy::new("2/10s".parse().unwrap());
        let got = decisions(&mut haproxy, &secs(&[1, 2, 3, 4]));
        assert_eq!(got, [true, true, false, false]);
        let times: Vec<Timestamp> =
            [12_500, 40_000].iter().map(|&ms| Timestamp::from_micros(ms * 1000).unwrap()).collect();
        assert_eq!(decisions(&mut haproxy, &times), [false, true]);
        assert_eq!((haproxy.state.tick, haproxy.state.prev, haproxy.state.curr), (40_000, 0, 1));
    }

    #[test]
    fn with_no_current_count_a_past_of_one_reads_as_one() {
        // The flapping correction: with no curr, a prev of at most 1 reads as itself,
        // whatever part of the period remains (⌊1·1/10 000⌋ would be 0).
        let counter = Counter { tick: 0, curr: 0, prev: 1 };
        assert_eq!(counter.rate(9_999, 10_000), 1);
        // A period further on, curr counts as prev (and so reads 1); two on, nothing.
        let counter = Counter { tick: 0, curr: 1, prev: 3 };
        assert_eq!((counter.rate(15_000, 10_000), counter.rate(25_000, 10_000)), (1, 0));
        let counter = Counter { tick: 0, curr: 4, prev: 3 };
        assert_eq!(counter.rate(15_000, 10_000), 2, "⌊4·5 000/10 000⌋");
    }
}
