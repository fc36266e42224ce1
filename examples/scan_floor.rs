//! The scan floor: what a replay costs with the least reading a CSV allows, on one thread.
//! It reads the file in large blocks, finds record ends with `memchr` (a line break outside
//! quotes ends a record; a quote inside a field is written twice, so counting quotes tells
//! in from out), takes the time field by counting commas outside quotes, parses it with
//! `ratelimit`'s own time parser and runs GCRA at 5/h, burst 5, on it. No field but the
//! time is read, and nothing is checked that a replay checks.
//!
//! Usage: `cargo run --release --example scan_floor -- FILE`

use std::fs::File;
use std::io::Read;
use std::num::NonZeroU64;
use std::process::ExitCode;

use ratelimit_replay::limiter::{Gcra, Limiter};
use ratelimit_replay::units::time::TimeFormat;

/// Bytes read at a time.
const BLOCK: usize = 1 << 20;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: scan_floor FILE");
        return ExitCode::from(2);
    };
    match scan(&path) {
        Ok((rows, passed)) => {
            println!("{rows} rows, {passed} passed");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("scan_floor: {path}: {err}");
            ExitCode::from(2)
        }
    }
}

fn scan(path: &str) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let mut file = File::open(path)?;
    let mut gcra = Gcra::new("5/h".parse()?, NonZeroU64::new(5).ok_or("burst")?);
    let (mut rows, mut passed) = (0u64, 0u64);
    let mut column = None;
    // What is left of the last block: the start of a record not yet ended.
    let mut pending: Vec<u8> = Vec::new();
    let mut block = vec![0u8; BLOCK];
    loop {
        let n = file.read(&mut block)?;
        let end_of_file = n == 0;
        pending.extend_from_slice(&block[..n]);
        let mut start = 0;
        let mut quoted = false;
        let mut at = 0;
        while let Some(found) = memchr::memchr2(b'"', b'\n', &pending[at..]) {
            let i = at + found;
            at = i + 1;
            if pending[i] == b'"' {
                quoted = !quoted;
                continue;
            }
            if quoted {
                continue;
            }
            let record = &pending[start..i];
            start = i + 1;
            match column {
                None => column = Some(field_index(record, b"time").ok_or("no time column")?),
                Some(index) => {
                    let time = ratelimit_replay::units::time::parse(
                        field(record, index),
                        TimeFormat::Rfc3339,
                    )?;
                    rows += 1;
                    passed += u64::from(gcra.admit(time));
                }
            }
        }
        pending.drain(..start);
        if end_of_file {
            return Ok((rows, passed));
        }
    }
}

/// Returns field `index` of a record (without its line ending), by counting commas outside
/// quotes; a quoted field keeps its quotes, which a time field never has.
fn field(record: &[u8], index: usize) -> &[u8] {
    let record = record.strip_suffix(b"\r").unwrap_or(record);
    let (mut start, mut seen, mut quoted) = (0, 0, false);
    for (i, &b) in record.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                if seen == index {
                    return &record[start..i];
                }
                seen += 1;
                start = i + 1;
            }
            _ => {}
        }
    }
    if seen == index { &record[start..] } else { &[] }
}

/// Returns the index of the header field named `name`.
fn field_index(header: &[u8], name: &[u8]) -> Option<usize> {
    let header = header.strip_suffix(b"\r").unwrap_or(header);
    header.split(|&b| b == b',').position(|f| f == name)
}
