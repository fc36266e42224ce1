//! Limits taken together: the one column that keys them and the one that weighs them, the
//! layers, all or nothing, that they make, and the policy a user gives.

use crate::fleet_ask::FleetAsk;
use crate::input::asked::{Asked, AskedError, Names};
use crate::input::catalog::{ReadOptions, Source};
use crate::input::cost::Cost;
use crate::layered::{Layer, MAX_LAYERS};
use crate::limit::{Limit, LimitError};
use crate::units::time::Span;

/// The columns that limits taken together read: the one that keys the keyed ones, and the
/// one that weighs those weighed by a column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns<'a> {
    /// The column keying every keyed limit, if one is.
    pub key: Option<&'a str>,
    /// The column weighing every limit weighed by a column, if one is.
    pub cost: Option<&'a str>,
}

/// Returns the columns `limits` read together: they may be keyed, all by one column, and
/// weighed, all by one column (or each by a number). `noun` is what they are to the user:
/// "layers", or compare's "configurations".
pub fn columns<'a>(limits: &'a [Limit], noun: &str) -> Result<Columns<'a>, LimitError> {
    let key = one_column(limits.iter().filter_map(|s| s.key.as_deref()), noun, "keyed", "key")?;
    let cost_column = limits.iter().filter_map(|s| match &s.cost {
        Cost::Column(column) => Some(column.as_str()),
        Cost::Each(_) => None,
    });
    let cost = one_column(cost_column, noun, "weighed", "cost")?;
    Ok(Columns { key, cost })
}

/// Returns the one column that `columns` name (none if they name none); `noun` (layers,
/// configurations) that are `what` (keyed, weighed) by `name` must all be so by the same
/// column.
pub(crate) fn one_column<'a>(
    columns: impl Iterator<Item = &'a str>,
    noun: &str,
    what: &str,
    name: &str,
) -> Result<Option<&'a str>, LimitError> {
    let mut found: Option<&str> = None;
    for column in columns {
        match found {
            Some(first) if first != column => {
                let message = format!(
                    "{noun} may be {what} by one column, and these name two: `{first}` and `{column}`"
                );
                return Err(LimitError::Invalid { name: Some(name.to_owned()), message });
            }
            _ => found = Some(column),
        }
    }
    Ok(found)
}

/// Layers resolved from their limits: each layer, the one column keying the keyed ones, and
/// what an event costs (the one column weighing the weighed ones, else 1).
#[derive(Clone, Debug)]
pub struct Layers {
    /// Each layer, in the limits' order.
    pub layers: Vec<Layer>,
    /// The column keying every keyed layer, if one is.
    pub key: Option<String>,
    /// What an event read costs: the column weighing the layers weighed by one, else 1.
    pub cost: Cost,
}

/// Settles `limits` as layers all or nothing (1 to [`MAX_LAYERS`] of them), their busiest
/// windows `window` long (each layer's period if `None`; a window given is longer than
/// zero, as its reader checks). envoy-ratelimit layers count the hits of refused events
/// unless `stop_counting`; `noun` is what the limits are to the user: "layers", or
/// compare's "configurations".
pub fn layers(
    limits: &[Limit],
    window: Option<Span>,
    stop_counting: bool,
    noun: &str,
) -> Result<Layers, LimitError> {
    if limits.is_empty() || limits.len() > MAX_LAYERS {
        let message = format!("{} {noun} are given; 1 to {MAX_LAYERS} run at once", limits.len());
        return Err(LimitError::Invalid { name: None, message });
    }
    let columns = columns(limits, noun)?;
    let layers = limits
        .iter()
        .map(|limit| {
            Ok(Layer {
                settings: limit.settings(window, true, "")?,
                keyed: limit.key.is_some(),
                cost: match limit.cost {
                    Cost::Each(units) => Some(units),
                    Cost::Column(_) => None,
                },
                counts_refused: limit.algorithm.counts_every_limit() && !stop_counting,
            })
        })
        .collect::<Result<Vec<_>, LimitError>>()?;
    Ok(Layers {
        layers,
        key: columns.key.map(str::to_owned),
        cost: columns.cost.map_or(Cost::default(), |c| Cost::Column(c.to_owned())),
    })
}

/// A policy as its user gives it: one limit alone, or limits all or nothing (layers, each
/// reported on its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitPolicy {
    /// One limit (the program's `--algo`).
    One(Limit),
    /// Limits all or nothing (the program's `--limit`, given for each).
    AllOrNothing(Vec<Limit>),
}

impl LimitPolicy {
    /// Settles what to read from `source` for this policy, as `asked` (whose cost, if any,
    /// gives way to the policy's): keyed by the policy's key column, each event costing
    /// what the policy says. Options are named as `names` says.
    pub fn settle(
        &self,
        asked: &Asked,
        source: &Source,
        names: Names,
    ) -> Result<ReadOptions, PolicyError> {
        self.settle_on(asked, source, names, &FleetAsk::default())
    }

    /// Settles what to read as [`settle`](LimitPolicy::settle) does, for a replay on the
    /// fleet `fleet` asks for: one limit without a key is keyed by the column a hash
    /// route routes by.
    pub fn settle_on(
        &self,
        asked: &Asked,
        source: &Source,
        names: Names,
        fleet: &FleetAsk,
    ) -> Result<ReadOptions, PolicyError> {
        match self {
            LimitPolicy::One(limit) => {
                // Keyed by its own column, or by the one a hash route routes by.
                let key_column = fleet.key_column(limit.key.as_deref(), names);
                let mut read = asked.settle(source, key_column, names)?;
                read.cost = limit.cost.clone();
                Ok(read)
            }
            LimitPolicy::AllOrNothing(limits) => {
                settle_together(limits, "layers", asked, source, names)
            }
        }
    }
}

/// Settles what to read from `source` for `limits` taken together (`noun`: layers, or
/// compare's configurations), as `asked`: keyed by their one key column, weighed by their
/// one cost column.
pub fn settle_together(
    limits: &[Limit],
    noun: &str,
    asked: &Asked,
    source: &Source,
    names: Names,
) -> Result<ReadOptions, PolicyError> {
    let columns = columns(limits, noun)?;
    let cost = columns.cost.map_or(Cost::default(), |c| Cost::Column(c.to_owned()));
    let by = if names == Names::Flags { "--limit key=" } else { "key=" };
    let mut read = asked.settle(source, columns.key.map(|key| (key, by)), names)?;
    read.cost = cost;
    Ok(read)
}

/// Why a policy cannot read what was asked: a limit that is none, or options that are not.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A limit, or limits together, that make no policy.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// Reading options that cannot be read.
    #[error(transparent)]
    Asked(#[from] AskedError),
}
