//! The command line: what the user typed (args), and its one resolution (config).

pub mod args;
pub mod config;
