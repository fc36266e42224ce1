//! The synthetic request log as nginx writes it: the combined log format, with `$msec` and
//! `$request_time` after it, so that each request's time is known to the millisecond.

use std::io::{self, Write};

use super::requests::{Client, ROUTES, Request};
#[cfg(doc)]
use crate::input::log_format::TIMED_COMBINED;

/// How long each of [`ROUTES`] takes to answer, in milliseconds, and how many bytes its
/// answer has: fixed, so that the log is a function of the requests.
const SERVED: [(i64, u32); 6] = [(2, 612), (15, 4_210), (8, 933), (31, 148), (1, 88_301), (54, 77)];

/// Writes requests as an nginx access log in the layout [`TIMED_COMBINED`], which the
/// readers know by its first line, streaming: a person's client
/// rank r comes from `10.a.b.c` (r in the low 24 bits), a bot n from `192.0.2.n`, and a
/// request's `$msec` is its arrival plus its route's time to answer.
pub fn write_access_log(
    requests: impl IntoIterator<Item = Request>,
    out: &mut dyn Write,
) -> io::Result<()> {
    super::write_rows(out, b"", requests, |line, request| {
        let (served_ms, bytes) = SERVED[request.route];
        let (method, path, _) = ROUTES[request.route];
        let (address, agent) = match request.client {
            Client::Person(rank) => {
                let [_, a, b, c] = u32::try_from(rank & 0xFF_FFFF).unwrap_or(0).to_be_bytes();
                (format!("10.{a}.{b}.{c}"), "Mozilla/5.0 (X11; Linux x86_64)")
            }
            Client::Bot(n) => (format!("192.0.2.{}", n % 256), "python-requests/2.32.3"),
        };
        let done_ms = request.time.as_micros() / 1000 + served_ms;
        let local = chrono::DateTime::from_timestamp_millis(done_ms).unwrap_or_default();
        let _ = writeln!(
            line,
            "{address} - - [{}] \"{method} {path} HTTP/1.1\" {} {bytes} \"-\" \"{agent}\" {}.{:03} {}.{:03}",
            local.format("%d/%b/%Y:%H:%M:%S +0000"),
            request.status,
            done_ms.div_euclid(1000),
            done_ms.rem_euclid(1000),
            served_ms / 1000,
            served_ms % 1000,
        );
    })
}
