//! A layer settled after the response, as `--limit` writes it: a limit with `charge=`,
//! `reserve=` and `cost=` sums, or `algo=concurrency,max=N`.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

use ratelimit_core::settle::Charge;

use crate::input::cost::{Cost, parse_cost};
use crate::limit::{Limit, LimitError, column};

/// A sum of columns, each times a whole weight, and whole numbers, as `cost=` and
/// `reserve=` take it: `prompt_tokens+max_tokens`, `total_tokens`, `1`, and
/// `prompt_tokens+5*completion_tokens` (Bedrock's output tokens, counted five times).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sum {
    /// The columns summed, in the order given.
    pub columns: Vec<String>,
    /// Each column's weight, in the same order: 1 unless written `N*COLUMN`.
    pub weights: Vec<u64>,
    /// The whole numbers summed.
    pub number: u64,
}

impl Sum {
    /// The sum of one number: what a request costs a layer unless said.
    pub fn number(number: u64) -> Sum {
        Sum { columns: Vec::new(), weights: Vec::new(), number }
    }

    /// The sum of one column, its weight 1.
    pub fn column(name: &str) -> Sum {
        Sum { columns: vec![name.to_owned()], weights: vec![1], number: 0 }
    }

    /// Returns the sum of `values` (the columns', in their order), each times its weight,
    /// and the number: `None` past [`MAX_COST`](ratelimit_core::limiter::MAX_COST), the
    /// most a request may cost.
    pub fn total(&self, values: impl IntoIterator<Item = u64>) -> Option<u64> {
        // Each product is below 2^128 and the terms are few: the u128 sum cannot overflow.
        let columns: u128 = (values.into_iter().zip(&self.weights))
            .map(|(value, &weight)| u128::from(value) * u128::from(weight))
            .sum();
        let total = u64::try_from(columns + u128::from(self.number)).ok()?;
        (total <= ratelimit_core::limiter::MAX_COST).then_some(total)
    }

    /// Returns the sum as a cost an event may have: one column, or a number; `None` for a
    /// sum of several terms, or a weighed column, which only requests are read with.
    pub fn as_cost(&self) -> Option<Cost> {
        match (&self.columns[..], &self.weights[..], self.number) {
            ([], [], number) => Some(Cost::Each(number)),
            ([one], [1], 0) => Some(Cost::Column(one.clone())),
            _ => None,
        }
    }
}

impl FromStr for Sum {
    type Err = String;

    fn from_str(text: &str) -> Result<Sum, String> {
        let mut sum = Sum::number(0);
        for term in text.split('+').map(str::trim) {
            if term.is_empty() {
                return Err(format!("'{text}' has an empty term: a sum is COLUMN+COLUMN or N"));
            }
            let number =
                |text: &str| parse_cost(text.trim().as_bytes()).map_err(|e| format!("{term}: {e}"));
            if term.bytes().all(|b| b.is_ascii_digit()) {
                sum.number = sum.number.checked_add(number(term)?).ok_or("the sum is too large")?;
            } else if let Some((weight, name)) = term.split_once('*') {
                let weight = number(weight)?;
                if weight == 0 || name.trim().is_empty() {
                    return Err(format!("'{term}' is not N*COLUMN with N at least 1"));
                }
                sum.columns.push(column(name.trim()));
                sum.weights.push(weight);
            } else {
                sum.columns.push(column(term));
                sum.weights.push(1);
            }
        }
        Ok(sum)
    }
}

impl fmt::Display for Sum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let number = (self.number > 0 || self.columns.is_empty()).then(|| self.number.to_string());
        let columns = self.columns.iter().zip(&self.weights).map(|(name, weight)| match weight {
            1 => name.clone(),
            weight => format!("{weight}*{name}"),
        });
        let terms: Vec<String> = columns.chain(number).collect();
        f.write_str(&terms.join("+"))
    }
}

/// Reads a charge by its name (`arrival`, `reserve`, `completion`), as `charge=` and
/// `--charge` take it.
pub fn parse_charge(text: &str) -> Result<Charge, String> {
    Charge::named(text).ok_or_else(|| format!("{text}: one of arrival, reserve, completion"))
}

/// Settles when a layer charges from what was given: `charge` if said, and whether an
/// estimate to reserve was (which alone means `reserve`). Each name is written after
/// `prefix` in messages (`--` for flags).
pub fn charge_of(charge: Option<Charge>, reserve: bool, prefix: &str) -> Result<Charge, String> {
    let (said, reserved) = match prefix {
        "--" => ("--charge ", "--reserve SUM"),
        _ => ("charge=", "reserve="),
    };
    match (charge, reserve) {
        (None | Some(Charge::Reserve), true) => Ok(Charge::Reserve),
        (Some(Charge::Reserve), false) => {
            Err(format!("{said}reserve needs {reserved}, the estimate"))
        }
        (Some(other), true) => {
            let reserved = reserved.trim_end_matches(" SUM");
            Err(format!("{reserved} is for {said}reserve, not {said}{}", other.name()))
        }
        (charge, false) => Ok(charge.unwrap_or_default()),
    }
}

/// What a settled layer limits: a rate, as a [`Limit`] does, or requests in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A rate limit; its `cost` and `key` are the spec's.
    Rate(Limit),
    /// At most this many requests in flight.
    Concurrency(NonZeroU64),
}

/// One layer as `--limit` gives it, with when it charges: a [`Limit`] (its `cost=` a sum,
/// its `charge=` and `reserve=`), or `algo=concurrency,max=N`. A spec that uses none of
/// these is a [`Limit`] ([`LayerSpec::limit`]), and replays as one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerSpec {
    /// What it limits.
    pub bound: Bound,
    /// When it charges.
    pub charge: Charge,
    /// The estimate it reserves, with `charge=reserve`.
    pub reserve: Option<Sum>,
    /// The real cost: 1 unless said.
    pub cost: Sum,
    /// The column that keys it, if any.
    pub key: Option<String>,
}

impl LayerSpec {
    /// Whether it settles after the response, so that requests need completions: it
    /// reserves, charges at completion, or caps requests in flight.
    pub fn settles_after(&self) -> bool {
        self.charge != Charge::Arrival || matches!(self.bound, Bound::Concurrency(_))
    }

    /// Returns the limit the spec is, if it is one: a rate, charged at arrival, its cost a
    /// column or a number.
    pub fn limit(&self) -> Option<Limit> {
        let Bound::Rate(limit) = &self.bound else { return None };
        let cost = self.cost.as_cost()?;
        (self.charge == Charge::Arrival).then(|| Limit {
            cost,
            key: self.key.clone(),
            ..limit.clone()
        })
    }
}

/// A limit is the layer that charges its cost at arrival.
impl From<Limit> for LayerSpec {
    fn from(limit: Limit) -> LayerSpec {
        let cost = match &limit.cost {
            Cost::Each(units) => Sum::number(*units),
            Cost::Column(column) => Sum::column(column),
        };
        let key = limit.key.clone();
        let bound = Bound::Rate(Limit { cost: Cost::default(), key: None, ..limit });
        LayerSpec { bound, charge: Charge::Arrival, reserve: None, cost, key }
    }
}

impl FromStr for LayerSpec {
    type Err = LimitError;

    fn from_str(text: &str) -> Result<LayerSpec, LimitError> {
        let named = text.split(',').map(|part| match part.split_once('=') {
            Some((name, value)) => (name.trim(), Some(value.trim())),
            None => (part.trim(), None),
        });
        LayerSpec::settled(named, |rest| {
            let written: Vec<String> = (rest.iter())
                .map(|(name, value)| value.map_or(name.to_string(), |v| format!("{name}={v}")))
                .collect();
            written.join(",").parse()
        })
    }
}

impl LayerSpec {
    /// Returns the layer of `named`, each name with its value (`None` for a bare word), as
    /// a `--limit` spec's parts: what [`Limit::from_named`] takes, with `charge=`,
    /// `reserve=`, a `cost=` sum and `algo=concurrency,max=N`.
    pub fn from_named<'a>(
        named: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<LayerSpec, LimitError> {
        LayerSpec::settled(named, |rest| Limit::from_named(rest.iter().copied()))
    }

    /// Takes the parts of `named` that settle a layer, and reads the rest, a limit's, by
    /// `limit`.
    fn settled<'a>(
        named: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
        limit: impl FnOnce(&[(&'a str, Option<&'a str>)]) -> Result<Limit, LimitError>,
    ) -> Result<LayerSpec, LimitError> {
        let invalid =
            |name: &str, message: String| LimitError::Invalid { name: Some(name.into()), message };
        let (mut charge, mut reserve, mut cost, mut max, mut key) = (None, None, None, None, None);
        let mut concurrency = false;
        let mut rest = Vec::new();
        for (name, given) in named {
            let value = given.unwrap_or("");
            match name {
                "charge" => {
                    let found =
                        parse_charge(value).map_err(|e| invalid(name, format!("charge={e}")))?;
                    charge = Some(found);
                }
                "reserve" => {
                    reserve = Some(
                        value
                            .parse::<Sum>()
                            .map_err(|e| invalid(name, format!("reserve={value}: {e}")))?,
                    )
                }
                "cost" => {
                    cost = Some(
                        value
                            .parse::<Sum>()
                            .map_err(|e| invalid(name, format!("cost={value}: {e}")))?,
                    )
                }
                "max" => {
                    let found = value.parse::<NonZeroU64>().map_err(|_| {
                        invalid(
                            name,
                            format!("max={value}: the most requests in flight, 1 or more"),
                        )
                    })?;
                    max = Some(found);
                }
                "key" if !value.is_empty() => key = Some(column(value)),
                "algo" if value == "concurrency" => concurrency = true,
                _ => rest.push((name, given)),
            }
        }
        let charge = charge_of(charge, reserve.is_some(), "")
            .map_err(|message| invalid("reserve", message))?;
        let cost = cost.unwrap_or(Sum::number(1));
        if concurrency {
            let Some(max) = max else {
                return Err(invalid(
                    "max",
                    "algo=concurrency needs max=, the most requests in flight".into(),
                ));
            };
            if let Some((name, value)) = rest.first() {
                let part = value.map_or(name.to_string(), |v| format!("{name}={v}"));
                let message =
                    format!("'{part}' is not for algo=concurrency, which takes max= and key=");
                return Err(invalid("algo", message));
            }
            return Ok(LayerSpec { bound: Bound::Concurrency(max), charge, reserve, cost, key });
        }
        if max.is_some() {
            return Err(invalid("max", "max= is for algo=concurrency".into()));
        }
        // The rest is a limit's; its cost is checked as a limit's is, one column at a time.
        let mut limit = limit(&rest)?;
        for term in &cost.columns {
            let weighed = Cost::Column(term.clone());
            if let Some(why) = crate::limit::cost_refused(&weighed, [limit.algorithm], "cost=") {
                return Err(invalid("cost", why));
            }
        }
        limit.key = None;
        Ok(LayerSpec { bound: Bound::Rate(limit), charge, reserve, cost, key })
    }
}

/// Writes the spec back in the form it is read in.
impl fmt::Display for LayerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.bound {
            Bound::Rate(limit) => write!(f, "{limit}")?,
            Bound::Concurrency(max) => write!(f, "algo=concurrency,max={max}")?,
        }
        match (&self.reserve, self.charge) {
            (Some(reserve), _) => write!(f, ",reserve={reserve}")?,
            (None, Charge::Arrival) => {}
            (None, charge) => write!(f, ",charge={}", charge.name())?,
        }
        if self.cost != Sum::number(1) {
            write!(f, ",cost={}", self.cost)?;
        }
        if let Some(key) = &self.key {
            write!(f, ",key={key}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_with_nothing_settled_is_the_limit_it_always_was() {
        let spec: LayerSpec =
            "algo=gcra,rate=60/m,burst=10,cost=total_tokens,key=user".parse().unwrap();
        let limit: Limit =
            "algo=gcra,rate=60/m,burst=10,cost=total_tokens,key=user".parse().unwrap();
        assert_eq!(spec.limit(), Some(limit.clone()));
        assert_eq!(LayerSpec::from(limit), spec);
        assert_eq!(spec.to_string(), "algo=gcra,rate=60/m,burst=10,cost=total_tokens,key=user");
    }

    #[test]
    fn reserve_sums_completion_and_concurrency_read_and_write_back() {
        let spec: LayerSpec =
            "algo=token-bucket,rate=10000/m,burst=10000,reserve=prompt_tokens+max_tokens,cost=prompt_tokens+completion_tokens"
                .parse()
                .unwrap();
        assert_eq!(spec.charge, Charge::Reserve);
        assert_eq!(spec.reserve.as_ref().unwrap().columns, ["prompt_tokens", "max_tokens"]);
        assert_eq!(spec.limit(), None);
        let written = spec.to_string();
        assert_eq!(written.parse::<LayerSpec>().unwrap(), spec);
        let cap: LayerSpec = "algo=concurrency,max=4,key=user".parse().unwrap();
        assert_eq!(
            (cap.bound.clone(), cap.to_string()),
            (
                Bound::Concurrency(NonZeroU64::new(4).unwrap()),
                "algo=concurrency,max=4,key=user".into()
            )
        );
        let after: LayerSpec =
            "algo=fixed-window,rate=100/m,charge=completion,cost=tokens".parse().unwrap();
        assert_eq!(
            (after.charge, after.to_string()),
            (
                Charge::Completion,
                "algo=fixed-window,rate=100/m,charge=completion,cost=tokens".into()
            )
        );
    }

    #[test]
    fn a_weighed_column_counts_its_value_that_many_times_and_reads_back() {
        let sum: Sum = "prompt_tokens + 5*completion_tokens+2".parse().unwrap();
        assert_eq!(
            (sum.columns.clone(), sum.weights.clone()),
            (vec!["prompt_tokens".to_owned(), "completion_tokens".to_owned()], vec![1, 5])
        );
        // 30 + 5·120 + 2.
        assert_eq!(sum.total([30, 120]), Some(632));
        assert_eq!(sum.to_string(), "prompt_tokens+5*completion_tokens+2");
        assert_eq!(sum.to_string().parse::<Sum>(), Ok(sum));
        assert_eq!("3*tokens".parse::<Sum>().unwrap().as_cost(), None);
        assert!("0*tokens".parse::<Sum>().unwrap_err().contains("N at least 1"));
        let big: Sum = format!("{}*tokens", ratelimit_core::limiter::MAX_COST).parse().unwrap();
        assert_eq!(big.total([2]), None);
    }

    #[test]
    fn a_settled_spec_that_says_too_little_or_too_much_is_refused_by_name() {
        let bad = |text: &str| text.parse::<LayerSpec>().unwrap_err().to_string();
        assert_eq!(
            bad("algo=gcra,rate=1/s,charge=reserve"),
            "charge=reserve needs reserve=, the estimate"
        );
        assert_eq!(
            bad("algo=gcra,rate=1/s,charge=later"),
            "charge=later: one of arrival, reserve, completion"
        );
        assert_eq!(
            bad("algo=concurrency"),
            "algo=concurrency needs max=, the most requests in flight"
        );
        assert_eq!(bad("algo=concurrency,max=0"), "max=0: the most requests in flight, 1 or more");
        assert_eq!(
            bad("algo=concurrency,max=2,rate=1/s"),
            "'rate=1/s' is not for algo=concurrency, which takes max= and key="
        );
        assert_eq!(bad("algo=gcra,rate=1/s,max=3"), "max= is for algo=concurrency");
        assert_eq!(
            bad("algo=gcra,rate=1/s,cost=a++b"),
            "cost=a++b: 'a++b' has an empty term: a sum is COLUMN+COLUMN or N"
        );
        assert_eq!(
            bad("algo=gcra,rate=1/s,charge=completion,reserve=5"),
            "reserve= is for charge=reserve, not charge=completion"
        );
    }
}
