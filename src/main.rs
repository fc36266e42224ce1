//! The `ratelimit` command: runs, prints any error once, and exits with its code.

use std::io::{self, Write};
use std::process::ExitCode;

// Large buffers in huge pages: see its documentation for what that saves.
#[global_allocator]
static ALLOCATOR: ratelimit_engine::huge_pages::HugePages = ratelimit_engine::huge_pages::HugePages;

fn main() -> ExitCode {
    match ratelimit_replay::run(std::env::args_os()) {
        Ok(code) => code,
        // A reader that stops early, as `head` does, is not an error.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            // If stderr cannot take even this line, the exit code still tells.
            let _ = writeln!(io::stderr(), "ratelimit: {}", ratelimit_replay::error_line(&err));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}
