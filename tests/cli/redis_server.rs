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
    /// Starts a server. The tests that do are `#[ignore = "needs redis-server"]`: asked for
    /// them (`--include-ignored`, as `.ci/run` does), a missing `redis-server` fails the
    /// test, never skips it.
    pub fn start() -> RedisServer {
        installed("redis-server");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        RedisServer::start_on(port, &[])
    }

    /// Starts a server on `port`, with more arguments.
    fn start_on(port: u16, more: &[&str]) -> RedisServer {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no"])
            .args(more)
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
        server
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

    /// Stops the server by its PID and starts a fresh one on the same port: a restart, its
    /// keys and scripts gone.
    pub fn restart(&mut self) {
        self.kill();
        // The old one, stopped already, is dropped here.
        *self = RedisServer::start_on(self.port, &[]);
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

/// Fails the test unless `program` runs: `.ci/run` installs redis-server, and redis-cli
/// with it.
fn installed(program: &str) {
    let found = Command::new(program).arg("--version").stdout(Stdio::null()).status();
    assert!(found.is_ok(), "{program} is missing: this test needs Redis 7 (Debian: redis-server)");
}

/// A Redis Cluster of the test's own: three masters, no replicas, on free loopback ports
/// whose cluster bus ports (each port + 10000) are free too; stopped by PID when dropped.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    _dir: tempfile::TempDir,
}

impl RedisCluster {
    /// Starts three nodes, joins them with `redis-cli --cluster create`, and waits until
    /// every node says `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        installed("redis-server");
        installed("redis-cli");
        let dir = tempfile::tempdir().unwrap();
        let mut nodes = Vec::new();
        for port in free_ports(3) {
            let conf = dir.path().join(format!("nodes-{port}.conf"));
            let conf = conf.to_str().unwrap();
            let dir = dir.path().to_str().unwrap();
            let cluster = ["--cluster-enabled", "yes", "--cluster-config-file", conf, "--dir", dir];
            nodes.push(RedisServer::start_on(port, &cluster));
        }
        let addrs: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let mut create = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // It waits for the nodes to join for as long as it takes: a node that died would
        // hold the test for ever.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let created = loop {
            if let Some(status) = create.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = create.kill();
                panic!("redis-cli --cluster create took over 30 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(created.success(), "redis-cli --cluster create failed");
        let cluster = RedisCluster { nodes, _dir: dir };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !cluster.nodes.iter().all(|n| n.cluster_state() == "ok") {
            assert!(std::time::Instant::now() < deadline, "the cluster did not come up");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        cluster
    }

    /// Returns the URL of node `i`.
    pub fn url(&self, i: usize) -> String {
        self.nodes[i].url()
    }
}

impl RedisServer {
    /// Returns what `CLUSTER INFO` says of `cluster_state`, or "" if it cannot be read.
    pub fn cluster_state(&self) -> String {
        let info: Option<String> = self
            .connection()
            .and_then(|mut con| redis::cmd("CLUSTER").arg("INFO").query(&mut con).ok());
        let info = info.unwrap_or_default();
        let state = info.lines().find_map(|l| l.strip_prefix("cluster_state:"));
        state.unwrap_or_default().trim().to_owned()
    }
}

/// The next port to try, shared by the tests of one process: two clusters started at once
/// (the tests run on threads) never try the same ports, and so never both find one free
/// before either binds it. It starts at a place spread by process, so that concurrent test
/// runs rarely meet.
static NEXT_PORT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Returns `count` loopback ports that are free, each with its port + 10000 free too.
pub fn free_ports(count: usize) -> Vec<u16> {
    use std::sync::atomic::Ordering;
    let free = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
    // Ports 10000 to 21999, their bus ports 20000 to 31999: below the ephemeral ports the
    // system hands out (32768 and up), which single servers and clients take.
    let spread = std::process::id() % 12_000;
    let _ = NEXT_PORT.compare_exchange(0, spread, Ordering::SeqCst, Ordering::SeqCst);
    let mut ports = Vec::new();
    while ports.len() < count {
        let port =
            10_000 + u16::try_from(NEXT_PORT.fetch_add(1, Ordering::SeqCst) % 12_000).unwrap();
        if free(port) && free(port + 10_000) {
            ports.push(port);
        }
    }
    ports
}
