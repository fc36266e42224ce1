//! nginx's own configuration of a limit: `limit_req_zone` and `limit_req`, in its units.

use std::fmt::Write as _;

use super::{Beside, Delay};
use crate::limiter::export::{BurstRule, Export, ExportAsk, ExportKey, KeyRefused};
use crate::limiter::{Params, nginx_rate};

/// nginx, as `config --for nginx` writes it.
pub(super) const EXPORT: Export = Export {
    system: "nginx",
    help: "nginx's limit_req_zone and limit_req",
    burst: BurstRule::FromZero,
    key,
    write,
};

/// Reads what a zone is keyed by: one variable (`$binary_remote_addr`), or `client`.
fn key(key: &str) -> Result<ExportKey, KeyRefused> {
    let name = key.strip_prefix('$').unwrap_or(key);
    let word = name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    match key {
        // The client's address, by the names a log or a replay gives it: nginx keeps
        // $remote_addr as written, as a variable of its own.
        "client" => Ok(ExportKey::Client),
        _ if word && name.len() <= 256 => Ok(ExportKey::Variable(name.to_owned())),
        _ => Err(KeyRefused::NotOne(
            "nginx keys a zone by one variable, such as $binary_remote_addr or \
             $http_x_api_key, and this is not one",
        )),
    }
}

/// `limit_req_zone` and `limit_req`. nginx writes N r/s or N r/m; a rate it cannot write
/// becomes the fastest one it can that is no faster, said in a comment.
fn write(ask: &ExportAsk<'_>) -> String {
    let rate = ask.rate;
    let burst = ask.burst.unwrap_or(0);
    // Without a key, one zone entry for all requests: a constant key.
    let key = match ask.key {
        Some(ExportKey::Client) => "$binary_remote_addr".to_owned(),
        Some(ExportKey::Variable(name)) => format!("${name}"),
        Some(ExportKey::Header(_) | ExportKey::Quoted(_)) | None => "ratelimit".to_owned(),
    };
    let mut text = format!("# ratelimit: nginx at {rate}, burst {burst}\n");
    let (count, unit) = match nginx_rate(rate) {
        Some((count, 1)) => (count, "s"),
        Some((count, _)) => (count, "m"),
        None => {
            // N per P is N·60 s/P a minute: floored, it limits no less than asked.
            let per_minute =
                i128::from(rate.count()) * 60_000_000 / i128::from(rate.period().as_micros());
            let count = u64::try_from(per_minute).unwrap_or(u64::MAX).max(1);
            let _ = writeln!(
                text,
                "# {rate} is not N r/s or N r/m, which is all nginx writes: {count}r/m is {}",
                if per_minute == 0 {
                    "the slowest it can, and faster than asked"
                } else {
                    "the nearest that is no faster"
                }
            );
            (count, "m")
        }
    };
    let milli = u128::from(count) * 1000;
    if unit == "m" && milli % 60 != 0 {
        let _ = writeln!(
            text,
            "# nginx keeps {count}r/m as {} thousandths of a request a second, truncated: \
             --algo nginx --rate {count}/m replays that",
            milli / 60
        );
    }
    let (zone, delay) = match ask.params {
        Params::Nginx(params) => (params.zone, params.delay),
        _ => Default::default(),
    };
    let _ = writeln!(text, "limit_req_zone {key} zone=ratelimit:{zone} rate={count}r/{unit};");
    let burst = if burst == 0 { String::new() } else { format!(" burst={burst}") };
    // nginx's default, delay=0, is written as nothing; a dry run is a directive of its own.
    let (beside, dry_run) = match delay {
        Delay::Beyond(d) => (Beside::Delay(d), false),
        Delay::Never => (Beside::NoDelay, false),
        Delay::DryRun(beside) => (beside, true),
    };
    let delay = match beside {
        Beside::Delay(d) if d > 0 => format!(" delay={d}"),
        Beside::NoDelay => " nodelay".to_owned(),
        _ => String::new(),
    };
    let _ = writeln!(text, "limit_req zone=ratelimit{burst}{delay};");
    if dry_run {
        let _ = writeln!(text, "limit_req_dry_run on;");
    }
    text
}
