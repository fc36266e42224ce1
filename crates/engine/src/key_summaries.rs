//! What a part of whole keys tells `recommend`, and how parts merge: the keys' demand,
//! their smallest buckets at each rate counted by size, and what a bucket refuses of the
//! keys over the line. One part is every key for a local run; Spark's buckets of whole
//! keys are parts, and only these summaries reach the driver.
//!
//! The counts by size ([`Histogram`]) merge exactly, so every quantile the driver reads
//! is the one a single run reads: nothing is sketched.

use std::num::NonZeroU64;

use serde::{Deserialize, Serialize};

use crate::frontier::{Grouped, Weigh};
use crate::input::keys::wide;
use crate::recommendation::RefusedKey;
use crate::sizing::quantile::{Histogram, Tally};
use crate::units::rate::Rate;
use crate::units::time::Span;

/// The keys a summary lists among those a point refuses most.
pub const TOP_REFUSED: usize = 10;

/// The keys' demand, from which rates are spread: each key's units and its busiest
/// minute, counted by size, and the span of all events.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Demand {
    /// The first event's time and the last's, in µs.
    pub span: Option<(i64, i64)>,
    /// Each key's units (events, or what they cost), counted by size.
    #[serde(with = "counted")]
    pub units: Histogram,
    /// Each key's busiest units in any minute, counted by size.
    #[serde(with = "counted")]
    pub busiest_minute: Histogram,
}

/// Each key's smallest lossless bucket at each rate, counted by size, each weighing its
/// key's events; and with a window, each key's busiest count in it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Needs {
    /// One a rate.
    #[serde(with = "counted_each")]
    pub per_rate: Vec<Histogram>,
    /// Each key's busiest count in any window of the length asked.
    #[serde(with = "counted")]
    pub window: Histogram,
}

/// What a bucket refuses at each rate of the keys over the line.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Refusals {
    /// One a rate.
    pub per_rate: Vec<Refusal>,
}

/// What a bucket at one rate refuses of the keys over the line.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Refusal {
    /// The keys that lose something.
    pub touched: u64,
    /// The events they lose.
    pub events: u64,
    /// The units those events would have taken.
    pub units: u128,
    /// The keys that lose most, the most first (then by name), at most [`TOP_REFUSED`].
    pub top: Vec<Listed>,
}

/// A key a bucket refuses: its name, events, what it loses and what it needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Listed {
    /// The key.
    pub key: String,
    /// Its events.
    pub events: u64,
    /// What it loses.
    pub refused: u64,
    /// Its smallest lossless bucket at the rate.
    pub min_bucket: u64,
}

impl From<&Listed> for RefusedKey {
    fn from(listed: &Listed) -> RefusedKey {
        RefusedKey {
            key: listed.key.clone(),
            events: listed.events,
            refused: listed.refused,
            min_bucket: listed.min_bucket,
        }
    }
}

impl Grouped<'_> {
    /// This part's demand, weighed as `weigh` says.
    pub fn demand(&self, weigh: Weigh) -> Demand {
        let times = self.events.times();
        let first = times.iter().min().map(|t| t.as_micros());
        let span = first.zip(times.iter().max().map(|t| t.as_micros()));
        let mut units = Histogram::new();
        (0..self.keys()).for_each(|key| units.add(self.units(key, weigh), 1));
        let mut busiest_minute = Histogram::new();
        let minute = self.busiest_units(Span::MINUTE, weigh);
        minute.into_iter().for_each(|busiest| busiest_minute.add(busiest, 1));
        Demand { span, units, busiest_minute }
    }

    /// This part's keys' needs at each of `rates`, weighed as `weigh` says, and with a
    /// `window`, their busiest counts in it. `each` also gets every key's needs, key k's
    /// at rate n at `k · rates.len() + n`.
    pub fn needs_summary(
        &self,
        rates: &[Rate],
        weigh: Weigh,
        window: Option<Span>,
    ) -> (Needs, Vec<u64>) {
        let needs = self.needs(rates, weigh);
        let mut per_rate = vec![Histogram::new(); rates.len()];
        for key in 0..self.keys() {
            let events = self.count(key);
            for (n, counted) in per_rate.iter_mut().enumerate() {
                counted.add(needs[key * rates.len() + n], events);
            }
        }
        let mut counted = Histogram::new();
        if let Some(length) = window {
            let busiest = self.busiest_units(length, Weigh::Requests);
            busiest.into_iter().for_each(|count| counted.add(count, 1));
        }
        (Needs { per_rate, window: counted }, needs)
    }

    /// What a bucket of `bursts[n]` at `rates[n]` refuses of this part's keys whose needs
    /// (`needs`, as [`needs_summary`](Grouped::needs_summary) gives them) are over it,
    /// weighed as `weigh` says.
    pub fn refusals(
        &self,
        rates: &[Rate],
        bursts: &[u64],
        needs: &[u64],
        weigh: Weigh,
    ) -> Refusals {
        let count = rates.len();
        let per_rate = (rates.iter().zip(bursts).enumerate())
            .map(|(n, (&rate, &burst))| {
                let over: Vec<usize> =
                    (0..self.keys()).filter(|&k| needs[k * count + n] > burst).collect();
                let burst = NonZeroU64::new(burst).unwrap_or(NonZeroU64::MIN);
                let refused = self.refused(&over, rate, burst, weigh);
                let listed = refused.iter().map(|&(key, r)| Listed {
                    key: self.name(key),
                    events: self.count(key),
                    refused: r.events,
                    min_bucket: needs[key * count + n],
                });
                Refusal {
                    touched: wide(over.len()),
                    events: refused.iter().map(|(_, r)| r.events).sum(),
                    units: refused.iter().map(|(_, r)| r.units).sum(),
                    top: most(listed),
                }
            })
            .collect();
        Refusals { per_rate }
    }
}

/// The [`TOP_REFUSED`] keys that lose most of `listed`, the most first, then by name.
fn most(listed: impl Iterator<Item = Listed>) -> Vec<Listed> {
    let mut all: Vec<Listed> = listed.collect();
    all.sort_by(|a, b| b.refused.cmp(&a.refused).then_with(|| a.key.cmp(&b.key)));
    all.truncate(TOP_REFUSED);
    all
}

impl Demand {
    /// Adds another part's demand.
    pub fn merge(&mut self, other: &Demand) {
        self.span = match (self.span, other.span) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (one, other) => one.or(other),
        };
        self.units.merge(&other.units);
        self.busiest_minute.merge(&other.busiest_minute);
    }
}

impl Needs {
    /// Adds another part's needs, found at the same rates.
    pub fn merge(&mut self, other: &Needs) {
        if self.per_rate.is_empty() {
            self.per_rate = vec![Histogram::new(); other.per_rate.len()];
        }
        self.per_rate.iter_mut().zip(&other.per_rate).for_each(|(mine, theirs)| mine.merge(theirs));
        self.window.merge(&other.window);
    }
}

impl Refusals {
    /// Adds another part's refusals, found at the same rates and bursts.
    pub fn merge(&mut self, other: Refusals) {
        if self.per_rate.is_empty() {
            self.per_rate = vec![Refusal::default(); other.per_rate.len()];
        }
        for (mine, theirs) in self.per_rate.iter_mut().zip(other.per_rate) {
            mine.touched += theirs.touched;
            mine.events += theirs.events;
            mine.units += theirs.units;
            let both = std::mem::take(&mut mine.top).into_iter().chain(theirs.top);
            mine.top = most(both);
        }
    }
}

/// A histogram as its sizes, each with its count and weight: `[[size, count, weight]]`.
mod counted {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{Histogram, Tally};

    pub fn serialize<S: Serializer>(counted: &Histogram, s: S) -> Result<S::Ok, S::Error> {
        let sizes: Vec<[u64; 3]> =
            counted.sorted().into_iter().map(|(v, t)| [v, t.count, t.weight]).collect();
        sizes.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram, D::Error> {
        let sizes: Vec<[u64; 3]> = Vec::deserialize(d)?;
        let mut counted = Histogram::new();
        for [value, count, weight] in sizes {
            counted.add_tally(value, Tally { count, weight });
        }
        Ok(counted)
    }
}

/// Histograms, each as [`counted`] writes one.
mod counted_each {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Histogram;

    /// One histogram, as [`super::counted`] writes it.
    #[derive(serde::Serialize, Deserialize)]
    struct One(#[serde(with = "super::counted")] Histogram);

    pub fn serialize<S: Serializer>(each: &[Histogram], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(each.iter().map(|h| One(h.clone())))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Histogram>, D::Error> {
        let each: Vec<One> = Vec::deserialize(d)?;
        Ok(each.into_iter().map(|One(h)| h).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::catalog::{Key, KeyTable, Timeline};
    use crate::input::keys::Groups;
    use crate::units::time::Timestamp;

    /// Keys of `rows` (name, times in s), grouped; the tests' parts.
    fn part(rows: &[(&str, &[i64])]) -> (Groups, Timeline, KeyTable) {
        let mut table = KeyTable::new();
        let (mut keys, mut events) = (Vec::new(), Timeline::new());
        for &(name, times) in rows {
            let key: Key = table.intern(name.as_bytes()).unwrap();
            for &t in times {
                keys.push(key);
                events.push(Timestamp::from_micros(t * 1_000_000).unwrap(), 1);
            }
        }
        let groups = Groups::new(&keys, table.len());
        let events = events.gather(&groups);
        (groups, events, table)
    }

    #[test]
    fn parts_of_whole_keys_merge_into_the_whole() {
        let (a, b): (&[i64], &[i64]) = (&[0, 1, 2, 3], &[0, 0, 0, 60, 61]);
        let rates: Vec<Rate> = ["1/s", "1/m"].iter().map(|r| r.parse().unwrap()).collect();
        let summaries = |rows: &[(&str, &[i64])], bursts: &[u64]| {
            let (groups, events, table) = part(rows);
            let grouped = Grouped { groups: &groups, events: &events, table: &table, threads: 1 };
            let (needs, each) = grouped.needs_summary(&rates, Weigh::Requests, Some(Span::MINUTE));
            let refusals = grouped.refusals(&rates, bursts, &each, Weigh::Requests);
            (grouped.demand(Weigh::Requests), needs, refusals)
        };
        // By hand: at 1/s "a" needs 1 and "b" 3; at 1/m, 4 and 4 (five events in 61 s, of
        // which 61/60 refill). Bursts of 2 refuse "b" one of its three at 0 s at 1/s; at
        // 1/m, "a" two (at 2 and 3 s), "b" its third at 0 s and the one at 61 s.
        let bursts = [2, 2];
        let (demand, needs, refusals) = summaries(&[("a", a), ("b", b)], &bursts);
        let (mut d, mut n, mut r) = summaries(&[("a", a)], &bursts);
        let (d2, n2, r2) = summaries(&[("b", b)], &bursts);
        d.merge(&d2);
        n.merge(&n2);
        r.merge(r2);
        assert_eq!(d.span, demand.span);
        assert_eq!(
            (d.units.sorted(), d.busiest_minute.sorted()),
            (demand.units.sorted(), demand.busiest_minute.sorted())
        );
        assert_eq!(n.per_rate, needs.per_rate);
        assert_eq!(n.window, needs.window);
        let shown = |r: &Refusals| {
            let each = r.per_rate.iter().map(|p| {
                (
                    p.touched,
                    p.events,
                    p.top
                        .iter()
                        .map(|l| (l.key.clone(), l.refused, l.min_bucket))
                        .collect::<Vec<_>>(),
                )
            });
            each.collect::<Vec<_>>()
        };
        assert_eq!(shown(&r), shown(&refusals));
        let want = vec![
            (1, 1, vec![("b".to_owned(), 1, 3)]),
            (2, 4, vec![("a".to_owned(), 2, 4), ("b".to_owned(), 2, 4)]),
        ];
        assert_eq!(shown(&refusals), want);
        // And they come through the driver's line as they went in.
        let again: Needs = serde_json::from_str(&serde_json::to_string(&needs).unwrap()).unwrap();
        assert_eq!(again.per_rate, needs.per_rate);
    }
}
