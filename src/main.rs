//! The `ratelimit` command: runs, prints any error once, and exits with its code.

use std::io::{self, Write};
use std::process::ExitCode;

use ratelimit_replay::message::one_line;

fn main() -> ExitCode {
    match ratelimit_replay::run(std::env::args_os()) {
        Ok(code) => code,
        // A reader that stops early, as `head` does, is not an error.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // If stderr cannot take even this line, the exit code still tells.
            let _ = writeln!(io::stderr(), "ratelimit: {}", render(&err));
            ExitCode::from(2)
        }
    }
}

/// Renders an error and its causes on one line, `outer: inner`, leaving out a cause whose
/// words the line already holds.
fn render(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    one_line(&line)
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}
