//! What `compare --limit … --limit …` reports: whole configurations side by side over the
//! same events, and what changes from the first to the second.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::input::keys::KeyTable;
use crate::report::LimiterReport;

/// Configurations side by side: each a whole limit (limiter, rate, burst, key, cost and a
/// system's own parameters) deciding every event on its own.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SideBySide {
    /// The input's name: its path, `<stdin>` or `<sample>`.
    pub input: String,
    /// The events read, after the filters: each configuration decides every one of them.
    pub events: u64,
    /// Each configuration, in the order of the `--limit` flags.
    pub configurations: Vec<Configuration>,
    /// With two configurations: what changes from the first to the second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Changes>,
}

/// One configuration: its spec, and its limiter's report over every event.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Configuration {
    /// The configuration's `--limit` SPEC, its keys in a fixed order.
    pub spec: String,
    #[serde(flatten)]
    pub limiter: LimiterReport,
}

/// What changes from the first configuration to the second, event by event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Changes {
    /// The events the first configuration passes and the second refuses.
    pub newly_refused: u64,
    /// The events the first configuration refuses and the second passes.
    pub newly_passed: u64,
    /// With a key column: the keys whose passed events change, those that change most
    /// first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeyChanges>,
}

/// The keys whose passed events change between the configurations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeyChanges {
    /// The column the keys come from.
    pub column: String,
    /// How many keys have events whose decision changes.
    pub changed: u64,
    /// The keys that change most (`--top` of them; 0 for all): the largest difference in
    /// passed events first, then the most changed decisions, then by name.
    pub top: Vec<KeyChange>,
}

/// One key's events under the two configurations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeyChange {
    /// The key.
    pub key: String,
    /// Its events.
    pub events: u64,
    /// What the first configuration passed of them.
    pub first_passed: u64,
    /// What the second configuration passed of them.
    pub second_passed: u64,
    /// Its events whose decision changes, either way.
    pub changed: u64,
}

impl Changes {
    /// Returns what changes from `first` to `second`, the decisions on the same events in
    /// the same order; with `keys` (each event's key, the column, and the keys' names),
    /// the `top` keys that change most (0 for all).
    pub fn between(
        first: &[bool],
        second: &[bool],
        keys: Option<(&[u32], &str, &KeyTable)>,
        top: usize,
    ) -> Changes {
        let pairs = || first.iter().zip(second);
        // Counts of things in memory: a usize widens to u64 exactly on every target.
        let count = |want: (bool, bool)| pairs().filter(|&(&a, &b)| (a, b) == want).count() as u64;
        let keys = keys.map(|(of, column, names)| {
            // events, first passed, second passed, changed: a key's four counts.
            let mut counts: HashMap<u32, [u64; 4]> = HashMap::new();
            for (&key, (&a, &b)) in of.iter().zip(pairs()) {
                let c = counts.entry(key).or_default();
                c[0] += 1;
                c[1] += u64::from(a);
                c[2] += u64::from(b);
                c[3] += u64::from(a != b);
            }
            let mut changed: Vec<KeyChange> = (counts.into_iter())
                .filter(|(_, c)| c[3] > 0)
                .map(|(key, c)| KeyChange {
                    key: names.name(key),
                    events: c[0],
                    first_passed: c[1],
                    second_passed: c[2],
                    changed: c[3],
                })
                .collect();
            let total = changed.len() as u64; // In memory: usize widens to u64 exactly.
            changed.sort_by(|x, y| {
                let gap = |k: &KeyChange| k.first_passed.abs_diff(k.second_passed);
                (gap(y), y.changed).cmp(&(gap(x), x.changed)).then_with(|| x.key.cmp(&y.key))
            });
            if top > 0 {
                changed.truncate(top);
            }
            KeyChanges { column: column.to_owned(), changed: total, top: changed }
        });
        Changes { newly_refused: count((true, false)), newly_passed: count((false, true)), keys }
    }
}
