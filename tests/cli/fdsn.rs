//! A stand-in for the USGS FDSN event service, which this machine cannot reach: the subset
//! `fetch` uses (`query` and `count`, by time and magnitude, oldest first, CSV or GeoJSON)
//! over a catalog file, with a limit answered 400 as USGS answers it, and one 429.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use chrono::NaiveDateTime;

use crate::real_data::ms;

/// What the stand-in serves, and how.
pub struct Fdsn {
    /// The base URL, like `http://127.0.0.1:PORT/fdsnws/event/1`.
    pub url: String,
    requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    port: u16,
    thread: Option<JoinHandle<()>>,
}

struct Catalog {
    header: String,
    /// Each row's time in ms, its magnitude, and its text.
    rows: Vec<(i64, f64, String)>,
    limit: usize,
    counts: bool,
}

impl Fdsn {
    /// Serves the catalog at `path` with at most `limit` events an answer; `counts` says
    /// whether it has the count method. Its first answer is a 429 with Retry-After: 1.
    pub fn start(path: &Path, limit: usize, counts: bool) -> Fdsn {
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().to_owned();
        let rows = lines
            .map(|line| {
                let fields: Vec<&str> = line.split(',').collect();
                (ms(fields[0]), fields[4].parse().unwrap(), line.to_owned())
            })
            .collect();
        let catalog = Arc::new(Catalog { header, rows, limit, counts });
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (requests, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (seen, stopped) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
                let _ = answer(stream, &catalog, first);
            }
        });
        Fdsn {
            url: format!("http://127.0.0.1:{port}/fdsnws/event/1"),
            requests,
            stop,
            port,
            thread: Some(thread),
        }
    }

    /// Returns how many requests it has had.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Fdsn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // One more connection wakes the accepting thread, which then sees the stop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn answer(mut stream: TcpStream, catalog: &Catalog, first: bool) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // The headers, up to the blank line.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let target = request.split(' ').nth(1).unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let param = |name: &str| {
        query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')).unwrap_or("")
    };
    let reply = |status: &str, extra: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
            body.len()
        )
    };
    let time = |text: &str| {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
            .unwrap()
            .and_utc()
            .timestamp_millis()
    };
    let response = if first {
        reply("429 Too Many Requests", "Retry-After: 1\r\n", "Too many requests\n")
    } else {
        let (start, end) = (time(param("starttime")), time(param("endtime")));
        let min: f64 = param("minmagnitude").parse().unwrap_or(f64::MIN);
        // FDSN times are inclusive at both ends.
        let matched: Vec<&(i64, f64, String)> =
            catalog.rows.iter().filter(|(t, m, _)| *t >= start && *t <= end && *m >= min).collect();
        match path.rsplit('/').next() {
            Some("count") if catalog.counts => reply("200 OK", "", &format!("{}\n", matched.len())),
            Some("query") if matched.len() > catalog.limit => reply(
                "400 Bad Request",
                "",
                &format!(
                    "Error 400: Bad Request\n\n{} matching events exceeds search limit of {}. \
                     Modify the search to match fewer events.\n",
                    matched.len(),
                    catalog.limit
                ),
            ),
            Some("query") if param("format") == "geojson" => {
                let features: Vec<String> = matched
                    .iter()
                    .map(|(t, m, row)| {
                        let id = row.split(',').nth(11).unwrap();
                        let net = row.split(',').nth(10).unwrap();
                        format!(
                            "{{\"type\":\"Feature\",\"properties\":{{\"mag\":{m},\"time\":{t},\"net\":\"{net}\"}},\"id\":\"{id}\"}}"
                        )
                    })
                    .collect();
                let body = format!(
                    "{{\"type\":\"FeatureCollection\",\"metadata\":{{\"count\":{}}},\"features\":[{}]}}",
                    features.len(),
                    features.join(",")
                );
                reply("200 OK", "", &body)
            }
            Some("query") => {
                let mut body = format!("{}\n", catalog.header);
                for (_, _, row) in matched {
                    body.push_str(row);
                    body.push('\n');
                }
                reply("200 OK", "", &body)
            }
            _ => reply("404 Not Found", "", "Error 404: Not Found\n"),
        }
    };
    stream.write_all(response.as_bytes())
}
