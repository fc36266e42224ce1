//! Keyed layers beside global ones, split for a replay in parts: the keyed layers by key,
//! each global layer as a limit of its own, to be replayed alone over every row first.
//!
//! All or nothing, a global layer is charged only by the events every layer admits, a part
//! of those it is charged by alone. One whose limiter admits any part of a stream it
//! admits whole ([`Rule::ADMITS_ANY_PART`](crate::limiter::Rule::ADMITS_ANY_PART)) and
//! refuses nothing alone refuses nothing in the run: the keyed layers then decide as if it
//! were not there, each key alone, and its report is a replay of one stream of the rows
//! as they passed. Whether it refuses nothing alone is the caller's to find.

use anyhow::{Result, bail};

use super::parse;
use crate::cmd::{Cli, Command};
use crate::input::cost::Cost;

/// Layers keyed by one column beside global ones, split for a replay in parts.
#[derive(Debug, PartialEq, Eq)]
pub struct Beside {
    /// `ratelimit replay`'s flags with the keyed layers only.
    pub keyed: Vec<String>,
    /// The column that keys them.
    pub key: String,
    /// The global layers, in layer order.
    pub global: Vec<GlobalLayer>,
}

/// A global layer beside keyed ones.
#[derive(Debug, PartialEq, Eq)]
pub struct GlobalLayer {
    /// Its place among all the layers, from 0.
    pub place: usize,
    /// Its spec, as the program's report writes it.
    pub spec: String,
    /// Its limiter's name.
    pub algorithm: &'static str,
    /// Whether events cost it what a column says (else each the same).
    pub weighed: bool,
    /// `ratelimit replay`'s flags with it as the only limit (`--algo`, `--rate`, ...).
    pub alone: Vec<String>,
}

/// Splits the layers `args` give (`ratelimit replay`'s flags) into keyed ones, all by one
/// column and none sharing a zone, and global ones each of a limiter that admits any part
/// of what it admits whole and delays nothing, given by its limiter, rate, burst and cost
/// alone; `None` if they do not split so (one limit, no keyed or no global layer, or a
/// layer that does not).
pub fn layers_beside(args: &[String]) -> Result<Option<Beside>> {
    let cli: Cli = parse(args)?;
    let Command::Replay(replay) = cli.command else { bail!("layers beside are replay's") };
    // The flags but the layers, and each layer's own words, in order.
    let (mut base, mut given): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match (word.as_str(), word.strip_prefix("--limit=")) {
            ("--limit", _) => given.extend(words.next().cloned()),
            (_, Some(spec)) => given.push(spec.to_owned()),
            _ => base.push(word.clone()),
        }
    }
    if given.len() != replay.limits.len() {
        return Ok(None);
    }
    let (mut keyed, mut key, mut global) = (base.clone(), None::<&str>, Vec::new());
    for (place, (spec, words)) in replay.limits.iter().zip(given).enumerate() {
        let algorithm = spec.algorithm;
        match &spec.key {
            Some(column) if key.is_none_or(|k| k == column) && !algorithm.has_zone() => {
                key = Some(column);
                keyed.extend(["--limit".to_owned(), words.clone()]);
            }
            Some(_) => return Ok(None),
            None if algorithm.admits_any_part()
                && !algorithm.delays()
                && spec.params.is_empty() =>
            {
                let mut alone = base.clone();
                alone.extend([
                    "--algo".into(),
                    algorithm.name().into(),
                    "--rate".into(),
                    spec.rate.to_string(),
                ]);
                alone
                    .extend(spec.burst.into_iter().flat_map(|b| ["--burst".into(), b.to_string()]));
                if spec.cost != Cost::default() {
                    alone.extend(["--cost".into(), spec.cost.to_string()]);
                }
                let weighed = matches!(spec.cost, Cost::Column(_));
                global.push(GlobalLayer {
                    place,
                    spec: spec.to_string(),
                    algorithm: algorithm.name(),
                    weighed,
                    alone,
                });
            }
            None => return Ok(None),
        }
    }
    match key {
        Some(key) if !global.is_empty() => Ok(Some(Beside { keyed, key: key.to_owned(), global })),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(limits: &[&str]) -> Vec<String> {
        let mut args: Vec<String> =
            ["ratelimit", "replay", "--format", "json", "--time-column", "ts"]
                .map(String::from)
                .to_vec();
        for spec in limits {
            args.extend(["--limit".to_owned(), (*spec).to_owned()]);
        }
        args
    }

    #[test]
    fn keyed_layers_split_from_a_global_one_given_as_a_limit_of_its_own() {
        let keyed = "algo=gcra,rate=2/m,burst=3,key=client";
        let global = "algo=sliding-log,rate=75000/m,cost=tokens";
        let found = layers_beside(&args(&[keyed, global])).unwrap().unwrap();
        assert_eq!(found.keyed, args(&[keyed]));
        assert_eq!(found.key, "client");
        let alone = [
            &args(&[])[..],
            &["--algo", "sliding-log", "--rate", "75000/m", "--cost", "tokens"].map(String::from),
        ]
        .concat();
        let layer = GlobalLayer {
            place: 1,
            spec: global.to_owned(),
            algorithm: "sliding-log",
            weighed: true,
            alone,
        };
        assert_eq!(found.global, [layer]);
        // A bucket with its burst, first among the layers, each event costing the same.
        let found = layers_beside(&args(&["algo=gcra,rate=9/s,burst=4", keyed])).unwrap().unwrap();
        assert_eq!(found.global[0].place, 0);
        assert!(!found.global[0].weighed);
        assert_eq!(found.global[0].alone[6..], ["--algo", "gcra", "--rate", "9/s", "--burst", "4"]);
    }

    #[test]
    fn layers_that_do_not_split_so_are_none() {
        let keyed = "algo=gcra,rate=2/m,burst=3,key=client";
        for limits in [
            // All keyed, or none.
            &[keyed, "algo=fixed-window,rate=5/m,key=client"][..],
            &["algo=gcra,rate=2/m", "algo=fixed-window,rate=5/m"],
            // Keyed by two columns; nginx's keys share a zone.
            &[keyed, "algo=gcra,rate=2/m,key=path", "algo=gcra,rate=9/s"],
            &["algo=nginx,rate=2r/m,key=client", "algo=gcra,rate=9/s"],
            // A global layer that may refuse a part of what it admits whole, or a queue.
            &[keyed, "algo=haproxy,rate=100/10s"],
            &[keyed, "algo=leaky-queue,rate=9/s,burst=4"],
        ] {
            assert_eq!(layers_beside(&args(limits)).unwrap(), None, "{limits:?}");
        }
        // One limit has no layers.
        let one = ["ratelimit", "replay", "--algo", "gcra", "--rate", "1/s"].map(String::from);
        assert_eq!(layers_beside(&one).unwrap(), None);
    }
}
