//! nginx's own tests: its limit_req decisions, worked by hand from its source.

use super::super::tests::{burst, decisions};
use super::*;
use crate::limiter::Limiter;

fn ms(ms: &[i64]) -> Vec<Timestamp> {
    ms.iter().map(|&ms| Timestamp::from_micros(ms * 1000).unwrap()).collect()
}

#[test]
fn one_a_minute_is_one_each_62_5_seconds() {
    // rate=1r/m is 16 milli-requests a second. The first request is free; at 30 s the
    // excess would be 1000 − 480 > 0, refused; at 62 499 ms the leak is
    // ⌊16·62 499/1000⌋ = 999, refused; at 62 500 it is 1000, and the request passes.
    let mut nginx = Nginx::new("1/m".parse().unwrap(), burst(1));
    let got = decisions(&mut nginx, &ms(&[0, 30_000, 62_499, 62_500]));
    assert_eq!(got, [true, false, false, true]);
}

#[test]
fn burst_counts_the_requests_beyond_the_first() {
    // burst=2 at 1r/s: three at once, the fourth refused; 1 s later one more.
    let mut nginx = Nginx::new("1/s".parse().unwrap(), burst(3));
    let got = decisions(&mut nginx, &ms(&[0, 0, 0, 0, 1_000, 1_000]));
    assert_eq!(got, [true, true, true, false, true, false]);
}

#[test]
fn a_truncated_leak_is_lost_when_last_moves() {
    // 1r/m leaks 16 a second, ⌊1.6⌋ = 1 in each 100 ms step. Ten requests charged at
    // 100 ms steps after a free one leave 10·1000 − 10, where an exact leak over the
    // same second leaves 10·1000 − 16: the excess creeps above the exact value.
    let mut nginx = Nginx::new("1/m".parse().unwrap(), burst(101));
    let times: Vec<i64> = (0..=10).map(|i| i * 100).collect();
    assert!(decisions(&mut nginx, &ms(&times)).iter().all(|&pass| pass));
    assert_eq!(nginx.state.0.unwrap().excess, 9_990);
    // A refusal changes nothing: not the excess, not `last`.
    let mut nginx = Nginx::new("1/s".parse().unwrap(), burst(1));
    assert_eq!(decisions(&mut nginx, &ms(&[0, 500, 999, 1_000])), [true, false, false, true]);
}

#[test]
fn a_request_admitted_past_delay_waits_for_its_excess_to_leak_to_it() {
    // 2r/s (2000 milli a second), burst=2. delay=0: free at 0 s; at 0 s again excess
    // 1000, waits 1000·1000/2000 = 500 ms; at 0.5 s 1000 − 1000 + 1000, 500 ms; at
    // 0.7 s 1000 − 400 + 1000 = 1600, 800 ms; at 1 s 1600 − 600 + 1000 = 2000, 1 s.
    // delay=1 serves up to 1000 at once: 0, 0, 0, 300 ms, 500 ms. nodelay: none waits.
    let times = ms(&[0, 0, 500, 700, 1_000]);
    for (delay, want) in [
        (Delay::Beyond(0), [0, 500, 500, 800, 1_000]),
        (Delay::Beyond(1), [0, 0, 0, 300, 500]),
        (Delay::Never, [0; 5]),
        (Delay::DryRun(Beside::Nothing), [0; 5]),
        (Delay::DryRun(Beside::Delay(1)), [0; 5]),
    ] {
        let mut nginx = Nginx::new("2/s".parse().unwrap(), burst(3)).with_delay(delay);
        let waits: Vec<i128> = times.iter().map(|&t| nginx.take(t, 1, false).wait).collect();
        // A wait is in units of 1/N µs: N = 2.
        assert_eq!(waits, want.map(|ms| ms * 1000 * 2), "{delay}");
    }
}

#[test]
fn times_are_floored_to_the_millisecond() {
    // 1r/s, burst=0: a request 999.9 ms after the first is at 999 ms: 999 leaked.
    let mut nginx = Nginx::new("1/s".parse().unwrap(), burst(1));
    let times = [0, 999_900, 1_000_000].map(|us| Timestamp::from_micros(us).unwrap());
    assert_eq!(decisions(&mut nginx, &times), [true, false, true]);
}

#[test]
fn a_clock_gone_back_leaks_nothing_or_one_ms() {
    // 1r/s, burst=1 (most 1000). A request at 10 s, then one at 9.5 s (ms = −500,
    // taken as 0: excess 0 + 1000, passes, `last` stays), then at 9.6 s again ms < 0:
    // 1000 + 1000 > 1000, refused. Back more than 60 s, ms counts as 1: leak ⌊1000·1/1000⌋
    // = 1, 1000 − 1 + 1000 > 1000, refused too.
    let mut nginx = Nginx::new("1/s".parse().unwrap(), burst(2));
    let got = decisions(&mut nginx, &ms(&[10_000, 9_500, 9_600, -60_000]));
    assert_eq!(got, [true, true, false, false]);
    assert_eq!((nginx.state.0.unwrap().excess, nginx.state.0.unwrap().last), (1000, 10_000));
}

#[test]
fn nginx_writes_only_seconds_and_minutes() {
    let rate = |text: &str| nginx_rate(text.parse().unwrap());
    assert_eq!(rate("5/s"), Some((5, 1)));
    assert_eq!(rate("120/m"), Some((2, 1)));
    assert_eq!(rate("90/m"), Some((90, 60)));
    assert_eq!(rate("60/h"), Some((1, 60)));
    assert_eq!(rate("5/h"), None);
    assert_eq!(rate("1/2s"), Some((30, 60)));
    assert_eq!(rate("1/7s"), None);
}

#[test]
fn its_own_parameters_are_read_as_limit_req_writes_them() {
    let parse = |given: &[(&str, Option<&str>)]| Delay::parse(given);
    assert_eq!(parse(&[]), Ok(Delay::Beyond(0)), "nginx's default, delay=0");
    assert_eq!(parse(&[("delay", Some("3"))]), Ok(Delay::Beyond(3)));
    assert_eq!(parse(&[("nodelay", None)]), Ok(Delay::Never));
    assert_eq!(parse(&[("dry-run", None)]), Ok(Delay::DryRun(Beside::Nothing)));
    // As nginx takes limit_req_dry_run beside limit_req's delay= or nodelay.
    let dry = parse(&[("delay", Some("2")), ("dry-run", None)]);
    assert_eq!(dry, Ok(Delay::DryRun(Beside::Delay(2))));
    let dry = parse(&[("dry-run", None), ("nodelay", None)]);
    assert_eq!(dry, Ok(Delay::DryRun(Beside::NoDelay)));
    assert_eq!(dry.unwrap().to_string(), "nodelay, dry-run");
    let both = parse(&[("nodelay", None), ("delay", Some("2"))]).unwrap_err();
    assert_eq!(both.to_string(), "delay= and nodelay say different things: give one");
    let bad = parse(&[("delay", Some("x"))]).unwrap_err();
    assert_eq!(bad.to_string(), "delay=x is not a whole number of requests");
    assert_eq!(parse(&[("burst", Some("2"))]), Err(ParamError::NotMine("burst".into())));
    for delay in [Delay::Beyond(2), Delay::Never, Delay::DryRun(Beside::Delay(2))] {
        let params = NginxParams { delay, ..NginxParams::default() };
        assert_eq!(params.shown(), Some(delay.to_string()));
        assert_eq!(params.tells_waits(), delay == Delay::Beyond(2));
    }
}
