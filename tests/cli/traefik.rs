//! The `traefik` model against Go's own `golang.org/x/time/rate` (Debian's
//! golang-golang-x-time-dev, 0.3.0): a Go program reserves a token at each event's time, as
//! Traefik's middleware does, and the two must decide every event alike.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::{Stdin, real_catalog, run, run_with, temp_file};

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

/// The Go program's decisions on `events` (ns, key) at `average` per `period_ns`.
fn go(events: &[(i64, String)], average: u64, period_ns: i64, burst: u64) -> Vec<bool> {
    let program = temp_file("traefik.go", PROGRAM);
    let mut child = Command::new("go")
        .arg("run")
        .arg(&*program)
        .args([average.to_string(), period_ns.to_string(), burst.to_string()])
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOCACHE", std::env::temp_dir().join("ratelimit-go-cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("go runs: install golang-go and golang-golang-x-time-dev");
    let lines: String = events.iter().map(|(t, k)| format!("{t},{k}\n")).collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(lines.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "go: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l == "1").collect()
}

/// The events (ns, key) of a CSV whose first column is the time, in time order.
fn events(csv: &str, key: Option<&str>) -> Vec<(i64, String)> {
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let column = key.map(|k| reader.headers().unwrap().iter().position(|h| h == k).unwrap());
    let mut events: Vec<(i64, String)> = (reader.records())
        .map(|r| {
            let r = r.unwrap();
            let time = chrono::DateTime::parse_from_rfc3339(&r[0]).unwrap();
            (time.timestamp_nanos_opt().unwrap(), column.map_or("all".into(), |c| r[c].to_owned()))
        })
        .collect();
    events.sort_by_key(|e| e.0);
    events
}

/// What `ratelimit replay --algo traefik --emit all` decides for `events`, in order.
fn ours(events: &[(i64, String)], rate: &str, burst: &str) -> Vec<bool> {
    let mut csv = String::from("time,k\n");
    for (ns, key) in events {
        let time = chrono::DateTime::from_timestamp_nanos(*ns);
        csv += &format!("{},{key}\n", time.format("%Y-%m-%dT%H:%M:%S%.6fZ"));
    }
    let args = ["replay", "-", "--emit", "all", "--key", "k", "--algo", "traefik"];
    let out = run(&[&args[..], &["--rate", rate, "--burst", burst]].concat(), &csv).ok();
    out.lines().skip(1).map(|line| line.ends_with(",passed")).collect()
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
        let ours = ours(events, rate, &burst.to_string());
        let theirs = go(events, n, period_ns, burst);
        let parted: Vec<usize> = (0..ours.len()).filter(|&i| ours[i] != theirs[i]).collect();
        assert_eq!(parted, [] as [usize; 0], "{name} at {rate}, burst {burst}");
        let refused = theirs.iter().filter(|&&pass| !pass).count();
        assert!(refused > 0, "{name} at {rate}: nothing refused");
        eprintln!(
            "traefik on {name} at {rate}, burst {burst}: {} events, {refused} refused, 0 apart",
            ours.len()
        );
    }
}
