//! A small harness: run the binary with arguments and stdin, and read what it wrote.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// What a run of `ratelimit` wrote and how it exited.
#[derive(Debug)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Run {
    /// Asserts success and returns stdout.
    #[track_caller]
    pub fn ok(self) -> String {
        assert_eq!(self.code, 0, "expected success; stderr: {}", self.stderr);
        self.stdout
    }

    /// Asserts failure with exit code 2, nothing on stdout, and exactly one line on
    /// stderr; returns that line.
    #[track_caller]
    pub fn error(self) -> String {
        assert_eq!(self.code, 2, "expected exit code 2; stdout: {}", self.stdout);
        assert_eq!(self.stdout, "", "an error must not write data");
        assert_eq!(self.stderr.lines().count(), 1, "one line on stderr: {:?}", self.stderr);
        assert!(self.stderr.starts_with("ratelimit: "), "{}", self.stderr);
        self.stderr.trim_end().to_owned()
    }
}

/// Where the stdin of a run comes from.
#[derive(Clone)]
pub enum Stdin<'a> {
    /// Nothing: /dev/null.
    Null,
    /// This text, through a pipe.
    Pipe(&'a str),
    /// These bytes, through a pipe.
    Bytes(&'a [u8]),
    /// A file, redirected as `< file` would.
    File(PathBuf),
}

/// Returns a command that runs `ratelimit`, with the environment tests expect.
pub fn command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratelimit"));
    cmd.env_remove("NO_COLOR").env_remove("CLICOLOR").env_remove("CLICOLOR_FORCE").env_remove("CI");
    cmd
}

/// Returns a command that runs `ratelimit` as a user other than root: as `nobody`, through
/// `setpriv`, when the tests run as root (as CI does), so that permissions apply.
pub fn command_unprivileged() -> Command {
    if !is_root() {
        return command();
    }
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    cmd.arg(env!("CARGO_BIN_EXE_ratelimit"));
    cmd.env_remove("NO_COLOR").env_remove("CLICOLOR").env_remove("CLICOLOR_FORCE").env_remove("CI");
    cmd
}

/// Returns true if the tests run as root.
pub fn is_root() -> bool {
    let id = Command::new("id").arg("-u").output().expect("id runs");
    String::from_utf8_lossy(&id.stdout).trim() == "0"
}

/// Returns the output of a finished command as a [`Run`].
pub fn finished(out: std::process::Output) -> Run {
    Run {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Runs `ratelimit` with `args` and `stdin`.
pub fn run_with(args: &[&str], stdin: Stdin) -> Run {
    let mut cmd = command();
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = match &stdin {
        Stdin::Null => cmd.stdin(Stdio::null()).spawn(),
        Stdin::Pipe(_) | Stdin::Bytes(_) => cmd.stdin(Stdio::piped()).spawn(),
        Stdin::File(path) => cmd.stdin(File::open(path).unwrap()).spawn(),
    }
    .unwrap();
    let bytes = match stdin {
        Stdin::Pipe(text) => Some(text.as_bytes()),
        Stdin::Bytes(bytes) => Some(bytes),
        Stdin::Null | Stdin::File(_) => None,
    };
    if let Some(bytes) = bytes {
        use std::io::Write;
        // The program may stop reading early on an error; that is not the test's concern.
        let _ = child.stdin.take().unwrap().write_all(bytes);
    }
    finished(child.wait_with_output().unwrap())
}

/// Runs `ratelimit` with `args`, piping `stdin` to it.
pub fn run(args: &[&str], stdin: &str) -> Run {
    run_with(args, Stdin::Pipe(stdin))
}

/// A file in a temporary directory of its own, removed with it when dropped. It reads as
/// the file's path.
pub struct TempFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::path::Path> for TempFile {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}

/// Writes `text` to a file named `name` in a fresh temporary directory, removed when the
/// returned value is dropped.
pub fn temp_file(name: &str, text: &str) -> TempFile {
    let dir = tempfile::Builder::new().prefix("ratelimit-test-").tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    TempFile { _dir: dir, path }
}

/// Returns the path of a real catalog in `../shared/data` (or `$RATELIMIT_DATA`). The
/// tests that read one are `#[ignore = "needs ../shared/data"]`: asked for them
/// (`--include-ignored`, as `.ci/run` does), a missing catalog fails the test, never skips it.
pub fn real_catalog(name: &str) -> PathBuf {
    let dir = std::env::var_os("RATELIMIT_DATA").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("shared").join("data")
    });
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is missing: this test needs the real catalogs beside the clone (or $RATELIMIT_DATA)",
        path.display()
    );
    path
}

/// Parses JSON output.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

pub use crate::redis_server::{RedisCluster, RedisServer};

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}
