//! A limiter's own parameters: what a system takes beside a rate and a burst.

use std::fmt::{Debug, Display};

/// The parameters a limiter takes beside its rate and its burst, each written `key` or
/// `key=value` as a `--limit` spec writes them: nginx's `delay=D`, `nodelay` and
/// `dry-run`; nothing for the exact limiters. Each limiter declares its own type in its own
/// file ([`Rule::Params`](super::Rule::Params)).
pub trait Parameters: Copy + Debug + Default + PartialEq + Eq + Display {
    /// The keys it takes, for messages and help.
    const KEYS: &'static [&'static str];

    /// Reads the parameters from what was given, each key with its value (`None` for a bare
    /// key); none given is the system's own default, [`Default::default`]. A key not in
    /// [`KEYS`](Parameters::KEYS) is [`ParamError::NotMine`].
    fn parse(given: &[(&str, Option<&str>)]) -> Result<Self, ParamError>;

    /// What a report shows of them, under `delay` in the JSON; nothing by default.
    fn shown(&self) -> Option<String> {
        None
    }

    /// Whether the limiter, so set, says how long each event it admits waits (nginx with
    /// `delay=`).
    fn tells_waits(&self) -> bool {
        false
    }
}

/// Why parameters cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// A key the limiter does not take.
    #[error("{0} is not a parameter of this limiter")]
    NotMine(String),
    /// A value the key does not take, and why.
    #[error("{key}={value} {why}")]
    Value {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What the key takes.
        why: &'static str,
    },
    /// Keys given together that say different things, or one key twice.
    #[error("{0}")]
    Conflict(&'static str),
}

/// The parameters of a limiter that takes none: the exact limiters, and systems with none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoParams;

impl Display for NoParams {
    /// Nothing: a spec writes no parameter.
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Ok(())
    }
}

impl Parameters for NoParams {
    const KEYS: &'static [&'static str] = &[];

    fn parse(given: &[(&str, Option<&str>)]) -> Result<NoParams, ParamError> {
        match given.first() {
            Some(&(key, _)) => Err(ParamError::NotMine(key.to_owned())),
            None => Ok(NoParams),
        }
    }
}
