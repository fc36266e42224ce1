//! The parse floor: the least any replay must do, to measure `ratelimit` against. It reads
//! a CSV with the csv crate, record by record as bytes, and parses only the time column,
//! with `ratelimit`'s own time parser: the same parser, the same file, so that a ratio to
//! the floor measures what the replay adds and nothing else. (A floor with chrono's parser
//! was a third slower, and made every ratio look better than it was.)
//!
//! Usage: `cargo run --release --example parse_floor -- FILE`

use std::process::ExitCode;

use ratelimit_replay::units::time::TimeFormat;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse_floor FILE");
        return ExitCode::from(2);
    };
    match floor(&path) {
        Ok((rows, checksum)) => {
            println!("{rows} rows, checksum {checksum}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("parse_floor: {path}: {err}");
            ExitCode::from(2)
        }
    }
}

fn floor(path: &str) -> Result<(u64, i64), Box<dyn std::error::Error>> {
    let mut reader = csv::ReaderBuilder::new().buffer_capacity(1 << 16).from_path(path)?;
    let column =
        reader.byte_headers()?.iter().position(|h| h == b"time").ok_or("no time column")?;
    let mut record = csv::ByteRecord::new();
    let (mut rows, mut checksum) = (0u64, 0i64);
    while reader.read_byte_record(&mut record)? {
        let time = ratelimit_replay::units::time::parse(&record[column], TimeFormat::Rfc3339)?;
        // Something to print, so that no parse can be skipped.
        checksum ^= time.as_micros();
        rows += 1;
    }
    Ok((rows, checksum))
}
