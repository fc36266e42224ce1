//! One limit, owned and checked as it is built: from named values, as `--limit` writes them
//! (`algo=gcra,rate=60/m,burst=10`) and as Python's `Limit(...)` takes them.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

use crate::input::cost::Cost;
use crate::limiter::{Algorithm, ParamError, Params};
use crate::policy::Settings;
use crate::units::rate::Rate;
use crate::units::time::Span;

/// The largest burst a limiter may have; see [`Rate::MAX_COUNT`] for why there is one.
pub const MAX_BURST: u64 = Rate::MAX_COUNT;

/// A limit: a limiter, its rate and burst, what each event costs it, the column whose
/// values give it a state per key (none: one state for all events), and its own
/// parameters. Built by [`Limit::from_named`] (or parsed from the `--limit` form), it is
/// checked whole: the limiter takes its burst, its cost and its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The limiter.
    pub algorithm: Algorithm,
    /// Its rate.
    pub rate: Rate,
    /// Its burst as its system writes it, for the limiters that have one.
    pub burst: Option<u64>,
    /// What each event costs it: 1 unless said.
    pub cost: Cost,
    /// The column that keys it, if any.
    pub key: Option<String>,
    /// The limiter's own parameters, as given (nginx's `delay=`, `nodelay` or `dry-run`).
    pub params: Given,
}

/// Why named values make no limit. Each message names the value, as the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// A name no limit takes.
    #[error(
        "'{name}' is not a key of a limit{}: {}",
        crate::suggest::did_you_mean(name, Limit::names()),
        known_list()
    )]
    Unknown {
        /// The name, as given.
        name: String,
    },
    /// A value, or the values together, make no limit.
    #[error("{message}")]
    Invalid {
        /// The name whose value is wrong, if one is.
        name: Option<String>,
        /// What is wrong, on one line.
        message: String,
    },
}

impl LimitError {
    fn invalid(name: Option<&str>, message: impl Into<String>) -> LimitError {
        LimitError::Invalid { name: name.map(str::to_owned), message: message.into() }
    }
}

/// The names every limit takes, whatever its limiter.
pub const COMMON: [&str; 5] = ["algo", "rate", "burst", "cost", "key"];

impl Limit {
    /// Every name a limit takes: the [`COMMON`] ones, the words a system writes its rate
    /// with (Traefik's `average=`), and each limiter's own parameters; from the registry,
    /// in that order.
    pub fn names() -> Vec<&'static str> {
        let mut names = COMMON.to_vec();
        for words in Algorithm::ALL.iter().filter_map(|a| a.rate_words()) {
            names.extend(words.keys);
        }
        for algorithm in Algorithm::ALL {
            for own in algorithm.param_keys() {
                if !names.contains(own) {
                    names.push(own);
                }
            }
        }
        names
    }

    /// Builds a limit from named values, each at most once: `algo` and `rate` (or the
    /// words of the limiter's system) are needed; a value of `None` is a bare parameter,
    /// such as nginx's `nodelay`. The whole is checked as the limiter takes it.
    pub fn from_named<'a>(
        named: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Limit, LimitError> {
        let (mut algorithm, mut rate, mut burst, mut cost, mut key) =
            (None, None::<Rate>, None, None::<Cost>, None);
        let mut params = Given::default();
        // A rate in a system's own words (Traefik's `average`, HAProxy's `gt`), which the
        // limiter reads once it is known.
        let mut words: Vec<(&str, &str)> = Vec::new();
        let mut burst_word = None;
        for (name, value) in named {
            let Some(value) = value.map(str::trim) else {
                if Algorithm::taking(name).next().is_some() {
                    params.give(name, None)?;
                    continue;
                }
                return Err(match Limit::names().contains(&name) {
                    true => LimitError::invalid(Some(name), format!("{name}= needs a value")),
                    false => LimitError::Unknown { name: name.to_owned() },
                });
            };
            let bad = |message: String| LimitError::invalid(Some(name), message);
            match name {
                "algo" => {
                    let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
                    let found = value.parse::<Algorithm>().map_err(|_| {
                        let hint = crate::suggest::did_you_mean(value, names.iter().copied());
                        bad(format!(
                            "algo={value} is not a limiter{hint}: one of {}",
                            names.join(", ")
                        ))
                    })?;
                    once(&mut algorithm, found, name)?;
                }
                "rate" => {
                    let found = value.parse().map_err(|e| bad(format!("rate={value}: {e}")))?;
                    once(&mut rate, found, name)?;
                }
                "burst" => {
                    let found = value.parse::<u64>().map_err(|_| {
                        bad(format!("burst={value} is not a whole number (0 only for nginx)"))
                    })?;
                    once(&mut burst, found, "burst")?;
                }
                // A system's own name for its burst (redis-cell's `max_burst`), checked
                // against the limiter once it is known.
                word if Algorithm::ALL.iter().any(|a| a.burst_word() == Some(word)) => {
                    let found = value
                        .parse::<u64>()
                        .map_err(|_| bad(format!("{word}={value} is not a whole number")))?;
                    once(&mut burst, found, "burst")?;
                    burst_word = Some(word);
                }
                "cost" => {
                    let found = value.parse().map_err(|e| bad(format!("cost={value}: {e}")))?;
                    once(&mut cost, found, name)?;
                }
                word if rate_key(word) => {
                    if words.iter().any(|&(given, _)| given == word) {
                        return Err(bad(format!("{word}= is given twice")));
                    }
                    words.push((word, value));
                }
                "key" if !value.is_empty() => once(&mut key, column(value), name)?,
                "key" => return Err(bad("key= needs a column's name".into())),
                own if Algorithm::taking(own).next().is_some() => params.give(own, Some(value))?,
                other => return Err(LimitError::Unknown { name: other.to_owned() }),
            }
        }
        let algorithm =
            algorithm.ok_or_else(|| LimitError::invalid(Some("algo"), "a limit needs algo="))?;
        let rate = match (rate, &words[..]) {
            (Some(rate), []) => rate,
            (None, []) => return Err(LimitError::invalid(Some("rate"), "a limit needs rate=")),
            (Some(_), _) => {
                let keys: Vec<&str> = words.iter().map(|&(key, _)| key).collect();
                let message =
                    format!("rate= and {}= say one thing twice: give one", keys.join("=/"));
                return Err(LimitError::invalid(Some("rate"), message));
            }
            (None, _) => rate_in_words(algorithm, &words)?,
        };
        if let Some(word) = burst_word.filter(|&word| algorithm.burst_word() != Some(word)) {
            let owners = Algorithm::ALL.iter().filter(|a| a.burst_word() == Some(word));
            let owners: Vec<&str> = owners.map(|a| a.name()).collect();
            let message = format!(
                "{word}= is {}'s burst: {} takes burst=",
                owners.join(", "),
                algorithm.name()
            );
            return Err(LimitError::invalid(Some(word), message));
        }
        let burst_error = |message: String| LimitError::invalid(Some("burst"), message);
        if burst.is_some() && !algorithm.uses_burst() {
            let message = format!("burst= applies to {}, not {}", with_burst(), algorithm.name());
            return Err(burst_error(message));
        }
        if let Some(shown) = burst {
            burst_of(algorithm, shown, "burst=").map_err(burst_error)?;
        }
        if let Some(why) = cost.as_ref().and_then(|c| cost_refused(c, [algorithm], "cost=")) {
            return Err(LimitError::invalid(Some("cost"), why));
        }
        // The limiter reads its own parameters now, so that a limit it refuses is refused
        // as it is built.
        params.settle(algorithm, true, "")?;
        Ok(Limit { algorithm, rate, burst, cost: cost.unwrap_or_default(), key, params })
    }
}

impl Limit {
    /// Settles the limit's settings: its burst as a bucket (the system's own default if
    /// none is given), its parameters read by its limiter, and a busiest window `window`
    /// long (the rate's period if `None`; a window given is longer than zero, as its
    /// reader checks). A burst given to a limiter without one is an error when the user
    /// named that limiter (`strict`), and ignored when it is one of several; each key is
    /// written after `prefix` in messages (`--` for flags).
    pub fn settings(
        &self,
        window: Option<Span>,
        strict: bool,
        prefix: &str,
    ) -> Result<Settings, LimitError> {
        let Limit { algorithm, rate, .. } = *self;
        if let Some(why) = algorithm.refuses(rate) {
            return Err(LimitError::invalid(Some("rate"), why));
        }
        let flag = if prefix == "--" { "--burst" } else { "burst=" };
        let too_big = |message: String| LimitError::invalid(Some("burst"), message);
        let burst = match self.burst {
            Some(_) if strict && !algorithm.uses_burst() => {
                let name = algorithm.name();
                return Err(too_big(format!("{flag} applies to {}, not {name}", with_burst())));
            }
            Some(b) if b > MAX_BURST => {
                return Err(too_big(format!("{flag} may be at most {MAX_BURST}")));
            }
            Some(b) => burst_of(algorithm, b, flag).map_err(too_big)?,
            // A system's own default (nginx's burst=0, Traefik's 1), or N.
            None => algorithm.default_burst(rate),
        };
        let params = self.params.settle(algorithm, strict, prefix)?;
        let window = window.unwrap_or(rate.period());
        Ok(Settings { algorithm, rate, burst, window, params })
    }
}

/// Reads the comma-separated `key=value` form of `docker --mount`, as `--limit` takes it:
/// each key at most once, and a limiter's bare parameter (nginx's `nodelay`) alone.
impl FromStr for Limit {
    type Err = LimitError;

    fn from_str(text: &str) -> Result<Limit, LimitError> {
        if let Some(meant) = crate::suggest::nginx_directive(text) {
            let rate =
                if meant.contains("rate=RATE") { ", RATE its limit_req_zone's rate" } else { "" };
            let message = format!(
                "'{text}' is an nginx directive: a SPEC is key=value parts joined by commas \
                 (did you mean '{meant}'{rate}?)"
            );
            return Err(LimitError::invalid(None, message));
        }
        if let Some(joined) = crate::suggest::spaced(text) {
            let message = format!(
                "'{text}' is spaced: a SPEC's parts are joined by commas (did you mean '{joined}'?)"
            );
            return Err(LimitError::invalid(None, message));
        }
        let mut named = Vec::new();
        for part in text.split(',') {
            let bare = part.trim();
            if !bare.contains('=') && Algorithm::taking(bare).next().is_some() {
                named.push((bare, None));
                continue;
            }
            let Some((name, value)) = part.split_once('=') else {
                // A limiter's own bare word, misspelled (nodealy), is offered as it is.
                let hint = crate::suggest::did_you_mean(bare, Limit::names());
                let message =
                    format!("'{part}' is not key=value (algo=, rate=, burst=, cost=, key=){hint}");
                return Err(LimitError::invalid(None, message));
            };
            named.push((name.trim(), Some(value)));
        }
        Limit::from_named(named)
    }
}

/// Writes the limit back in the form it is read in, with only what was given or matters.
impl fmt::Display for Limit {
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

/// A limiter's own parameters as given, each key with its value (`None` for a bare key), in
/// the order given: by flags (`--delay 2`), in a `--limit` spec (`delay=2`) or by keyword.
/// The limiter reads them ([`Algorithm::params`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Given(pub Vec<(String, Option<String>)>);

impl Given {
    /// Settles `algorithm`'s parameters. A key it does not take is an error when the user
    /// named that limiter (`strict`), naming the limiters that take it, each key written
    /// after `prefix` (`--` for flags); one of several limiters keeps its defaults.
    pub fn settle(
        &self,
        algorithm: Algorithm,
        strict: bool,
        prefix: &str,
    ) -> Result<Params, LimitError> {
        let given: Vec<(&str, Option<&str>)> =
            self.0.iter().map(|(key, value)| (key.as_str(), value.as_deref())).collect();
        match algorithm.params(&given) {
            Ok(params) => Ok(params),
            Err(ParamError::NotMine(_)) if !strict => Ok(algorithm.default_params()),
            Err(ParamError::NotMine(key)) => {
                let owners: Vec<&str> = Algorithm::taking(&key).map(Algorithm::name).collect();
                // Flags are nginx's; any other limiter's parameter is given by `--param`.
                let nginx = Algorithm::Nginx.param_keys().contains(&key.as_str());
                let prefix = if prefix == "--" && !nginx { "--param " } else { prefix };
                let message = format!(
                    "{prefix}{key} applies to {}, not {}",
                    owners.join(", "),
                    algorithm.name()
                );
                Err(LimitError::Invalid { name: Some(key), message })
            }
            Err(e) => {
                let name = match &e {
                    ParamError::Value { key, .. } => Some(key.clone()),
                    _ => None,
                };
                Err(LimitError::Invalid { name, message: e.to_string() })
            }
        }
    }

    /// Adds parameter `key`, with its value (none for a bare key); a key given twice is an
    /// error, as a spec writes it.
    pub fn give(&mut self, key: &str, value: Option<&str>) -> Result<(), LimitError> {
        if self.0.iter().any(|(given, _)| given == key) {
            let eq = if value.is_some() { "=" } else { "" };
            return Err(LimitError::invalid(Some(key), format!("{key}{eq} is given twice")));
        }
        self.0.push((key.to_owned(), value.map(str::to_owned)));
        Ok(())
    }

    /// Whether none was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Given {
    /// As a spec writes them: `delay=2`, `nodelay`, joined by commas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, value)) in self.0.iter().enumerate() {
            let comma = if i == 0 { "" } else { "," };
            match value {
                Some(value) => write!(f, "{comma}{key}={value}")?,
                None => write!(f, "{comma}{key}")?,
            }
        }
        Ok(())
    }
}

/// Returns the column a key names: an nginx variable names an access log's field
/// (`$binary_remote_addr` and `$remote_addr` the client); any other name is the column's.
pub fn column(name: &str) -> String {
    match name.strip_prefix('$') {
        Some("binary_remote_addr") => "remote_addr".to_owned(),
        Some(variable) if !variable.is_empty() => variable.to_owned(),
        _ => name.to_owned(),
    }
}

/// Returns the burst b of `algorithm` given as its system writes it (`shown`, by `flag`):
/// nginx's counts the requests beyond the first, so its burst=0 is a bucket of one; any
/// other is b itself, at least 1.
pub fn burst_of(algorithm: Algorithm, shown: u64, flag: &str) -> Result<NonZeroU64, String> {
    algorithm.burst_from(shown).ok_or_else(|| {
        let flag = if flag.ends_with('=') { format!("{flag}0") } else { format!("{flag} 0") };
        format!(
            "{flag}: a burst must be at least 1 (only nginx's counts the requests beyond the \
             first, and may be 0)"
        )
    })
}

/// Names the limiters that take a burst, for errors.
pub fn with_burst() -> String {
    let names: Vec<&str> =
        Algorithm::ALL.iter().filter(|a| a.uses_burst()).map(|a| a.name()).collect();
    match names.split_last() {
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Why `cost` (given by `given_by`) is refused by one of `algorithms`, which count each
/// request once: `None` if every event costs 1, or all of them spend a cost.
pub fn cost_refused(
    cost: &Cost,
    algorithms: impl IntoIterator<Item = Algorithm>,
    given_by: &str,
) -> Option<String> {
    if *cost == Cost::Each(1) {
        return None;
    }
    let why = algorithms.into_iter().find_map(Algorithm::refuses_cost)?;
    Some(format!("{given_by}: {why}"))
}

/// The names a limit takes, as an error lists them: `a, b or c`.
fn known_list() -> String {
    let mut names = Limit::names();
    let last = names.pop().unwrap_or_default();
    format!("{} or {last}", names.join(", "))
}

/// Whether `key` is one a system writes a rate with in place of `rate=`.
fn rate_key(key: &str) -> bool {
    Algorithm::ALL.iter().filter_map(|a| a.rate_words()).any(|words| words.keys.contains(&key))
}

/// Reads a rate given in a system's own `words` for `algorithm`: by its limiter if the
/// words are its system's, else a one-line error naming whose they are.
fn rate_in_words(algorithm: Algorithm, words: &[(&str, &str)]) -> Result<Rate, LimitError> {
    let given = |keys: &[&str]| words.iter().all(|(key, _)| keys.contains(key));
    let first = words.first().map(|&(key, _)| key);
    let message = match algorithm.rate_words().filter(|own| given(own.keys)) {
        Some(own) => match (own.read)(words) {
            Some(Ok(rate)) => return Ok(rate),
            Some(Err(e)) => {
                let spec: Vec<String> = words.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{}: {e}", spec.join(","))
            }
            None => format!("{}'s rate is {}", own.system, own.how),
        },
        None => {
            let owner =
                Algorithm::ALL.iter().filter_map(|a| a.rate_words()).find(|w| given(w.keys));
            let (keys, system) = owner.map_or((String::new(), "another system"), |w| {
                (w.keys.iter().map(|k| format!("{k}=")).collect::<Vec<_>>().join(" and "), w.system)
            });
            let name = algorithm.name();
            format!("{keys} are {system}'s; for {name} write rate=N/PERIOD")
        }
    };
    Err(LimitError::invalid(first, message))
}

/// Sets `slot` to `value`, the value of key `name`, which may be given only once.
fn once<T>(slot: &mut Option<T>, value: T, name: &str) -> Result<(), LimitError> {
    match slot.replace(value) {
        Some(_) => Err(LimitError::invalid(Some(name), format!("{name}= is given twice"))),
        None => Ok(()),
    }
}

#[cfg(test)]
#[path = "limit_tests.rs"]
mod tests;
