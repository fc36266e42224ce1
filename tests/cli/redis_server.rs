//! A `redis-server` of a test's own, on a free loopback port, stopped by its PID when dropped.
//! The CLI tests and the library's unit tests share this file.

// Each of the two users of this file uses only part of it.
#![allow(dead_code)]

use std::process::{Command, Stdio};

/// A `redis-server` of the test's own on a free loopback port, stopped when dropped.
pub struct RedisServer {
    child: std::process::Child,
    pub port: u16,
}

impl RedisServer {
    /// Starts a server, or returns `None` if `redis-server` is not installed. With `CI` set,
    /// a missing server fails the test instead: `.ci/run` installs it.
    pub fn start() -> Option<RedisServer> {
        let found = Command::new("redis-server").arg("--version").stdout(Stdio::null()).status();
        if found.is_err() {
            if std::env::var_os("CI").is_some() {
                panic!("redis-server is missing, and CI is set: the Redis tests must run");
            }
            eprintln!("skipped: redis-server is not installed");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = RedisServer { child, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while server.connection().is_none() {
            assert!(std::time::Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(server)
    }

    /// Returns the server's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Returns a connection, if the server answers.
    pub fn connection(&self) -> Option<redis::Connection> {
        let mut con = redis::Client::open(self.url()).ok()?.get_connection().ok()?;
        redis::cmd("PING").query::<String>(&mut con).ok()?;
        Some(con)
    }

    /// Sends the server a signal, such as `-STOP` or `-CONT`.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
    }

    /// Stops the server now.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
