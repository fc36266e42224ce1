//! One layer of a layered limit, as `--limit` writes it: `algo=gcra,rate=60/m,burst=10`.

use std::fmt;
use std::str::FromStr;

use anyhow::{Result, bail};

use crate::cli::args::{GivenParams, InputArgs, RateArgs, column};
use crate::cli::config::{Input, cost_refused};
use crate::engine::layered::{Layer, MAX_LAYERS};
use crate::input::cost::Cost;
use crate::limiter::Algorithm;
use crate::units::rate::Rate;
use crate::units::time::Span;

/// A layer: a limiter, its rate and burst, what each event costs it, and the column whose
/// values give it a state per key (none: one state for all events).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerSpec {
    /// The limiter.
    pub algorithm: Algorithm,
    /// Its rate.
    pub rate: Rate,
    /// Its burst, for the limiters that have one.
    pub burst: Option<u64>,
    /// What each event costs it: 1 unless said.
    pub cost: Cost,
    /// The column that keys it, if any.
    pub key: Option<String>,
    /// The limiter's own parameters, as given (nginx's `delay=`, `nodelay` or `dry-run`).
    pub params: GivenParams,
}

/// Settles the layers and the input they read: its key and cost columns the layers'.
/// `noun` is what the specs are to the user: "layers", or compare's "configurations".
pub(crate) fn setup(
    specs: &[LayerSpec],
    input: &InputArgs,
    window: Option<Span>,
    stop_counting: bool,
    noun: &str,
) -> Result<(Vec<Layer>, Input)> {
    let Layers { layers, key, cost } = resolve(specs, window, stop_counting, noun)?;
    let mut input = input.resolve(key.as_deref().map(|k| (k, "--limit key=")))?;
    input.read.cost = cost;
    Ok((layers, input))
}

/// Layers resolved from their specs: each layer, the one column keying the keyed ones, and
/// what the read's events cost (the one column weighing the weighed ones, else 1).
pub(crate) struct Layers {
    pub layers: Vec<Layer>,
    pub key: Option<String>,
    pub cost: Cost,
}

/// Settles the layers `specs`, their busiest windows `window` long (each layer's period
/// if `None`); envoy-ratelimit layers count the hits of refused events unless
/// `stop_counting` (`--stop-counting-over-limit`). `noun` is what the specs are to the
/// user: "layers", or compare's "configurations".
pub(crate) fn resolve(
    specs: &[LayerSpec],
    window: Option<Span>,
    stop_counting: bool,
    noun: &str,
) -> Result<Layers> {
    if specs.len() > MAX_LAYERS {
        bail!("--limit is given {} times; at most {MAX_LAYERS} {noun} run at once", specs.len());
    }
    let key = one_column(specs.iter().filter_map(|s| s.key.as_deref()), noun, "keyed")?;
    let cost_column = specs.iter().filter_map(|s| match &s.cost {
        Cost::Column(column) => Some(column.as_str()),
        Cost::Each(_) => None,
    });
    let cost = one_column(cost_column, noun, "weighed")?;
    let layers = specs
        .iter()
        .map(|spec| {
            let shape = crate::cli::args::Shape { burst: spec.burst, ..Default::default() };
            let size = RateArgs { rate: spec.rate, shape };
            Ok(Layer {
                settings: size.settings_with(spec.algorithm, window, true, &spec.params, "")?,
                keyed: spec.key.is_some(),
                cost: match spec.cost {
                    Cost::Each(units) => Some(units),
                    Cost::Column(_) => None,
                },
                counts_refused: spec.algorithm.counts_every_limit() && !stop_counting,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Layers {
        layers,
        key: key.map(str::to_owned),
        cost: cost.map_or(Cost::default(), |c| Cost::Column(c.to_owned())),
    })
}

/// Returns the one column that `columns` name (none if they name none); `noun` (layers,
/// configurations) that are `what` (keyed, weighed) must all be so by the same column.
fn one_column<'a>(
    columns: impl Iterator<Item = &'a str>,
    noun: &str,
    what: &str,
) -> Result<Option<&'a str>> {
    let mut found: Option<&str> = None;
    for column in columns {
        match found {
            Some(first) if first != column => bail!(
                "{noun} may be {what} by one column, and these name two: `{first}` and `{column}`"
            ),
            _ => found = Some(column),
        }
    }
    Ok(found)
}

/// Reads the comma-separated `key=value` form of `docker --mount`: the keys are `algo`,
/// `rate`, `burst`, `cost` and `key`, each at most once, and the limiter's own parameters
/// (nginx's `delay=`, and its bare `nodelay` or `dry-run`), which the limiter reads;
/// `algo` and `rate` are needed.
impl FromStr for LayerSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<LayerSpec, String> {
        let (mut algorithm, mut rate, mut burst, mut cost, mut key) =
            (None, None::<Rate>, None, None::<Cost>, None);
        let mut params = GivenParams::default();
        // A rate in a system's own words (Traefik's `average`, HAProxy's `gt`), which the
        // limiter reads once it is known.
        let mut words: Vec<(&str, &str)> = Vec::new();
        for part in text.split(',') {
            let bare = part.trim();
            // A limiter's bare parameter, such as nginx's `nodelay`.
            if !bare.contains('=') && Algorithm::taking(bare).next().is_some() {
                params.give(bare, None)?;
                continue;
            }
            let Some((name, value)) = part.split_once('=') else {
                return Err(format!(
                    "'{part}' is not key=value (algo=, rate=, burst=, cost=, key=)"
                ));
            };
            let name = name.trim();
            match name {
                "algo" => {
                    // The names the command line takes for --algo.
                    let found = value.trim().parse::<Algorithm>();
                    let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                    let found = found.map_err(|_| {
                        format!("algo={value} is not a limiter: one of {}", names.join(", "))
                    })?;
                    once(&mut algorithm, found, name)?;
                }
                "rate" => {
                    let found = value.trim().parse().map_err(|e| format!("rate={value}: {e}"))?;
                    once(&mut rate, found, name)?;
                }
                "burst" => {
                    let found = value.trim().parse::<u64>().map_err(|_| {
                        format!("burst={value} is not a whole number (0 only for nginx)")
                    })?;
                    once(&mut burst, found, name)?;
                }
                "cost" => {
                    let found = value.trim().parse().map_err(|e| format!("cost={value}: {e}"))?;
                    once(&mut cost, found, name)?;
                }
                word if rate_key(word) => {
                    if words.iter().any(|&(given, _)| given == word) {
                        return Err(format!("{word}= is given twice"));
                    }
                    words.push((word, value.trim()));
                }
                "key" if !value.trim().is_empty() => once(&mut key, column(value.trim()), name)?,
                "key" => return Err("key= needs a column's name".into()),
                own if Algorithm::taking(own).next().is_some() => {
                    params.give(own, Some(value.trim()))?;
                }
                other => {
                    let mut keys = vec!["algo", "rate", "burst", "cost", "key"];
                    for words in Algorithm::ALL.iter().filter_map(|a| a.rate_words()) {
                        keys.extend(words.keys);
                    }
                    for algorithm in Algorithm::ALL {
                        for own in algorithm.param_keys() {
                            if !keys.contains(own) {
                                keys.push(own);
                            }
                        }
                    }
                    let last = keys.pop().unwrap_or_default();
                    return Err(format!(
                        "'{other}' is not a key of a limit: {} or {last}",
                        keys.join(", ")
                    ));
                }
            }
        }
        let algorithm = algorithm.ok_or("a limit needs algo=")?;
        let rate = match (rate, &words[..]) {
            (Some(rate), []) => rate,
            (None, []) => return Err("a limit needs rate=".into()),
            (Some(_), _) => {
                let keys: Vec<&str> = words.iter().map(|&(key, _)| key).collect();
                return Err(format!(
                    "rate= and {}= say one thing twice: give one",
                    keys.join("=/")
                ));
            }
            (None, _) => rate_in_words(algorithm, &words)?,
        };
        if burst.is_some() && !algorithm.uses_burst() {
            let with_burst = crate::cli::config::with_burst();
            return Err(format!("burst= applies to {with_burst}, not {}", algorithm.name()));
        }
        if let Some(shown) = burst {
            crate::cli::config::burst_of(algorithm, shown, "burst=")?;
        }
        let refused = cost.as_ref().and_then(|c| cost_refused(c, [algorithm], "cost="));
        if let Some(why) = refused {
            return Err(why);
        }
        // The limiter reads its own parameters now, so that a spec it refuses is refused
        // as it is read.
        params.settle(algorithm, true, "")?;
        Ok(LayerSpec { algorithm, rate, burst, cost: cost.unwrap_or_default(), key, params })
    }
}

/// Whether `key` is one a system writes a rate with in place of `rate=`.
fn rate_key(key: &str) -> bool {
    Algorithm::ALL.iter().filter_map(|a| a.rate_words()).any(|words| words.keys.contains(&key))
}

/// Reads a rate given in a system's own `words` for `algorithm`: by its limiter if the
/// words are its system's, else a one-line error naming whose they are.
fn rate_in_words(algorithm: Algorithm, words: &[(&str, &str)]) -> Result<Rate, String> {
    let given = |keys: &[&str]| words.iter().all(|(key, _)| keys.contains(key));
    match algorithm.rate_words().filter(|own| given(own.keys)) {
        Some(own) => match (own.read)(words) {
            Some(read) => {
                let spec: Vec<String> = words.iter().map(|(k, v)| format!("{k}={v}")).collect();
                read.map_err(|e| format!("{}: {e}", spec.join(",")))
            }
            None => Err(format!("{}'s rate is {}", own.system, own.how)),
        },
        None => {
            let owner =
                Algorithm::ALL.iter().filter_map(|a| a.rate_words()).find(|w| given(w.keys));
            let (keys, system) = owner.map_or((String::new(), "another system"), |w| {
                (w.keys.iter().map(|k| format!("{k}=")).collect::<Vec<_>>().join(" and "), w.system)
            });
            let name = algorithm.name();
            Err(format!("{keys} are {system}'s; for {name} write rate=N/PERIOD"))
        }
    }
}

/// Sets `slot` to `value`, the value of key `name`, which may be given only once.
fn once<T>(slot: &mut Option<T>, value: T, name: &str) -> Result<(), String> {
    match slot.replace(value) {
        Some(_) => Err(format!("{name}= is given twice")),
        None => Ok(()),
    }
}

/// Writes the spec back in the form it is read in, with only what was given or matters.
impl fmt::Display for LayerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The rate in its system's own words where it has them (nginx's `rate=10r/s`,
        // Traefik's `average=100,period=1m`), as its configuration writes it.
        let name = self.algorithm.name();
        match self.algorithm.rate_words().and_then(|words| (words.written)(self.rate)) {
            Some(words) => write!(f, "algo={name},{words}")?,
            None => write!(f, "algo={name},rate={}", self.rate)?,
        }
        if let Some(burst) = self.burst {
            write!(f, ",burst={burst}")?;
        }
        if self.cost != Cost::default() {
            write!(f, ",cost={}", self.cost)?;
        }
        if let Some(key) = &self.key {
            write!(f, ",key={key}")?;
        }
        if !self.params.is_empty() {
            write!(f, ",{}", self.params)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_docker_mount_style_says() {
        let spec: LayerSpec = "algo=gcra,rate=60/m,burst=10,key=api_key".parse().unwrap();
        assert_eq!(spec.algorithm, Algorithm::Gcra);
        assert_eq!(spec.burst, Some(10));
        assert_eq!((spec.cost.clone(), spec.key.as_deref()), (Cost::Each(1), Some("api_key")));
        assert_eq!(spec.to_string(), "algo=gcra,rate=60/m,burst=10,key=api_key");
        let tokens: LayerSpec = "rate=200000/m,algo=gcra,cost=total_tokens".parse().unwrap();
        assert_eq!(tokens.cost, Cost::Column("total_tokens".into()));
        assert_eq!(tokens.to_string(), "algo=gcra,rate=200000/m,cost=total_tokens");
    }

    #[test]
    fn says_what_is_wrong() {
        let error = |text: &str| text.parse::<LayerSpec>().unwrap_err();
        assert_eq!(error("rate=5/h"), "a limit needs algo=");
        assert_eq!(error("algo=gcra"), "a limit needs rate=");
        assert!(error("algo=gcra,rate=5/h,rate=6/h").contains("rate= is given twice"));
        assert!(error("algo=nope,rate=5/h").contains("not a limiter"));
        assert!(error("algo=gcra,rate=5/h,size=3").contains("'size' is not a key"));
        assert!(error("algo=gcra,rate=5/h,burst").contains("not key=value"));
        assert!(error("algo=sliding-log,rate=5/h,burst=3").contains("not sliding-log"));
        assert!(
            error("algo=gcra,rate=5/h,burst=0").starts_with("burst=0: a burst must be at least 1")
        );
        assert!("algo=nginx,rate=5/s,burst=0".parse::<LayerSpec>().is_ok());
        assert!(error("algo=gcra,rate=5/h,key=").contains("needs a column"));
        assert_eq!(error("algo=gcra,rate=5/h,nodelay"), "nodelay applies to nginx, not gcra");
        assert!(error("algo=nginx,rate=5/s,nodelay,delay=2").contains("give one"));
        assert!(error("algo=nginx,rate=5/s,delay=x").contains("not a whole number"));
    }

    #[test]
    fn nginx_layers_take_its_delay_nodelay_and_dry_run() {
        for text in ["algo=nginx,rate=5r/s,burst=3,delay=2", "algo=nginx,rate=30r/m,nodelay"] {
            assert_eq!(text.parse::<LayerSpec>().unwrap().to_string(), text);
        }
        let dry: LayerSpec = "algo=nginx,rate=5/s,dry-run".parse().unwrap();
        let settled = dry.params.settle(dry.algorithm, true, "").unwrap();
        assert_eq!(settled.to_string(), "dry-run");
        // In nginx's notation, as its config writes the rate; one it cannot write, as ours.
        assert_eq!(dry.to_string(), "algo=nginx,rate=5r/s,dry-run");
        let odd: LayerSpec = "algo=nginx,rate=5/h".parse().unwrap();
        assert_eq!(odd.rate, "5/h".parse().unwrap());
        // Traefik's own names for its rate: average a period, 1s unless said.
        let traefik: LayerSpec = "algo=traefik,average=100,period=1m,burst=50".parse().unwrap();
        assert_eq!(traefik.rate, "100/m".parse().unwrap());
        assert_eq!(traefik.to_string(), "algo=traefik,average=100,period=1m,burst=50");
        let second: LayerSpec = "algo=traefik,average=5".parse().unwrap();
        assert_eq!(second.rate, "5/s".parse().unwrap());
        let error = |text: &str| text.parse::<LayerSpec>().unwrap_err();
        assert!(error("algo=gcra,average=5").starts_with("average= and period= are Traefik's"));
        assert!(error("algo=traefik,rate=5/s,average=5").contains("give one"));
        // HAProxy's: sc_http_req_rate(0) gt N over http_req_rate(PERIOD).
        let haproxy: LayerSpec = "algo=haproxy,http_req_rate=10s,gt=20".parse().unwrap();
        assert_eq!(haproxy.rate, "20/10s".parse().unwrap());
        assert_eq!(haproxy.to_string(), "algo=haproxy,http_req_rate=10s,gt=20");
        assert!(error("algo=haproxy,gt=20").contains("give both"));
        let gcra = error("algo=gcra,gt=20,http_req_rate=1s");
        assert!(gcra.starts_with("gt= and http_req_rate= are HAProxy's"), "{gcra}");
        assert_eq!(odd.to_string(), "algo=nginx,rate=5/h");
    }
}
