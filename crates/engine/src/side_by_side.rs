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
    /// When the times are whole seconds and events share them: what the configuration
    /// passes and drops with those ties read the other way (`--ties`), so that both
    /// readings, which bound what the events could have been, are in view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_ties: Option<OtherTies>,
}

/// What a configuration does with whole-second ties read the other way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OtherTies {
    /// The other reading: `spread` (each second's tied events spread evenly across it, in
    /// the order they came) or `together` (simultaneous, as written).
    pub ties: String,
    /// The events it passes so.
    pub passed: u64,
    /// The events it drops so.
    pub dropped: u64,
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
    /// What the first configuration dropped of them.
    pub dropped_first: u64,
    /// What the second configuration dropped of them.
    pub dropped_second: u64,
    /// `dropped_second` less `dropped_first`: more dropped if positive.
    pub change: i64,
    /// Whether the first configuration dropped none of its events and the second drops
    /// some.
    pub newly_throttled: bool,
    /// Whether the first configuration dropped some of its events and the second drops
    /// none.
    pub no_longer_throttled: bool,
}

impl KeyChange {
    /// A key's change from its four counts: events, first passed, second passed, changed.
    fn of(key: String, [events, first_passed, second_passed, changed]: [u64; 4]) -> KeyChange {
        let (dropped_first, dropped_second) = (events - first_passed, events - second_passed);
        // At most u32::MAX events a key are kept: the difference fits an i64.
        let change = i64::try_from(dropped_second).unwrap_or(i64::MAX)
            - i64::try_from(dropped_first).unwrap_or(i64::MAX);
        KeyChange {
            key,
            events,
            first_passed,
            second_passed,
            changed,
            dropped_first,
            dropped_second,
            change,
            newly_throttled: dropped_first == 0 && dropped_second > 0,
            no_longer_throttled: dropped_first > 0 && dropped_second == 0,
        }
    }
}

/// Two configurations compared key by key (`compare --by-key`): a row a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ByKey {
    /// The column the keys come from.
    pub column: String,
    /// The keys kept, the most newly dropped first, then by name.
    pub keys: Vec<KeyChange>,
}

/// Which keys a per-key comparison keeps (`--only`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KeysKept {
    /// Every key.
    #[default]
    All,
    /// Those with an event whose decision changes.
    Changed,
    /// Those the first configuration never throttled and the second does.
    NewlyThrottled,
    /// Those the first configuration throttled and the second never does.
    NoLongerThrottled,
}

impl KeysKept {
    /// Whether `key` is kept.
    fn keeps(self, key: &KeyChange) -> bool {
        match self {
            KeysKept::All => true,
            KeysKept::Changed => key.changed > 0,
            KeysKept::NewlyThrottled => key.newly_throttled,
            KeysKept::NoLongerThrottled => key.no_longer_throttled,
        }
    }
}

/// Each key's four counts (events, first passed, second passed, changed), from each
/// event's key `of` and the two configurations' decisions.
fn key_counts(of: &[u32], first: &[bool], second: &[bool]) -> HashMap<u32, [u64; 4]> {
    let mut counts: HashMap<u32, [u64; 4]> = HashMap::new();
    for (&key, (&a, &b)) in of.iter().zip(first.iter().zip(second)) {
        let c = counts.entry(key).or_default();
        c[0] += 1;
        c[1] += u64::from(a);
        c[2] += u64::from(b);
        c[3] += u64::from(a != b);
    }
    counts
}

/// Orders keys by name, IP addresses among themselves in numeric order (IPv4 before
/// IPv6), before every other name, which goes in byte order.
fn by_name(a: &str, b: &str) -> std::cmp::Ordering {
    let ip = |name: &str| name.parse::<std::net::IpAddr>().ok();
    match (ip(a), ip(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Every key's events under the two configurations, `first` and `second` (decisions on the
/// same events, each of key `of[n]`, named in `names`), those `kept` keeps: the most newly
/// dropped first (by `change`, down to the most newly passed), then by name.
pub fn by_key(
    first: &[bool],
    second: &[bool],
    (of, names): (&[u32], &KeyTable),
    kept: KeysKept,
) -> Vec<KeyChange> {
    let mut keys: Vec<KeyChange> = (key_counts(of, first, second).into_iter())
        .map(|(key, counts)| KeyChange::of(names.name(key), counts))
        .filter(|key| kept.keeps(key))
        .collect();
    keys.sort_by(|x, y| y.change.cmp(&x.change).then_with(|| by_name(&x.key, &y.key)));
    keys
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
            let mut changed: Vec<KeyChange> = (key_counts(of, first, second).into_iter())
                .filter(|(_, c)| c[3] > 0)
                .map(|(key, c)| KeyChange::of(names.name(key), c))
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
