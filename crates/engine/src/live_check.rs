//! What a live decision reports (`check`): the decision, with what remains and when to
//! come back, alone or over several limits at once.

use schemars::JsonSchema;
use serde::Serialize;

use crate::limiter::Algorithm;
use crate::seconds::seconds;
use crate::units::rate::Rate;
use crate::units::time::Span;

/// One live decision, with what redis-cell's `CL.THROTTLE` reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Check {
    /// The key asked about; `all` for a layer every key shares.
    pub key: String,
    /// The limiter, by its `--algo` name.
    pub algorithm: Algorithm,
    /// The rate, N per period.
    pub rate: Rate,
    /// The units the call asked for.
    pub cost: u64,
    /// Whether the call passed (and was charged).
    pub allowed: bool,
    /// The most units the limiter holds: its burst, or a window's N.
    pub limit: u64,
    /// The units left after this call.
    pub remaining: u64,
    /// When a call of this cost could pass, in seconds from now; 0 when it passed.
    #[serde(serialize_with = "seconds")]
    #[schemars(with = "f64")]
    pub retry_after_s: Span,
    /// When the limiter is back to full, in seconds from now.
    #[serde(serialize_with = "seconds")]
    #[schemars(with = "f64")]
    pub reset_after_s: Span,
}

/// One live decision over several limits at once (`check --limit … --limit …`): whether
/// the call passed every layer (then each was charged), the longest any layer asks to wait,
/// and each layer's own answer, as if asked alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LayeredCheck {
    /// The key asked about.
    pub key: String,
    /// Whether every layer admitted the call; then each was charged, else none was.
    pub allowed: bool,
    /// The longest any layer asks to wait, in seconds.
    #[serde(serialize_with = "seconds")]
    #[schemars(with = "f64")]
    pub retry_after_s: Span,
    /// Each layer's answer as if asked alone, in the order of the `--limit` flags.
    pub layers: Vec<LayerCheck>,
}

/// One layer of a layered check: its spec, and its decision, its `key` the call's if the
/// layer is keyed, else `all`: one limit that every key shares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LayerCheck {
    /// The layer's `--limit` SPEC.
    pub spec: String,
    /// Whether the layer is keyed: if not, it is one limit every key shares.
    pub keyed: bool,
    #[serde(flatten)]
    pub check: Check,
}
