//! The `haproxy` model against Debian's HAProxy 2.6, its clock driven by libfaketime (see
//! `faked_clock`): two stick tables of `http_req_rate(P)` per `?k=`, 1 s and 10 s, and
//! `deny if { sc_http_req_rate(0) gt 2 }`; every answer says both rates, and the model must
//! decide every event as they do, for every limit N.
//!
//! HAProxy counts every request before any rule reads the rate, so a table's counts do not
//! depend on N: a request passes `gt N` exactly when the rate it was answered with is at
//! most N. One run so checks every N.
//!
//! HAProxy's clock (`now`, `src/clock.c`, `clock_update_date`) does not take a date further
//! than its poll's timeout plus 100 ms from the date before the poll: it keeps its time, or
//! moves on by the timeout. Its one timer here is a task due each 1 000 ms (its poll waits
//! 1 001 ms at most, by strace), due again 1 000 ms after it runs. So the test moves the
//! clock, between events, to at most 100 ms past that timer, with a request that tracks
//! nothing (no `k`). A poll that times out in real time (the test slower than the timer)
//! moves HAProxy's time past the faked one: each answer says HAProxy's time (a Lua fetch of
//! `core.now()`), the model decides at that time, and later events are sent that much earlier
//! so that HAProxy's time is theirs again.

use std::path::Path;

use crate::faked_clock::FakedServer;
use crate::harness::{Stdin, run_with};
use crate::peer_events::{Event, apart, decisions, events};

const HAPROXY: &str = "/usr/sbin/haproxy";

/// The periods of the two tables, in ms.
const PERIODS: [i64; 2] = [1_000, 10_000];

/// The limit the deny rule holds the first table to.
const DENY_ABOVE: u64 = 2;

/// HAProxy's timer: its period, and how far past it a date may be taken (µs).
const TIMER: i64 = 1_000_000;
const SLACK: i64 = 100_000;

/// Starts HAProxy with its clock at `micros`.
fn start_haproxy(micros: i64) -> FakedServer {
    let config = |dir: &Path, port: u16| {
        let lua = dir.join("now.lua");
        std::fs::write(
            &lua,
            "core.register_fetches('now_us', function(txn)\n\
             \x20 local t = core.now()\n  return t.sec * 1000000 + t.usec\nend)\n",
        )
        .unwrap();
        let [p0, p1] = PERIODS;
        let rates =
            "hdr x-now %[lua.now_us] hdr x-rates \"%[sc_http_req_rate(0)] %[sc_http_req_rate(1)]\"";
        format!(
            "global\n    nbthread 1\n    lua-load {lua}\n\
             defaults\n    mode http\n    timeout client 5s\n    timeout connect 5s\n    timeout server 5s\n\
             backend second\n    stick-table type string len 64 size 100k expire 24d store http_req_rate({p1})\n\
             frontend f\n    bind 127.0.0.1:{port}\n\
             \x20   stick-table type string len 64 size 100k expire 24d store http_req_rate({p0})\n\
             \x20   http-request track-sc0 url_param(k)\n\
             \x20   http-request track-sc1 url_param(k) table second\n\
             \x20   http-request deny deny_status 429 {rates} if {{ sc_http_req_rate(0) gt {DENY_ABOVE} }}\n\
             \x20   http-request return status 200 {rates}\n",
            lua = lua.display()
        )
    };
    let args =
        |dir: &Path| vec!["-db".into(), "-f".into(), dir.join("config").display().to_string()];
    FakedServer::start_at(HAPROXY, config, args, micros)
}

/// What HAProxy answered an event: its time (µs), whether it passed, and the two rates.
struct Answer {
    now: i64,
    passed: bool,
    rates: [u64; 2],
}

impl Answer {
    fn read(text: &str) -> Answer {
        let header = |name: &str| {
            let line = text.lines().find(|l| l.starts_with(name));
            line.unwrap_or_else(|| panic!("no {name} in {text:?}"))[name.len()..].trim()
        };
        // A request that tracks nothing has no rates.
        let mut rates = header("x-rates:").split_whitespace().map(|r| r.parse().unwrap());
        Answer {
            now: header("x-now:").parse().unwrap(),
            passed: text.starts_with("HTTP/1.1 200"),
            rates: [rates.next().unwrap_or(0), rates.next().unwrap_or(0)],
        }
    }
}

/// Sends every event to HAProxy, moving its clock on between them as it can follow.
fn replay_through_haproxy(events: &[Event]) -> Vec<Answer> {
    let haproxy = start_haproxy(events[0].0);
    // HAProxy's time is the faked one plus `ahead`; its timer is due at `due` (its time).
    let (mut now, mut ahead, mut due) = (events[0].0, 0, events[0].0 + TIMER);
    let mut answers = Vec::with_capacity(events.len());
    for (t, k, _) in events {
        while *t > due + SLACK {
            let wake = due + SLACK;
            let answer = Answer::read(&haproxy.answer(wake - ahead, "/", ""));
            (now, ahead) = (answer.now, ms(answer.now) - ms(wake - ahead));
            due = now + TIMER;
        }
        let answer = Answer::read(&haproxy.answer((*t).max(now) - ahead, "/", k));
        ahead = ms(answer.now) - ms((*t).max(now) - ahead);
        if answer.now >= due {
            due = answer.now + TIMER;
        }
        now = answer.now;
        answers.push(answer);
    }
    answers
}

/// `micros` to the millisecond: the faked clock's, and HAProxy's `now_ms`.
fn ms(micros: i64) -> i64 {
    micros.div_euclid(1000) * 1000
}

#[test]
#[ignore = "needs haproxy and libfaketime"]
fn haproxy_under_the_faked_clock_arms_no_watchdog_to_deadlock_in() {
    // Its watchdog's signal handler reads libfaketime's file, and hung HAProxy in `malloc`.
    let haproxy = start_haproxy(1_735_689_600_000_000);
    assert!(haproxy.request(1_735_689_600_000_000, "/", "a"));
    let timers = std::fs::read_to_string(format!("/proc/{}/timers", haproxy.pid())).unwrap();
    assert_eq!(timers, "", "HAProxy armed a timer");
}

#[test]
#[ignore = "needs haproxy and libfaketime"]
fn haproxy_decides_a_request_log_as_the_real_haproxy_does_at_every_limit() {
    // An hour of a request log: forty clients, bots among them.
    let args = ["synth", "requests", "--clients", "40", "--requests", "300000", "--bots", "2"];
    let mut events = events(&run_with(&args, Stdin::Null).ok(), Some("client"));
    let end = events[0].0 + 60 * 60_000_000;
    events.retain(|e| e.0 < end);
    let answers = replay_through_haproxy(&events);
    // The deny rule's decisions are the rates' own.
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a.passed, a.rates[0] <= DENY_ABOVE, "event {i}: denied at rate {:?}", a.rates);
    }
    // The model decides at HAProxy's time, which the faked clock kept at the event's.
    let at_haproxy: Vec<Event> =
        events.iter().zip(&answers).map(|((_, k, c), a)| (a.now, k.clone(), *c)).collect();
    let kept = events.iter().zip(&answers).filter(|(e, a)| ms(e.0) == ms(a.now)).count();
    assert!(kept * 100 >= events.len() * 99, "HAProxy's time was the event's on {kept} only");
    for (table, period) in PERIODS.iter().enumerate() {
        for &n in [&[1, 2, 3, 4, 6][..], &[1, 3, 10, 20]][table] {
            let theirs: Vec<bool> = answers.iter().map(|a| a.rates[table] <= n).collect();
            let rate = format!("{n}/{period}ms");
            let ours = decisions(&at_haproxy, &["--algo", "haproxy", "--rate", &rate]);
            let parted = apart(&theirs, &ours);
            assert!(
                parted.is_empty(),
                "at {rate}: {} apart, first {:?}",
                parted.len(),
                &parted[..parted.len().min(10)]
            );
            let refused = theirs.iter().filter(|&&pass| !pass).count();
            assert!(refused > 0, "at {rate}: HAProxy refused nothing: the test proves little");
            // An exact sliding-window counter parts from HAProxy's estimate.
            let exact = decisions(&at_haproxy, &["--algo", "sliding-counter", "--rate", &rate]);
            let (n, exact) = (events.len(), apart(&theirs, &exact).len());
            eprintln!(
                "haproxy at {rate}: {n} events, {refused} refused, 0 apart (sliding-counter: {exact})"
            );
        }
    }
    eprintln!("HAProxy's time was the event's on {kept} of {}", events.len());
}

#[test]
#[ignore = "needs haproxy and libfaketime"]
fn the_config_ratelimit_writes_for_haproxy_is_one_haproxy_takes() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["--rate", "5/h"][..], &["--rate", "1/30d", "--key", "X-Client"]] {
        let snippet =
            crate::harness::run(&[&["config", "--for", "haproxy"][..], args].concat(), "");
        let config = format!(
            "defaults\n    mode http\n    timeout client 5s\n    timeout connect 5s\n    \
             timeout server 5s\nfrontend www\n    bind 127.0.0.1:8080\n{}    \
             http-request return status 200\n",
            snippet.ok().split_once("# in the frontend:\n").unwrap().1
        );
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, &config).unwrap();
        let check = std::process::Command::new(HAPROXY).arg("-c").arg("-f").arg(&path).output();
        let check = check.expect("haproxy runs");
        let said = String::from_utf8_lossy(&check.stderr);
        assert!(check.status.success(), "haproxy -c refused {config}: {said}");
    }
}

#[test]
#[ignore = "needs haproxy and libfaketime"]
fn an_empty_key_is_not_accounted_as_the_real_haproxy_does() {
    // Thirty requests 50 ms apart, every third without `k`: HAProxy tracks nothing for
    // them, and passes them whatever the rate of `a`.
    let events = crate::peer_events::some_keyless(1_735_689_600_000_000, 50_000, 30, 3);
    let answers = replay_through_haproxy(&events);
    let at_haproxy: Vec<Event> =
        events.iter().zip(&answers).map(|((_, k, c), a)| (a.now, k.clone(), *c)).collect();
    let theirs: Vec<bool> = answers.iter().map(|a| a.passed).collect();
    let empty = events.iter().zip(&theirs).filter(|((_, k, _), _)| k.is_empty());
    assert!(empty.clone().all(|(_, &passed)| passed), "{theirs:?}");
    assert!(theirs.iter().any(|&pass| !pass), "HAProxy refused nothing: the test proves little");
    let rate = format!("{DENY_ABOVE}/{}ms", PERIODS[0]);
    let ours = decisions(&at_haproxy, &["--algo", "haproxy", "--rate", &rate]);
    assert_eq!(apart(&theirs, &ours), [] as [usize; 0]);
    // Were the empty key counted as a key, its requests would be refused too.
    let dashed: Vec<Event> = at_haproxy
        .iter()
        .map(|(t, k, c)| (*t, if k.is_empty() { "-".into() } else { k.clone() }, *c))
        .collect();
    let counted = decisions(&dashed, &["--algo", "haproxy", "--rate", &rate]);
    assert!(!apart(&theirs, &counted).is_empty());
}
