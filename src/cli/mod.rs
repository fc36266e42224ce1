//! The command line's shared parts: the flag groups every command takes (args), and their one
//! resolution (config). Each command's own flags live with it, in `cmd/`.

pub mod args;
pub mod config;
pub mod diagnostics;
pub mod empty_key;
pub mod job;
pub mod layer;
pub mod notes;

use crate::limiter::Algorithm;

/// Reads `--algo`: a limiter's name, one of [`Algorithm::ALL`], each listed in the help
/// with its line.
pub fn algorithm_parser() -> impl clap::builder::TypedValueParser<Value = Algorithm> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let names = Algorithm::ALL.map(|a| PossibleValue::new(a.name()).help(a.help()));
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Algorithm>())
}
