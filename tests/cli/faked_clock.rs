//! A real server on loopback whose clock is libfaketime's, frozen at the time in a file that
//! is replaced before each request: how the nginx and HAProxy models meet the real thing.
//!
//! libfaketime reads the absolute time in the file through a double, so the millisecond is
//! written with half a millisecond more; it fakes the monotonic clock too, which nginx's
//! `limit_req` and HAProxy's `now_ms` read.
//!
//! The server may arm no POSIX timer (see [`refuse_signal_timers`]): libfaketime is not safe
//! in a signal handler, and HAProxy's watchdog reads a clock in one.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
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
        let mut command = Command::new(program);
        // SAFETY: the hook makes two system calls on values it owns, nothing that allocates
        // or locks, as a child between fork and exec must.
        unsafe { command.pre_exec(refuse_signal_timers) };
        let child = command
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

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
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
        if let Err(err) = stream.read_to_string(&mut answer) {
            panic!(
                "no whole answer to {path}?k={key} at {micros} µs within 5 s ({err}): {answer:?}"
            );
        }
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

/// Makes `timer_create` fail with `EPERM` in this process and what it runs (a seccomp filter).
///
/// HAProxy's watchdog is a timer on the thread's CPU clock whose signal handler reads that
/// clock. libfaketime fakes such a clock too, and with `FAKETIME_NO_CACHE` it reads its file
/// with `fopen` on every call, in the handler as well: a signal that lands inside `malloc`
/// deadlocks the server on the allocator's lock (seen in `gdb`: `wdt_handler`,
/// `now_cpu_time_thread`, `read_config_file`, `malloc`, under `lua_newthread`'s `malloc`).
/// Refused its timers, HAProxy warns and runs without its watchdog, which decides nothing.
fn refuse_signal_timers() -> std::io::Result<()> {
    // `AUDIT_ARCH_X86_64`: system call numbers are the arch's own, so other arches pass.
    const X86_64: u32 = 0xc000_003e;
    let nr = u32::try_from(libc::SYS_timer_create).unwrap_or(u32::MAX);
    let refuse = libc::SECCOMP_RET_ERRNO | u32::try_from(libc::EPERM).unwrap_or(1);
    // An opcode or a length that did not fit would make a program the kernel refuses.
    let code = |bits: u32| u16::try_from(bits).unwrap_or(u16::MAX);
    let load = code(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS);
    let equal = code(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K);
    let ret = code(libc::BPF_RET | libc::BPF_K);
    // SAFETY: BPF_STMT and BPF_JUMP only build the structs.
    let program = unsafe {
        [
            libc::BPF_STMT(load, 4), // seccomp_data.arch
            libc::BPF_JUMP(equal, X86_64, 0, 2),
            libc::BPF_STMT(load, 0), // seccomp_data.nr
            libc::BPF_JUMP(equal, nr, 1, 0),
            libc::BPF_STMT(ret, libc::SECCOMP_RET_ALLOW),
            libc::BPF_STMT(ret, refuse),
        ]
    };
    let len = u16::try_from(program.len()).unwrap_or(0);
    let filter = libc::sock_fprog { len, filter: program.as_ptr().cast_mut() };
    // SAFETY: prctl with these options reads only `filter`, which outlives the calls.
    let failed = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &filter) != 0
    };
    if failed { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

impl Drop for FakedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
