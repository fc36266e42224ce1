//! `ratelimit config --for SYSTEM`: the snippet that runs a limit on that system, in its
//! units, as the system's limiter file writes it (`Rule::EXPORT`).

use std::process::ExitCode;

use anyhow::{Result, anyhow, bail};
use clap::Args;

use super::write_stdout;
use crate::cli::args::{NginxArgs, OwnParams};
use crate::cli::config::MAX_BURST;
use crate::limiter::Algorithm;
use crate::limiter::export::{BurstRule, ExportAsk, KeyRefused};
use crate::units::rate::Rate;

/// `ratelimit config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The system to configure.
    #[arg(long = "for", value_name = "SYSTEM", value_parser = system_parser())]
    pub system: Algorithm,
    /// The rate, N per period: the model of the system replays it as written here.
    #[arg(short = 'r', long, value_name = "RATE")]
    pub rate: Rate,
    /// The burst, as the system writes it: nginx's burst= (the requests beyond the first)
    /// [default: 0]; Traefik's burst [default: 1]; envoy-local's max_tokens [default: N].
    /// The others have none.
    #[arg(short = 'b', long, value_name = "B", allow_hyphen_values = true)]
    pub burst: Option<u64>,
    /// What the limit is per, as the system names it: an nginx variable
    /// ($binary_remote_addr, $http_x_api_key), or a request header's name; remote_addr
    /// (and client) is the client's address. Without it, one limit for all requests.
    #[arg(short = 'k', long, value_name = "KEY", allow_hyphen_values = true)]
    pub key: Option<String>,

    #[command(flatten)]
    pub nginx: NginxArgs,

    #[command(flatten)]
    pub own: OwnParams,
}

/// Reads `--for`: a system whose configuration the registry writes, each listed in the help
/// with its line, by its own name (`limits` is Python's, which its models replay).
fn system_parser() -> impl clap::builder::TypedValueParser<Value = Algorithm> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let exported = || Algorithm::ALL.into_iter().filter_map(|a| a.export().map(|e| (a, e)));
    let names: Vec<PossibleValue> =
        exported().map(|(_, e)| PossibleValue::new(e.system).help(e.help)).collect();
    PossibleValuesParser::new(names).map(move |name| {
        let found = exported().find(|(_, e)| e.system == name);
        found.map_or(Algorithm::Nginx, |(algorithm, _)| algorithm)
    })
}

pub(super) fn run(args: &ConfigArgs) -> Result<ExitCode> {
    let Some(export) = args.system.export() else { bail!("{} has no configuration", args.system) };
    let name = export.system;
    let given = args.nginx.given();
    if let Some((flag, _)) = given.0.first().filter(|_| args.system != Algorithm::Nginx) {
        bail!("--{flag} applies to nginx, not {name}");
    }
    let given = args.own.after(given);
    match (export.burst, args.burst) {
        (BurstRule::FromZero, _) | (_, None) => {}
        (BurstRule::FromOne, Some(0)) => bail!("--burst 0: {name}'s burst is at least 1"),
        (BurstRule::FromOne, Some(b)) if b > MAX_BURST => {
            bail!("--burst may be at most {MAX_BURST}")
        }
        (BurstRule::FromOne, Some(_)) => {}
        (BurstRule::Without, Some(_)) => {
            let with: Vec<&str> = Algorithm::ALL
                .into_iter()
                .filter_map(|a| a.export().filter(|e| e.burst != BurstRule::Without))
                .map(|e| e.system)
                .collect();
            let (last, rest) = with.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
            bail!("--burst applies to {} and {last}; {name} has none", rest.join(", "))
        }
    }
    if args.burst.is_some_and(|b| b > MAX_BURST) {
        bail!("--burst may be at most {MAX_BURST}");
    }
    let key = match args.key.as_deref() {
        Some(key) => Some((export.key)(key).map_err(|refused| {
            let shown = crate::message::one_line(key);
            match refused {
                KeyRefused::NotOne(why) => anyhow!("--key '{shown}': {why}"),
                KeyRefused::Empty => anyhow!("--key must name something: it is empty"),
                KeyRefused::NoKeys(why) => anyhow!("--key: {why}"),
            }
        })?),
        None => None,
    };
    let named: Vec<(&str, Option<&str>)> =
        given.0.iter().map(|(name, value)| (name.as_str(), value.as_deref())).collect();
    let params = args.system.params(&named)?;
    let ask = ExportAsk { rate: args.rate, burst: args.burst, key: key.as_ref(), params: &params };
    write_stdout((export.write)(&ask).as_bytes())
}
