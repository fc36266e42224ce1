//! The report of a policy: of one limit, or of layers all or nothing, one type and one
//! schema either way; and what each layer needs.

use schemars::JsonSchema;
use serde::Serialize;

use crate::live_check::{Check, LayeredCheck};
use crate::report::LimiterReport;

/// What a command found, of one limit or of layers all or nothing: one report either way
/// (`replay`'s and `check`'s), and one schema, whose JSON is the variant's. A layer's
/// figures are one limit's, beside what it refused, so a program reads a limit the same
/// way in both.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "{One}OrLayers")]
pub enum PolicyReport<One, Layers> {
    /// One limit (`--algo`), alone.
    One(One),
    /// Layers all or nothing (`--limit`, given again for each).
    Layers(Layers),
}

/// What `replay` found: one limit's report, or the layers'.
pub type ReplayReport = PolicyReport<LimiterReport, LayeredReport>;

/// What `check` answered: one limit's decision, or the layers'.
pub type CheckReport = PolicyReport<Check, LayeredCheck>;

/// What a layered replay (`--limit`, given again for each layer) found: every event, those
/// every layer admitted, and each layer.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct LayeredReport {
    /// The input's name: its path, `<stdin>` or `<sample>`.
    pub input: String,
    /// The events read, after the filters.
    pub events: u64,
    /// The events every layer admitted: each passed event charged every layer.
    pub passed: u64,
    /// The events some layer refused: a refused event charges no layer.
    pub dropped: u64,
    /// Each layer, in the order of the `--limit` flags.
    pub layers: Vec<LayerReport>,
}

/// One layer of a layered replay: its spec, the events it refused (counting each it would
/// refuse, whatever the others said), those only it refused, and its limiter's report over
/// the events every layer admitted.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct LayerReport {
    /// The layer's `--limit` SPEC, its keys in a fixed order.
    pub spec: String,
    /// The events this layer would refuse when asked, whatever the other layers said.
    pub refused: u64,
    /// The events only this layer refused: every other layer admitted them.
    pub only: u64,
    /// The events this layer would refuse as the only limit: deciding every event alone,
    /// charged by its own decisions. A layer that refuses none in the run may refuse many
    /// alone, when another layer refuses first.
    pub alone: u64,
    #[serde(flatten)]
    pub limiter: LimiterReport,
}

/// What `min-bucket --limit … --limit …` found: each layer's smallest lossless bucket (a
/// layer that drops nothing sees every event, so its need is its own), and the tightest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LayerNeeds {
    /// The input's name: its path, `<stdin>` or `<sample>`.
    pub input: String,
    /// Each layer's need, in the order of the `--limit` flags.
    pub layers: Vec<LayerNeed>,
    /// The spec of the bucket layer (token-bucket, gcra, leaky-queue) whose need is the
    /// largest share of its burst; `null` with no events, or no bucket layer.
    pub tightest: Option<String>,
}

/// One layer's need: its burst (N for a limiter without one), the smallest lossless token
/// bucket at its rate and cost (for a keyed layer, its worst key's, named), and, for a
/// layer that is a bucket (token-bucket, gcra, leaky-queue, which lose nothing exactly
/// when that bucket fits in their burst), whether it fits; `null` for the windows, whose
/// loss a bucket does not tell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LayerNeed {
    /// The layer's `--limit` SPEC.
    pub spec: String,
    /// The layer's burst, or its N for a limiter without one.
    pub burst: u64,
    /// The smallest lossless token bucket at the layer's rate and cost; for a keyed layer,
    /// its worst key's.
    pub min_bucket: u64,
    /// For a keyed layer: the key that needs `min_bucket`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_key: Option<String>,
    /// For a bucket layer (token-bucket, gcra, leaky-queue): whether `min_bucket` fits its
    /// burst, so that it loses nothing; `null` for a window, whose loss a bucket does not
    /// tell.
    pub fits: Option<bool>,
}

impl LayerNeeds {
    /// Returns each layer's need, from a layered replay's report.
    pub fn of(report: &LayeredReport) -> LayerNeeds {
        let layers: Vec<LayerNeed> = (report.layers.iter())
            .map(|layer| {
                let r = &layer.limiter;
                let burst = r.burst.unwrap_or(r.rate.count());
                let min_bucket = r.min_bucket;
                LayerNeed {
                    spec: layer.spec.clone(),
                    burst,
                    min_bucket,
                    worst_key: r.worst_key.as_ref().map(|w| w.key.clone()),
                    // Against b: a system's shown burst may leave out the first request.
                    fits: (r.burst)
                        .and_then(|shown| r.algorithm.burst_from(shown))
                        .map(|b| min_bucket <= b.get()),
                }
            })
            .collect();
        // The largest need over burst, compared exactly: a/b > c/d iff a·d > c·b.
        let share = |n: &LayerNeed| (u128::from(n.min_bucket), u128::from(n.burst));
        let tightest = (report.events > 0)
            .then(|| {
                layers.iter().filter(|n| n.fits.is_some()).reduce(|best, n| {
                    let ((a, b), (c, d)) = (share(n), share(best));
                    if a * d > c * b { n } else { best }
                })
            })
            .flatten()
            .map(|n| n.spec.clone());
        LayerNeeds { input: report.input.clone(), layers, tightest }
    }
}
