//! `recommend`'s answer, its JSON contract: the frontier, the point recommended and
//! why, and the window, cost and system figures asked for; and the report's contours.

use std::str::FromStr;

use schemars::JsonSchema;
use serde::Serialize;

use crate::sizing::quantile::{Percent, Quantiles};
use crate::units::rate::Rate;

/// Which point of the frontier is recommended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Prefer {
    /// The point that refuses the fewest events of the keys it touches.
    #[default]
    FewestRefused,
    /// The point with the smallest burst.
    SmallerBurst,
    /// The point with the lowest rate.
    LowerRate,
}

impl Prefer {
    /// Every choice, by its name.
    pub const ALL: [(&'static str, Prefer); 3] = [
        ("fewest-refused", Prefer::FewestRefused),
        ("smaller-burst", Prefer::SmallerBurst),
        ("lower-rate", Prefer::LowerRate),
    ];
}

impl FromStr for Prefer {
    type Err = String;

    fn from_str(text: &str) -> Result<Prefer, String> {
        let found = Prefer::ALL.iter().find(|(name, _)| *name == text);
        found.map(|&(_, prefer)| prefer).ok_or_else(|| {
            let names: Vec<&str> = Prefer::ALL.iter().map(|(name, _)| *name).collect();
            format!("'{text}' is not one of {}", names.join(", "))
        })
    }
}

/// `recommend`'s answer; in JSON, its contract.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Recommendation {
    /// The key column.
    pub column: String,
    /// How many keys there are.
    pub keys: usize,
    /// How many events they have.
    pub events: u64,
    /// The share of keys asked to lose nothing.
    pub untouched: Percent,
    /// Where the rates came from: `given`, or `spread` over the keys' demand.
    pub rates: &'static str,
    /// For each rate, the least burst (a token bucket's capacity, as `min-bucket` gives
    /// it) that leaves at least `untouched` of the keys untouched, and what the others lose.
    pub frontier: Vec<Point>,
    /// The point recommended, and why.
    pub recommended: Recommended,
    /// With `--window`: each key's busiest count in any window of that length, across the
    /// keys, and the limit that leaves the share untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowLimit>,
    /// With `--cost`: the same for the units the events cost, and both limits together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostLimits>,
    /// With `--for`: the recommended point in the system's own terms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemPoint>,
}

/// One rate of the frontier.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Point {
    /// The rate, as given (or spread).
    pub rate: Rate,
    /// `rate` per hour, as a decimal for reading.
    pub per_hour: f64,
    /// The least burst that leaves the share of keys untouched.
    pub burst: u64,
    /// The keys that lose nothing at this point: at least the share asked.
    pub untouched_keys: usize,
    /// Their events, which all pass.
    pub untouched_events: u64,
    /// The keys that lose something.
    pub touched_keys: usize,
    /// The events those keys lose: a token bucket of `burst` at `rate`, each key its own.
    pub refused: u64,
    /// With `--cost`, on the cost's frontier: the units those events would have taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_units: Option<u64>,
    /// The keys that lose most, at most 10, the most refused first (then by name).
    pub top_refused: Vec<RefusedKey>,
}

/// A key that a point touches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RefusedKey {
    /// The key.
    pub key: String,
    /// Its events.
    pub events: u64,
    /// What it loses.
    pub refused: u64,
    /// Its smallest lossless bucket at the rate.
    pub min_bucket: u64,
}

/// The point recommended.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Recommended {
    /// The point.
    #[serde(flatten)]
    pub point: Point,
    /// How it was chosen.
    pub prefer: Prefer,
    /// Why, in a sentence.
    pub why: String,
}

/// Window limits: each key's busiest count in any window of `window`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct WindowLimit {
    /// The window's length: `1m`, `10s`.
    pub window: String,
    /// The keys' busiest counts: p50, p90, p99, p99.9 and the largest.
    pub busiest: Quantiles,
    /// The least N of a sliding limit of N per window that leaves the share untouched
    /// (a fixed window's counts are never more than a sliding one's).
    pub limit: u64,
    /// The keys whose busiest count is at most `limit`.
    pub untouched_keys: usize,
}

/// With `--cost`: the frontier of the units, and the two limits together.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct CostLimits {
    /// What the events cost: the column, or the units each.
    pub cost: String,
    /// For each rate of units, the least burst of units that leaves the share untouched.
    pub frontier: Vec<Point>,
    /// The point recommended for the units alone.
    pub recommended: Recommended,
    /// Both limits, the requests' and the units', at their recommended rates, with
    /// bursts raised together until the share is untouched by both.
    pub together: Together,
}

/// A requests limit and a units limit that together leave the share untouched.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Together {
    /// The requests' rate and burst.
    pub requests: Setting,
    /// The units' rate and burst.
    pub units: Setting,
    /// The keys untouched by both.
    pub untouched_keys: usize,
    /// The events both together refuse, all or nothing, of the other keys.
    pub refused: u64,
}

/// A rate and a burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Setting {
    /// The rate.
    pub rate: Rate,
    /// The burst: a token bucket's capacity.
    pub burst: u64,
}

/// The recommended point in a system's own terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SystemPoint {
    /// The system.
    pub system: String,
    /// The setting's name in its configuration: nginx's `burst`.
    pub setting: String,
    /// Its value: the least that leaves every key the point leaves untouched untouched
    /// in the system's own arithmetic.
    pub value: u64,
    /// The keys the system leaves untouched at that value.
    pub untouched_keys: usize,
    /// The configuration, as `config --for` writes it, with the system's rounding.
    pub config: String,
}

/// One contour of the frontier: at each rate, the least burst that leaves `share` of the
/// keys untouched.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Contour {
    /// The share of keys untouched along it.
    pub share: Percent,
    /// Its points, the slowest rate first.
    pub points: Vec<ContourPoint>,
}

/// A rate and the least burst there that leaves a contour's share untouched.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct ContourPoint {
    /// The rate.
    pub rate: Rate,
    /// `rate` per hour, as a decimal for drawing.
    pub per_hour: f64,
    /// The least burst.
    pub burst: u64,
}
