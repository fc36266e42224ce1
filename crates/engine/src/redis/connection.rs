//! A connection to Redis on which every wait has a deadline, and every failure one line.
//!
//! The redis crate packs commands and parses replies; this module owns the socket, so that a
//! whole round trip — one command, or a pipeline of thousands — must finish within one
//! timeout. (The crate's own connection waits its timeout once per reply, and keeps reading
//! after one times out: 512 replies from a stopped server took 512 timeouts.)

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use redis::{ConnectionAddr, IntoConnectionInfo, Parser, Value};

use crate::units::time::human_duration;
use ratelimit_input::message::{io_reason, one_line};

/// The longest a connection, with its handshake, may take: the bound README states.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A connection to a Redis server.
pub struct Redis {
    url: String,
    socket: Socket,
    parser: Parser,
    timeout: Duration,
    cluster: bool,
    /// The sends made so far: each one's number.
    sends: u64,
    /// The send whose replies are still to be read, and how many it has.
    owed: Option<(u64, usize)>,
    /// Whether a read failed part way, so that where the next reply starts is unknown.
    lost: bool,
}

/// A send whose replies are still to be read: only [`Redis::receive`] with it reads them.
/// Dropped unread, its replies are read and thrown away before the next send, so that they
/// can never be taken for another's.
#[must_use = "the replies must be read with Redis::receive"]
#[derive(Debug)]
pub struct Ticket {
    number: u64,
}

impl Redis {
    /// Connects to the server at `url`, authenticates and selects the database the URL
    /// names, and checks that it is Redis 7 or later, all within `CONNECT_TIMEOUT` (or
    /// `timeout`, if shorter). Every later round trip must finish within `timeout`.
    pub fn connect(url: &str, timeout: Duration) -> Result<Redis> {
        let info = url.into_connection_info().map_err(|e| {
            let reason = e.detail().unwrap_or("not a redis:// URL").to_owned();
            anyhow!("{url} is not a Redis URL: {}", one_line(&reason))
        })?;
        let budget = CONNECT_TIMEOUT.min(timeout);
        let deadline = Instant::now() + budget;
        let stream = Stream::open(info.addr(), deadline)
            .map_err(|e| explain(url, budget, &e, "cannot reach Redis at"))?;
        let mut redis = Redis {
            url: url.to_owned(),
            socket: Socket { stream, deadline, failure: None },
            parser: Parser::new(),
            timeout: budget,
            cluster: false,
            sends: 0,
            owed: None,
            lost: false,
        };
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
            redis.expect_ok(&auth, "AUTH")?;
        }
        if settings.db() != 0 {
            redis.expect_ok(redis::cmd("SELECT").arg(settings.db()), "SELECT")?;
        }
        let info = redis.info("server")?;
        check_version(&info).map_err(|e| anyhow!("Redis at {url} {e}"))?;
        redis.cluster = redis.info("cluster")?.lines().any(|l| l.trim() == "cluster_enabled:1");
        redis.timeout = timeout;
        Ok(redis)
    }

    /// Returns the text of one section of `INFO`.
    fn info(&mut self, section: &str) -> Result<String> {
        match self.call(redis::cmd("INFO").arg(section))? {
            Value::BulkString(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Value::VerbatimString { text, .. } => Ok(text),
            other => bail!("Redis at {} gave an unexpected reply to INFO: {other:?}", self.url),
        }
    }

    /// Whether a send or a read failed part way: where the next reply starts is unknown,
    /// and the connection serves no more calls.
    pub fn lost(&self) -> bool {
        self.lost
    }

    /// Returns true if the server is a node of a Redis Cluster (`cluster_enabled:1`).
    pub fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// Returns the URL, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends one command and returns its reply; a server error is an error.
    pub fn call(&mut self, cmd: &redis::Cmd) -> Result<Value> {
        let reply = self.round_trip(&cmd.get_packed_command(), 1)?.pop().unwrap_or(Value::Nil);
        match reply {
            Value::ServerError(e) => Err(anyhow!("Redis at {}: {}", self.url, server_error(&e))),
            reply => Ok(reply),
        }
    }

    fn expect_ok(&mut self, cmd: &redis::Cmd, name: &str) -> Result<()> {
        match self.round_trip(&cmd.get_packed_command(), 1)?.pop() {
            Some(Value::Okay) => Ok(()),
            Some(Value::ServerError(e)) => {
                bail!("Redis at {} refused {name}: {}", self.url, server_error(&e))
            }
            other => bail!("Redis at {} gave an unexpected reply to {name}: {other:?}", self.url),
        }
    }

    /// Sends `count` packed commands at once and returns their replies, server errors
    /// among them as values. The whole exchange must finish within the timeout; if it
    /// does not, or the connection fails, the error says so and names the URL.
    pub fn round_trip(&mut self, packed: &[u8], count: usize) -> Result<Vec<Value>> {
        let ticket = self.send(packed, count)?;
        self.receive(ticket)
    }

    /// Sends `count` packed commands, and starts the time their replies must come within.
    /// Replies still owed to an earlier send whose ticket was dropped are read first, and
    /// thrown away: a connection has one send in flight, and answers only its own.
    pub fn send(&mut self, packed: &[u8], count: usize) -> Result<Ticket> {
        self.drain()?;
        self.socket.deadline = Instant::now() + self.timeout;
        self.socket.failure = None;
        let sent = self.socket.write_all(packed).and_then(|()| self.socket.flush());
        if let Err(e) = sent {
            self.lost = true;
            return Err(explain(&self.url, self.timeout, &e, "lost the connection to Redis at"));
        }
        self.sends += 1;
        self.owed = Some((self.sends, count));
        Ok(Ticket { number: self.sends })
    }

    /// Reads the replies to the send of `ticket`, by the time it set.
    pub fn receive(&mut self, ticket: Ticket) -> Result<Vec<Value>> {
        match self.owed {
            Some((number, count)) if number == ticket.number => self.read(count),
            // A ticket outlives its replies only if a send came between: not done here.
            _ => bail!("Redis at {}: replies were asked for a send no longer awaited", self.url),
        }
    }

    /// Reads and throws away the replies owed to a send whose ticket was dropped, within
    /// the timeout, as when a replay gives up a pass with a batch in flight.
    fn drain(&mut self) -> Result<()> {
        if self.lost {
            bail!("lost the connection to Redis at {} part way through a reply", self.url);
        }
        if let Some((_, count)) = self.owed {
            self.socket.deadline = Instant::now() + self.timeout;
            self.read(count)?;
        }
        Ok(())
    }

    /// Reads the `count` replies owed, by the deadline set.
    fn read(&mut self, count: usize) -> Result<Vec<Value>> {
        // Until all are read, where the next reply starts is unknown.
        self.owed = None;
        self.lost = true;
        let mut replies = Vec::with_capacity(count);
        for _ in 0..count {
            match self.parser.parse_value(&mut self.socket) {
                Ok(value) => replies.push(value),
                Err(e) => return Err(self.read_failure(&e)),
            }
        }
        self.lost = false;
        Ok(replies)
    }

    /// Says why a reply could not be read: the socket's own failure if it had one, else
    /// the bytes were not Redis's protocol.
    fn read_failure(&self, err: &redis::RedisError) -> anyhow::Error {
        match &self.socket.failure {
            Some(e) => explain(&self.url, self.timeout, e, "lost the connection to Redis at"),
            None if err.kind() == redis::ErrorKind::Parse => {
                anyhow!("{} answered, but not as a Redis server does", self.url)
            }
            None => anyhow!("Redis at {}: {}", self.url, one_line(&err.to_string())),
        }
    }
}

/// Turns a socket error into one line: a timeout as the bound that ran out, a closed
/// connection as that, anything else with `what` and the reason.
fn explain(url: &str, timeout: Duration, err: &io::Error, what: &str) -> anyhow::Error {
    let micros = i64::try_from(timeout.as_micros()).unwrap_or(i64::MAX);
    match err.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            anyhow!("Redis at {url} did not answer within {}", human_duration(micros))
        }
        io::ErrorKind::UnexpectedEof => anyhow!("Redis at {url} closed the connection"),
        _ => anyhow!("{what} {url}: {}", io_reason(err)),
    }
}

/// A server error as Redis wrote it: its code and detail.
fn server_error(err: &redis::ServerError) -> String {
    one_line(&format!("{} {}", err.code(), err.details().unwrap_or_default()))
}

/// Accepts Redis 7 or later, from the text of `INFO server`.
pub(super) fn check_version(info: &str) -> Result<()> {
    let version = info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .map(str::trim)
        .ok_or_else(|| anyhow!("does not say its version"))?;
    let major: u32 = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < 7 {
        bail!("is version {version}; ratelimit needs Redis 7.0 or later (for PEXPIRE ... NX)");
    }
    Ok(())
}

/// A TCP or Unix socket.
enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

impl Stream {
    /// Connects to `addr` by `deadline`.
    fn open(addr: &ConnectionAddr, deadline: Instant) -> io::Result<Stream> {
        match addr {
            ConnectionAddr::Tcp(host, port) => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address found");
                for addr in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&addr, left(deadline)?) {
                        Ok(stream) => {
                            // Commands are small and each waits for a reply.
                            stream.set_nodelay(true)?;
                            return Ok(Stream::Tcp(stream));
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path)?)),
            _ => Err(io::Error::new(io::ErrorKind::Unsupported, "TLS is not built in")),
        }
    }
}

/// The time left until `deadline`, or a timeout if none is.
fn left(deadline: Instant) -> io::Result<Duration> {
    match deadline.checked_duration_since(Instant::now()) {
        Some(left) if !left.is_zero() => Ok(left),
        _ => Err(io::Error::from(io::ErrorKind::TimedOut)),
    }
}

/// A socket whose every read and write ends by the deadline; it keeps the first failure,
/// which the parser's error would hide.
struct Socket {
    stream: Stream,
    deadline: Instant,
    failure: Option<io::Error>,
}

impl Socket {
    fn keep<T>(&mut self, result: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &result
            && self.failure.is_none()
        {
            self.failure = Some(io::Error::new(e.kind(), e.to_string()));
        }
        result
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let result = loop {
            let read = left(self.deadline).and_then(|left| match &mut self.stream {
                Stream::Tcp(s) => s.set_read_timeout(Some(left)).and_then(|()| s.read(buf)),
                #[cfg(unix)]
                Stream::Unix(s) => s.set_read_timeout(Some(left)).and_then(|()| s.read(buf)),
            });
            // A signal (filter's SIGINT) interrupts a read; the reply is still to come, and
            // the deadline still bounds the wait.
            match read {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        // The parser takes an end of input for a short reply; it is a closed connection.
        let result = match result {
            Ok(0) if !buf.is_empty() => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            other => other,
        };
        self.keep(result)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = left(self.deadline).and_then(|left| match &mut self.stream {
            Stream::Tcp(s) => s.set_write_timeout(Some(left)).and_then(|()| s.write(buf)),
            #[cfg(unix)]
            Stream::Unix(s) => s.set_write_timeout(Some(left)).and_then(|()| s.write(buf)),
        });
        self.keep(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_6_is_refused() {
        let info = "# Server\r\nredis_version:6.2.6\r\nredis_mode:standalone\r\n";
        let err = check_version(info).unwrap_err().to_string();
        assert_eq!(
            err,
            "is version 6.2.6; ratelimit needs Redis 7.0 or later (for PEXPIRE ... NX)"
        );
        assert!(check_version("redis_version:7.0.15\r\n").is_ok());
        assert!(check_version("redis_version:8.2.1\r\n").is_ok());
        assert!(check_version("no version here").is_err());
    }
}
