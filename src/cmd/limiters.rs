//! `ratelimit limiters`: every limiter in the list, what it models, its burst and its own
//! parameters, its rule and its promise; `--format markdown` writes docs/limiters.md.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::write_stdout;
use crate::limiter::Algorithm;
use crate::limiter::promise::PromiseCheck;
use crate::units::rate::Rate;

/// `ratelimit limiters`.
#[derive(Debug, Args)]
pub struct LimitersArgs {
    /// How to write the list.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
}

/// How the list is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// A paragraph a limiter, for the terminal.
    Text,
    /// A Markdown page, as docs/limiters.md.
    Markdown,
}

/// The size each promise is stated at: one every system can run (nginx's r/m, envoy's
/// minute, `limits`' whole seconds).
const RATE: &str = "10/m";
/// The burst each promise is stated at, as the system writes it.
const BURST: u64 = 5;

/// One limiter's entry: name, what it models, its burst, its parameters, rule, promise.
struct Entry {
    name: &'static str,
    models: &'static str,
    burst: String,
    params: String,
    rule: &'static str,
    promise: String,
    /// What an event whose key is empty does.
    empty_key: &'static str,
    /// What its system does that its users trip over.
    quirks: &'static str,
    /// What real system it is proven against.
    proven: &'static str,
}

fn entries() -> Result<Vec<Entry>> {
    let rate: Rate = RATE.parse()?;
    Ok(Algorithm::ALL
        .iter()
        .map(|&algorithm| {
            let burst = algorithm.burst_from(BURST).unwrap_or(rate.count_nonzero());
            Entry {
                name: algorithm.name(),
                models: algorithm.models().unwrap_or("exact"),
                // A system's burst that counts the requests beyond the first shows 0 for b = 1.
                burst: match (algorithm.uses_burst(), algorithm.own_default_burst()) {
                    (true, None) if algorithm.shown_burst(std::num::NonZeroU64::MIN) == Some(0) => {
                        "its own, the bucket less one; default N − 1".to_owned()
                    }
                    (true, None) => "b, default N".to_owned(),
                    (true, Some(own)) => format!("its own, default {own}"),
                    (false, _) => "none".to_owned(),
                },
                params: algorithm.param_keys().join(", "),
                rule: algorithm.help(),
                promise: PromiseCheck::new(algorithm, rate, burst.get()).statement(),
                empty_key: match algorithm.skips_empty_key() {
                    true => "passes uncounted, as its system does not account it",
                    false => "a key like any other",
                },
                quirks: algorithm.quirks().unwrap_or("—"),
                proven: algorithm.proven().unwrap_or("its written rule and brute force"),
            }
        })
        .collect())
}

pub(super) fn run(args: &LimitersArgs) -> Result<ExitCode> {
    let mut text = String::new();
    match args.format {
        ListFormat::Text => {
            for e in entries()? {
                let params = if e.params.is_empty() { "none" } else { &e.params };
                let _ = writeln!(text, "{}\n  models:     {}", e.name, e.models);
                let _ = writeln!(text, "  burst:      {}\n  parameters: {params}", e.burst);
                let _ = writeln!(text, "  rule:       {}", e.rule);
                let _ = writeln!(text, "  promise:    {} (at {RATE}, burst {BURST})", e.promise);
                let _ = writeln!(text, "  empty key:  {}", e.empty_key);
                let _ = writeln!(text, "  quirks:     {}", e.quirks);
                let _ = writeln!(text, "  proven:     {}\n", e.proven);
            }
        }
        ListFormat::Markdown => {
            let _ = writeln!(
                text,
                "# Limiters\n\nEvery limiter `--algo` and `--limit algo=` take, from the one list in \
                 `crates/core/src/limiter/mod.rs`. Written by `ratelimit limiters --format \
                 markdown`; a test fails when this page is not what it writes.\n\n\
                 A rate is N events per period P; a burst is b. Each promise is stated at \
                 {RATE} with a burst of {BURST} (as the system writes its burst).\n\n\
                 | limiter | models | burst | parameters | rule | promise at {RATE}, burst {BURST} | \
                 an empty key (with `--key`) | quirks | proven against |\n\
                 | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
            );
            for e in entries()? {
                let params =
                    if e.params.is_empty() { "—".to_owned() } else { format!("`{}`", e.params) };
                let _ = writeln!(
                    text,
                    "| `{}` | {} | {} | {params} | {} | {} | {} | {} | {} |",
                    e.name,
                    e.models,
                    e.burst,
                    e.rule.replace('|', "\\|"),
                    e.promise.replace('|', "\\|"),
                    e.empty_key,
                    e.quirks.replace('|', "\\|"),
                    e.proven.replace('|', "\\|")
                );
            }
        }
    }
    write_stdout(text.as_bytes())
}
