//! Inputs that cannot be rewound — pipes, FIFOs, `<(...)`, `/dev/stdin` — are read once,
//! as standard input is, with the same results as the file itself.

use std::fs;
use std::process::{Command, Stdio};

use crate::QUAKES;
use crate::harness::{Stdin, command, finished, json, run_with};

/// Runs a command whose input is a FIFO fed by another thread, as `<(...)` gives.
fn through_fifo(args: &[&str]) -> crate::harness::Run {
    let dir = tempfile::Builder::new().prefix("ratelimit-test-").tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::write(fifo, QUAKES).unwrap())
    };
    let out = command().args(args).arg(&fifo).stdin(Stdio::null()).output().unwrap();
    writer.join().unwrap();
    finished(out)
}

/// Parses JSON output, and leaves out the input's name, the one thing that may differ.
fn without_input(text: &str) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            serde_json::Value::Object(map) => {
                map.remove("input");
                map.values_mut().for_each(strip);
            }
            _ => {}
        }
    }
    let mut value = json(text);
    strip(&mut value);
    value
}

#[test]
fn a_fifo_is_read_once_like_a_pipe() {
    // QUAKES is newest first: a file is read twice to sort it; a FIFO is sorted in memory.
    let file = crate::harness::temp_file("quakes-fifo.csv", QUAKES);
    let file = file.to_str().unwrap();
    for args in [
        &["replay", "--algo", "leaky-queue", "--rate", "2/h", "--burst", "2", "--format", "json"][..],
        &["compare", "--rate", "2/h", "--key", "magType", "--format", "json"],
        &["min-bucket", "--rate", "1/h,2/h", "--format", "json"],
        &["min-rate", "--burst", "1,3", "--format", "json"],
    ] {
        let from_file = run_with(&[args, &[file]].concat(), Stdin::Null).ok();
        assert_eq!(without_input(&through_fifo(args).ok()), without_input(&from_file), "{args:?}");
    }
}

#[test]
fn dev_stdin_is_read_as_standard_input() {
    let args = ["min-bucket", "/dev/stdin", "--rate", "2/h"];
    let piped = run_with(&args, Stdin::Pipe(QUAKES)).ok();
    let dash = run_with(&["min-bucket", "-", "--rate", "2/h"], Stdin::Pipe(QUAKES)).ok();
    assert_eq!(piped, dash);
    // Before, this was "cannot rewind the input: Illegal seek", naming no file.
    assert!(piped.contains("2/h"), "{piped}");
}
