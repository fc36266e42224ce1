//! The command line's shared parts: the flag groups every command takes (args), and their one
//! resolution (config). Each command's own flags live with it, in `cmd/`.

pub mod args;
pub mod config;
pub mod diagnostics;
pub mod job;
pub mod layer;
