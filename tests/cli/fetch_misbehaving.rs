//! `fetch` against stand-ins that misbehave: each answer is checked, and anything but the
//! rows asked for ends in one line, exit 2, and the old file kept.

use std::io::{Read, Write};
use std::net::TcpListener;

use crate::harness::{Stdin, run_with, temp_file};

const HEADER: &str = "time,latitude,longitude,depth,mag";

/// Five rows on 2025-01-01, oldest first, as the service would send them.
const ROWS: [&str; 5] = [
    "2025-01-01T01:00:00.000Z,1,2,10,5.1",
    "2025-01-01T02:00:00.000Z,1,2,10,5.2",
    "2025-01-01T03:00:00.000Z,1,2,10,5.3",
    "2025-01-01T04:00:00.000Z,1,2,10,5.4",
    "2025-01-01T05:00:00.000Z,1,2,10,5.5",
];

/// Starts a stand-in on loopback that answers `/count` with 5 and every other request
/// with what `answer` makes of its path and query; returns its base URL.
fn stand_in(answer: impl Fn(&str) -> Vec<u8> + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { return };
            let mut request = [0; 4096];
            let n = stream.read(&mut request).unwrap_or(0);
            let request = String::from_utf8_lossy(&request[..n]);
            let target = request.split(' ').nth(1).unwrap_or("").to_owned();
            let reply = if target.contains("/count?") { ok("5\n") } else { answer(&target) };
            let _ = stream.write_all(&reply);
        }
    });
    format!("http://127.0.0.1:{port}/fdsnws/event/1")
}

/// A whole answer with status 200 and `body`.
fn ok(body: &str) -> Vec<u8> {
    let head = "HTTP/1.1 200 OK\r\nConnection: close\r\n";
    format!("{head}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn csv(rows: &[&str]) -> String {
    format!("{HEADER}\n{}\n", rows.join("\n"))
}

/// Runs fetch of 2025-01-01 against `url` onto a file that held "kept", with `extra`;
/// returns the run and what the file holds after.
fn fetch(url: &str, extra: &[&str]) -> (crate::harness::Run, String) {
    let out = temp_file("quakes.csv", "kept");
    let args = ["fetch", "--url", url, "--since", "2025-01-01", "--until", "2025-01-02"];
    let args = [&args[..], &["--tries", "1", "-o", out.to_str().unwrap()], extra].concat();
    let run = run_with(&args, Stdin::Null);
    let kept = std::fs::read_to_string(&out).unwrap();
    (run, kept)
}

/// Asserts that fetch fails with one line that holds `said`, and keeps the old file.
#[track_caller]
fn refused(url: &str, extra: &[&str], said: &str) {
    let (run, kept) = fetch(url, extra);
    let err = run.error();
    assert!(err.contains(said), "{err}");
    assert_eq!(kept, "kept", "the old file stays whole");
}

#[test]
fn a_good_stand_in_is_fetched_whole() {
    let url = stand_in(|_| ok(&csv(&ROWS)));
    let (run, kept) = fetch(&url, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(kept, csv(&ROWS));
}

#[test]
fn an_html_page_garbage_or_a_gzip_bomb_is_not_the_csv_asked_for() {
    let url = stand_in(|_| ok("<!DOCTYPE html>\n<html><body>Down for maintenance</body></html>\n"));
    refused(&url, &[], r#"the answer is not the CSV asked for: it begins "<!DOCTYPE html>""#);
    refused(&url, &["--format", "geojson"], "the answer is not the GeoJSON asked for: line 1");
    let url = stand_in(|_| {
        let garbage: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let head = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5000\r\n\r\n";
        [head.as_bytes(), &garbage].concat()
    });
    refused(&url, &[], "the answer is not the CSV asked for");
    // gzip of zeros, sent whatever was asked: read as the bytes it is, never inflated.
    let url = stand_in(|_| {
        let bomb = [&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3][..], &[0; 1000]].concat();
        let head = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Encoding: gzip\r\nContent-Length: 1010\r\n\r\n";
        [head.as_bytes(), &bomb].concat()
    });
    refused(&url, &[], "the answer is not the CSV asked for");
}

#[test]
fn an_answer_cut_short_or_other_than_counted_is_refused() {
    // The connection closes after two rows: with no length, the count tells; with one, the read.
    let url = stand_in(|_| {
        format!("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}", csv(&ROWS[..2])).into_bytes()
    });
    refused(
        &url,
        &[],
        "the service counted 5 events in the span and sent 2: the answer was cut short",
    );
    let url = stand_in(|_| {
        let body = csv(&ROWS[..2]);
        format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 10737418240\r\n\r\n{body}")
            .into_bytes()
    });
    refused(&url, &[], "the answer was cut");
    // A row cut in its middle.
    let url = stand_in(|_| ok(&format!("{HEADER}\n{}\n2025-01-01T06:00", ROWS[..4].join("\n"))));
    refused(&url, &[], "line 6 of the answer: 1 fields, where the header has 5");
}

#[test]
fn rows_outside_the_span_out_of_order_or_repeated_are_refused() {
    let url = stand_in(|_| ok(&csv(&[ROWS[0], "2024-12-31T23:00:00.000Z,1,2,10,5.0"])));
    refused(
        &url,
        &[],
        "line 3 of the answer: 2024-12-31T23:00:00Z is outside the span asked for, 2025-01-01T00:00:00.000 to 2025-01-02T00:00:00.000",
    );
    let url = stand_in(|_| ok(&csv(&[ROWS[1], ROWS[0], ROWS[2], ROWS[3], ROWS[4]])));
    refused(&url, &[], "line 3 of the answer: 2025-01-01T01:00:00Z comes before the row above it");
    let url = stand_in(|_| ok(&csv(&[ROWS[0], ROWS[1], ROWS[1], ROWS[2], ROWS[3]])));
    refused(
        &url,
        &[],
        "line 4 of the answer: the row at 2025-01-01T02:00:00Z repeats one before it",
    );
    let url =
        stand_in(|_| ok(&csv(&[ROWS[0], "2025-01-01 02:00,1,2,10,5", ROWS[2], ROWS[3], ROWS[4]])));
    refused(&url, &[], r#"line 3 of the answer: the time "2025-01-01 02:00" is not RFC 3339"#);
}

#[test]
fn redirects_are_followed_within_the_origin_only_unless_asked() {
    let good = stand_in(|_| ok(&csv(&ROWS)));
    let elsewhere = good.clone();
    let url = stand_in(move |target| {
        let to = if target.starts_with("/moved/") {
            return ok(&csv(&ROWS));
        } else if target.contains("format=") && !target.contains("away") {
            // Within the origin: a path of its own.
            format!("/moved{target}&away=no")
        } else {
            format!("{elsewhere}/query?x=1")
        };
        format!(
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes()
    });
    let (run, kept) = fetch(&url, &[]);
    assert_eq!((run.code, kept), (0, csv(&ROWS)), "{}", run.stderr);
    // To another port: refused, unless asked.
    let url = stand_in(move |_| {
        format!("HTTP/1.1 301 Moved\r\nLocation: {good}/query?format=csv\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").into_bytes()
    });
    refused(&url, &[], "another host or port; --follow-redirects follows it");
    let (run, kept) = fetch(&url, &["--follow-redirects"]);
    assert_eq!((run.code, kept), (0, csv(&ROWS)), "{}", run.stderr);
}
