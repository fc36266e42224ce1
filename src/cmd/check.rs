//! `ratelimit check`: one live decision in Redis, for scripts; the exit code is the answer.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;

use crate::cli::args::{LiveLimitArgs, OutputArgs, RedisArgs, parse_cost};
use crate::cli::config::Styles;
use crate::cli::layer::{self, Layers};
use crate::engine::Backend;
use crate::engine::layered::Layer;
use crate::engine::limit::Limit;
use crate::engine::live::Answer;
use crate::engine::recorder::Settings;
use crate::engine::redis::{self, RedisTarget, SHARED};
use crate::engine::replay::Settled;
use crate::engine::settled::LayerSpec;
use crate::input::cost::Cost;
use crate::policy_report::CheckReport;
use crate::render::export;
use crate::render::outfile::stdout;
use crate::report;
use crate::units::time::{Span, Timestamp};

pub(super) fn run(args: &CheckArgs, styles: &Styles) -> Result<ExitCode> {
    if args.key.is_empty() {
        bail!("KEY is empty: check limits a key, such as alert:bob");
    }
    if args.settle || !args.values.is_empty() || args.limits.iter().any(|l| l.limit().is_none()) {
        return settled(args, styles);
    }
    let (found, headers) = decide(args)?;
    let mut out = BufWriter::new(stdout());
    if args.headers {
        out.write_all(headers.as_bytes())?;
    } else {
        export::write(&mut out, args.output.format, styles.stdout, &found)?;
    }
    out.flush()?;
    let allowed = match &found {
        CheckReport::One(check) => check.allowed,
        CheckReport::Layers(checks) => checks.allowed,
    };
    Ok(answer(allowed))
}

/// One call of the policy's script in Redis (one limit's, or the layers' all or nothing,
/// atomically): its answer, and its headers.
fn decide(args: &CheckArgs) -> Result<(CheckReport, String)> {
    let settled = args.settled()?;
    let target = args.target()?;
    // Each limit's settings, the cost a call takes from it, and whether it limits KEY (a
    // layer without key= is one limit every KEY shares).
    let lanes: Vec<(Settings, u64, bool)> = match &settled {
        Settled::One(settings) => vec![(*settings, args.cost, true)],
        Settled::Layers { layers, .. } => {
            (layers.iter()).map(|l| (l.settings, l.cost.unwrap_or(args.cost), l.keyed)).collect()
        }
    };
    // A cost a limit can never pass is an error, said before any server is asked.
    for (n, (settings, cost, _)) in lanes.iter().enumerate() {
        let fits = redis::cost_fits(settings, *cost);
        match args.limits.get(n) {
            Some(spec) => fits.with_context(|| format!("--limit {spec}"))?,
            None => fits?,
        }
    }
    let backend = Backend::new(&settled.settings(), Some(&target), None)?;
    let mut live = backend.live(settled.policy())?;
    let answered = live.answer_now(now(), Some(args.key.as_bytes()), args.cost)?;
    if answered.limits.len() != lanes.len() {
        bail!("Redis gave {} answers for {} limits", answered.limits.len(), lanes.len());
    }
    let checks: Vec<report::Check> = (lanes.iter().zip(&answered.limits))
        .map(|(&(settings, cost, keyed), answer)| {
            let key = if keyed { &args.key } else { SHARED };
            decision(key, &settings, cost, answer)
        })
        .collect();
    let named = match &settled {
        Settled::One(settings) => vec![settings.algorithm.name().to_owned()],
        Settled::Layers { layers, .. } => policy_names(layers),
    };
    let fields: Vec<_> = (named.into_iter().zip(&checks).zip(&lanes))
        .map(|((name, check), (settings, _, _))| (name, check, settings))
        .collect();
    let headers = headers(&fields);
    let found = match settled {
        Settled::One(_) => CheckReport::One(checks.into_iter().next().context("no answer")?),
        Settled::Layers { .. } => CheckReport::Layers(report::LayeredCheck {
            key: args.key.clone(),
            allowed: answered.passed,
            retry_after_s: span(
                answered.limits.iter().filter_map(|a| a.retry_after_us).max().unwrap_or(0),
            ),
            layers: (args.limits.iter().zip(&lanes).zip(checks))
                .map(|((spec, &(_, _, keyed)), check)| report::LayerCheck {
                    spec: spec.to_string(),
                    keyed,
                    check,
                })
                .collect(),
        }),
    };
    Ok((found, headers))
}

/// Decides (or with `--settle`, settles) a request of KEY in Redis over `--limit` layers
/// settled after the response, and writes the answer.
fn settled(args: &CheckArgs, styles: &Styles) -> Result<ExitCode> {
    if args.limits.is_empty() {
        bail!("--value and --settle are for --limit layers settled after the response");
    }
    if args.headers {
        bail!("--headers tells one decision's limits; a settlement's answer is its report");
    }
    let values: std::collections::HashMap<String, u64> = args.values.iter().cloned().collect();
    let target = args.target()?;
    let call = if args.settle { "check --settle" } else { "check" };
    let asked = crate::engine::live_settled::Asked { settle: args.settle, cost: None, call };
    let found = crate::engine::live_settled::check_in_redis(
        &target,
        &args.limits,
        &args.key,
        &values,
        asked,
    )?;
    let mut out = BufWriter::new(stdout());
    export::write(&mut out, args.output.format, styles.stdout, &found)?;
    out.flush()?;
    Ok(answer(found.allowed))
}

/// Reads `NAME=N`, a value a layer's sums read.
fn parse_value(text: &str) -> Result<(String, u64), String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!("'{text}' is not NAME=N (prompt_tokens=30)"));
    };
    let number = crate::input::cost::parse_cost(value.trim().as_bytes())
        .map_err(|e| format!("{name}={value}: {e}"))?;
    Ok((name.trim().to_owned(), number))
}

/// The exit code of an answer: 1 is "limited", not an error.
fn answer(allowed: bool) -> ExitCode {
    if allowed { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The time of this machine's clock, as `filter` reads it: Redis decides at its own, and a
/// sliding log's entry is named by this one (with the process).
fn now() -> Timestamp {
    crate::engine::live_limiter::Clock::start().at(std::time::Instant::now())
}

/// Returns a span of `micros` µs (as a script gave it), none if negative.
fn span(micros: i64) -> Span {
    // `Span::from_micros` refuses only a negative count, and `max(0)` leaves none.
    Span::from_micros(micros.max(0)).expect("not negative")
}

/// Returns the decision of a limiter with `settings` on `key`, a call of `cost` units, as
/// the script answered it.
fn decision(key: &str, settings: &Settings, cost: u64, answer: &Answer) -> report::Check {
    let limit = settings.capacity();
    report::Check {
        key: key.to_owned(),
        algorithm: settings.algorithm,
        rate: settings.rate,
        cost,
        allowed: answer.decision.passed,
        limit,
        remaining: answer.remaining,
        retry_after_s: span(answer.retry_after_us.unwrap_or(0)),
        reset_after_s: span(answer.reset_after_us.unwrap_or(0)),
    }
}

/// Returns each layer's policy name: its limiter's, with its layer's number if another
/// layer runs the same limiter.
fn policy_names(layers: &[Layer]) -> Vec<String> {
    let algorithm = |l: &Layer| l.settings.algorithm;
    layers
        .iter()
        .enumerate()
        .map(|(n, l)| {
            let name = algorithm(l).name();
            let twice = layers.iter().filter(|m| algorithm(m) == algorithm(l)).count() > 1;
            if twice { format!("{name}-{}", n + 1) } else { name.to_owned() }
        })
        .collect()
}

/// Returns the decisions as the IETF `RateLimit-Policy` and `RateLimit` header lines
/// (draft-ietf-httpapi-ratelimit-headers), for a service to pass on, one list item a
/// policy: each, named, holds `q` units a `w` seconds (a window's N a period; a bucket's
/// burst and the time to refill it whole), and `r` remain, all back in `t` seconds (whole
/// seconds, rounded up, as the fields take).
fn headers(policies: &[(String, &report::Check, &Settings)]) -> String {
    let seconds = |micros: i128| (micros + 999_999).div_euclid(1_000_000).max(0);
    let (mut policy, mut state) = (Vec::new(), Vec::new());
    for (name, check, settings) in policies {
        let window = if settings.algorithm.uses_burst() {
            // b·I = b·P/N, rounded up.
            let (n, p) = (settings.rate.n(), settings.rate.p());
            (i128::from(settings.burst.get()) * p + n - 1) / n
        } else {
            settings.rate.p()
        };
        policy.push(format!("\"{name}\";q={};w={}", check.limit, seconds(window)));
        let reset = seconds(i128::from(check.reset_after_s.as_micros()));
        state.push(format!("\"{name}\";r={};t={reset}", check.remaining));
    }
    format!("RateLimit-Policy: {}\nRateLimit: {}\n", policy.join(", "), state.join(", "))
}

pub(super) const CHECK_AFTER_HELP: &str = "\
The decision is made atomically in Redis, at the server's time, so that every process
checking the same KEY shares one limit. It prints the capacity remaining, when a call of
this cost could pass (retry after) and when the limiter is back to full (reset after), as
redis-cell's CL.THROTTLE does.

Example: ratelimit check \"alert:$user\" --rate 5/h --burst 5 --redis \"$REDIS_URL\" && send_alert

Exit status: 0 allowed, 1 limited, 2 error (a cost larger than the burst is an error: it
could never pass).";

/// `ratelimit check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The key to limit, such as alert:bob; it is stored as PREFIX{KEY}:ALGO.
    #[arg(value_name = "KEY")]
    pub key: String,

    #[command(flatten)]
    pub limit: LiveLimitArgs,

    /// One layer of several limits at once, given again for each, as replay takes them:
    /// the call passes only if every layer admits it, and a refused call charges no layer,
    /// in one atomic script. A layer with key= limits KEY; one without is one limit that
    /// every KEY shares. --cost gives its cost to the layers with cost=COLUMN.
    ///
    /// A layer may be settled after the response (reserve=SUM, charge=completion,
    /// algo=concurrency,max=N): check decides a request with the --value NAME=N its sums
    /// read, and a later check --settle with the same values and the real counts settles
    /// it, all layers in one script call.
    #[arg(long = "limit", id = "limits", value_name = "SPEC")]
    #[arg(conflicts_with_all = ["algo", "rate", "burst"])]
    pub limits: Vec<LayerSpec>,

    /// A value the layers' sums read, NAME=N, given again for each (prompt_tokens=30
    /// max_tokens=200; with --settle, completion_tokens=120 too).
    #[arg(long = "value", value_name = "NAME=N", value_parser = parse_value, requires = "limits")]
    pub values: Vec<(String, u64)>,

    /// Settle a request decided before, with the same --value NAME=N and its real counts:
    /// each reservation gives back what the response did not use (or takes the rest), each
    /// charge after the response is taken, each cap has one fewer in flight.
    #[arg(long, requires = "limits")]
    pub settle: bool,

    /// With --limit layers of envoy-ratelimit: count a refused request's hits only in the
    /// limits it is over, as envoy's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT does; without
    /// it every limit counts them.
    #[arg(long, requires = "limits")]
    pub stop_counting_over_limit: bool,

    /// How many units to take at once, all or nothing.
    #[arg(long, value_name = "N", default_value_t = 1, allow_hyphen_values = true, value_parser = parse_cost)]
    pub cost: u64,

    #[command(flatten)]
    pub remote: RedisArgs,

    /// Print the decision as the IETF RateLimit-Policy and RateLimit header lines
    /// (draft-ietf-httpapi-ratelimit-headers) for a service to pass on, instead of the
    /// report; the exit code is the answer still.
    #[arg(long, conflicts_with = "format")]
    pub headers: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

impl CheckArgs {
    /// Settles the policy `check` runs: one limit (`--algo`, `--rate`), or the layers of
    /// `--limit`, each checked as a script decides it, at once.
    fn settled(&self) -> Result<Settled> {
        if self.limits.is_empty() {
            if self.limit.algo.delays() {
                bail!(
                    "check decides at once; a leaky queue delays instead: use gcra, which \
                     admits the same"
                );
            }
            return Ok(Settled::One(self.limit.settings("check")?));
        }
        // check limits KEY itself, and weighs by --cost: a layer's key= and cost=COLUMN say
        // only that it is keyed or weighed, whatever column they name (README: any name).
        let specs: Vec<Limit> = (self.limits.iter().filter_map(LayerSpec::limit))
            .map(|mut spec| {
                spec.key = spec.key.map(|_| "KEY".to_owned());
                if let Cost::Column(_) = spec.cost {
                    spec.cost = Cost::Column("--cost".to_owned());
                }
                spec
            })
            .collect();
        let Layers { layers, cost, .. } =
            layer::resolve(&specs, None, self.stop_counting_over_limit, "layers")?;
        if let (Cost::Each(_), true) = (&cost, self.cost != 1) {
            bail!("--cost gives its cost to the layers weighed by cost=COLUMN, and no layer is");
        }
        if let Some(queue) = layers.iter().find(|l| l.settings.algorithm.delays()) {
            bail!(
                "check decides at once; {} delays: use gcra, which admits the same",
                queue.settings.algorithm.name()
            );
        }
        Ok(Settled::Layers { limits: specs, layers })
    }

    /// Settles the server `check` decides in.
    fn target(&self) -> Result<RedisTarget> {
        self.remote.target()?.ok_or_else(|| {
            anyhow!("check needs --redis URL: it decides in the Redis server its callers share")
        })
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;
    use crate::limiter::Algorithm;

    #[test]
    fn headers_give_the_policy_and_what_remains() {
        let settings = |algorithm, rate: &str, burst| Settings {
            algorithm,
            rate: rate.parse().unwrap(),
            burst: NonZeroU64::new(burst).unwrap(),
            window: Span::from_micros(1).unwrap(),
            params: algorithm.default_params(),
        };
        let check = |algorithm, limit, remaining, reset_micros| report::Check {
            key: "k".into(),
            algorithm,
            rate: "5/h".parse().unwrap(),
            cost: 1,
            allowed: true,
            limit,
            remaining,
            retry_after_s: Span::from_micros(0).unwrap(),
            reset_after_s: Span::from_micros(reset_micros).unwrap(),
        };
        // GCRA at 5/h with a burst of 5, after one call: 4 left, whole again in 12 min;
        // the burst refills in 5 × 12 min.
        let one = |name: &str, check: &report::Check, settings: &Settings| {
            headers(&[(name.to_owned(), check, settings)])
        };
        let gcra = one(
            "gcra",
            &check(Algorithm::Gcra, 5, 4, 720_000_000),
            &settings(Algorithm::Gcra, "5/h", 5),
        );
        assert_eq!(gcra, "RateLimit-Policy: \"gcra\";q=5;w=3600\nRateLimit: \"gcra\";r=4;t=720\n");
        // A fixed window of 3 per 10 s, 0.4 s from its end: the window, and t rounded up.
        let window = check(Algorithm::FixedWindow, 3, 0, 400_000);
        let fixed = one("fixed-window", &window, &settings(Algorithm::FixedWindow, "3/10s", 3));
        assert_eq!(
            fixed,
            "RateLimit-Policy: \"fixed-window\";q=3;w=10\nRateLimit: \"fixed-window\";r=0;t=1\n"
        );
        // A burst of 7 at 2/3s refills in 10.5 s: w rounds up to 11.
        let bucket = one(
            "token-bucket",
            &check(Algorithm::TokenBucket, 7, 7, 0),
            &settings(Algorithm::TokenBucket, "2/3s", 7),
        );
        assert!(bucket.starts_with("RateLimit-Policy: \"token-bucket\";q=7;w=11\n"), "{bucket}");
    }
}
