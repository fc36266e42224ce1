//! A real server on loopback whose clock is libfaketime's, frozen at the time in a file that
//! is replaced before each request: how the nginx and HAProxy models meet the real thing.
//!
//! libfaketime reads the absolute time in the file through a double, so the millisecond is
//! written with half a millisecond more; it fakes the monotonic clock too, which nginx's
//! `limit_req` and HAProxy's `now_ms` read.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_server::free_ports;

const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// A server and its faked clock; stopped when dropped.
pub struct FakedServer {
    child: Child,
    port: u16,
    clock: PathBuf,
    _dir: tempfile::TempDir,
}

impl FakedServer {
    /// Writes `config(dir, port)` to `dir/config`, starts `program` with `args(dir)` and
    /// libfaketime, its clock at 2020-01-01, and waits until it listens on `port`.
    pub fn start(
        program: &str,
        config: impl FnOnce(&Path, u16) -> String,
        args: impl FnOnce(&Path) -> Vec<String>,
    ) -> FakedServer {
        FakedServer::start_at(program, config, args, 1_577_836_800_000_000)
    }

    /// As [`FakedServer::start`], the clock at `micros` (µs since the epoch).
    pub fn start_at(
        program: &str,
        config: impl FnOnce(&Path, u16) -> String,
        args: impl FnOnce(&Path) -> Vec<String>,
        micros: i64,
    ) -> FakedServer {
        for needed in [program, FAKETIME] {
            assert!(Path::new(needed).exists(), "{needed} is missing: install it (see .ci/run)");
        }
        let dir = tempfile::Builder::new().prefix("ratelimit-faked-").tempdir().unwrap();
        let port = free_ports(1)[0];
        std::fs::write(dir.path().join("config"), config(dir.path(), port)).unwrap();
        let clock = dir.path().join("clock");
        set_clock(&clock, micros);
        let child = Command::new(program)
            .args(args(dir.path()))
            .env("TZ", "UTC")
            .env("LD_PRELOAD", FAKETIME)
            .env("FAKETIME_TIMESTAMP_FILE", &clock)
            .env("FAKETIME_NO_CACHE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = FakedServer { child, port, clock, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{program} did not listen on {port}");
            std::thread::sleep(Duration::from_millis(10));
        }
        server
    }

    /// The directory the server's files (its config, its logs) are in.
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// Sends `GET PATH?k=KEY` (no query for an empty key) at `micros` (µs since the epoch) on a new connection and
    /// returns whether the server answered 200 (else 503 or 429, a refusal).
    pub fn request(&self, micros: i64, path: &str, key: &str) -> bool {
        let answer = self.answer(micros, path, key);
        match answer.get(9..12) {
            Some("200") => true,
            Some("503" | "429") => false,
            _ => panic!("the server answered {answer:?}"),
        }
    }

    /// Sends `GET PATH?k=KEY` as [`FakedServer::request`] does, and returns the answer.
    pub fn answer(&self, micros: i64, path: &str, key: &str) -> String {
        set_clock(&self.clock, micros);
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let query = if key.is_empty() { String::new() } else { format!("?k={key}") };
        stream.write_all(format!("GET {path}{query} HTTP/1.0\r\n\r\n").as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }
}

/// Replaces the clock file at once with `micros`, to the millisecond (and half of one more,
/// for libfaketime's double).
fn set_clock(clock: &Path, micros: i64) {
    let time = chrono::DateTime::from_timestamp_micros(micros).unwrap();
    let next = clock.with_extension("next");
    std::fs::write(&next, format!("{}5\n", time.format("%Y-%m-%d %H:%M:%S%.3f"))).unwrap();
    std::fs::rename(&next, clock).unwrap();
}

impl Drop for FakedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
