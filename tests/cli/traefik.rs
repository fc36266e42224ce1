//! The `traefik` model against Go's own `golang.org/x/time/rate` (Debian's
//! golang-golang-x-time-dev, 0.3.0): a Go program reserves a token at each event's time, as
//! Traefik's middleware does, and the two must decide every event alike.

use std::process::Command;

use crate::harness::{Stdin, real_catalog, run_with, temp_file};
use crate::peer_events::{Event, apart, decisions, events, peer_decisions};

/// Traefik's `rateLimit` over x/time/rate: `New`'s limit, maxDelay and ttl, then for each
/// `ns,key` line on stdin `ServeHTTP`'s bucket (a `ttlmap` of whole seconds), reservation,
/// and cancel past maxDelay. It prints 1 for a request served, 0 for a 429.
const PROGRAM: &str = r#"package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

type entry struct {
	lim    *rate.Limiter
	expiry int64
}

func main() {
	average, _ := strconv.ParseInt(os.Args[1], 10, 64)
	period, _ := strconv.ParseInt(os.Args[2], 10, 64)
	burst, _ := strconv.Atoi(os.Args[3])
	rtl := float64(average*int64(time.Second)) / float64(period)
	var maxDelay time.Duration
	if rtl < 1 {
		maxDelay = 500 * time.Millisecond
	} else {
		maxDelay = time.Second / (time.Duration(rtl) * 2)
	}
	ttl := int64(1)
	if rtl >= 1 {
		ttl++
	} else {
		ttl += int64(1 / rtl)
	}
	buckets := map[string]*entry{}
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		parts := strings.Split(in.Text(), ",")
		ns, _ := strconv.ParseInt(parts[0], 10, 64)
		t := time.Unix(0, ns)
		e, ok := buckets[parts[1]]
		if !ok || e.expiry <= t.Unix() {
			e = &entry{lim: rate.NewLimiter(rate.Limit(rtl), burst)}
			buckets[parts[1]] = e
		}
		e.expiry = t.Add(time.Duration(ttl) * time.Second).Unix()
		res := e.lim.ReserveN(t, 1)
		if res.DelayFrom(t) > maxDelay {
			res.CancelAt(t)
			fmt.Fprintln(out, 0)
		} else {
			fmt.Fprintln(out, 1)
		}
	}
}
"#;

/// The Go program's decisions on `events` at `average` per `period_ns`.
fn go(events: &[Event], average: u64, period_ns: i64, burst: u64) -> Vec<bool> {
    let program = temp_file("traefik.go", PROGRAM);
    let mut go = Command::new("go");
    go.arg("run")
        .arg(&*program)
        .args([average.to_string(), period_ns.to_string(), burst.to_string()])
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOCACHE", std::env::temp_dir().join("ratelimit-go-cache"));
    // The program reads nanoseconds.
    let lines: String = events.iter().map(|(t, k, _)| format!("{t}000,{k}\n")).collect();
    peer_decisions(go, lines, "go (install golang-go and golang-golang-x-time-dev)")
}

#[test]
#[ignore = "needs ../shared/data, go and golang-golang-x-time-dev"]
fn traefik_decides_as_x_time_rate_does() {
    let catalog = std::fs::read_to_string(real_catalog("usgs_m5_2015_2025.csv")).unwrap();
    let quakes = events(&catalog, None);
    let args = ["synth", "requests", "--clients", "40", "--requests", "30000", "--days", "1"];
    let log = run_with(&args, Stdin::Null).ok();
    let requests = events(&log, Some("client"));
    for (name, events, rate, n, period_ns, burst) in [
        ("the catalog", &quakes, "5/h", 5, 3_600_000_000_000, 5),
        ("the catalog", &quakes, "1/m", 1, 60_000_000_000, 2),
        ("the request log", &requests, "1/s", 1, 1_000_000_000, 3),
        ("the request log", &requests, "3/10s", 3, 10_000_000_000, 2),
    ] {
        let args = ["--algo", "traefik", "--rate", rate, "--burst", &burst.to_string()];
        let ours = decisions(events, &args);
        let theirs = go(events, n, period_ns, burst);
        assert_eq!(apart(&theirs, &ours), [] as [usize; 0], "{name} at {rate}, burst {burst}");
        let refused = theirs.iter().filter(|&&pass| !pass).count();
        assert!(refused > 0, "{name} at {rate}: nothing refused");
        eprintln!(
            "traefik on {name} at {rate}, burst {burst}: {} events, {refused} refused, 0 apart",
            ours.len()
        );
    }
}

#[test]
#[ignore = "needs go and golang-golang-x-time-dev"]
fn min_bucket_for_traefik_is_the_least_burst_x_time_rate_refuses_none_with() {
    let args = ["synth", "requests", "--clients", "40", "--requests", "3000", "--days", "0.1"];
    let log = run_with(&args, Stdin::Null).ok();
    let requests = events(&log, Some("client"));
    let asked =
        ["min-bucket", "--rate", "1/s", "--key", "client", "--for", "traefik", "--format", "json"];
    let found = crate::harness::json(&crate::harness::run(&asked, &log).ok());
    let burst = found[0]["system_size"]["value"].as_u64().unwrap();
    assert!(burst > 1, "the log's sessions need more than one");
    // Go's own x/time/rate, as Traefik runs it: none refused at the burst, some at one less.
    assert!(go(&requests, 1, 1_000_000_000, burst).iter().all(|&pass| pass));
    assert!(!go(&requests, 1, 1_000_000_000, burst - 1).iter().all(|&pass| pass));
}
