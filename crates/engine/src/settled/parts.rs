//! A replay settled after the response in parts, as Spark and Dask cut it: whole keys a
//! part, each part's figures and admitted requests, merged into the report of one pass.

use serde::{Deserialize, Serialize};

use super::{LayerSpec, Run, SettledLayerReport, SettledReport, key_column, layers};
use crate::error::{Error, Result};
use crate::input::catalog::{ReadOptions, Source};
use crate::input::requests::{Completion, read_requests};
use crate::parts::Method;
use crate::units::time::{Span, Timestamp};
use ratelimit_core::settle;

/// The version of a [`Part`] as it travels from an executor to the driver; a merge refuses
/// any other.
pub const VERSION: u32 = 1;

/// Returns how requests through `specs` are replayed exactly in parts: by key where every
/// layer (cap or rate) is keyed by the one column, since a request of one key then never
/// meets another key's; else in one pass, and why.
pub fn method(specs: &[LayerSpec]) -> Result<Method> {
    let key = key_column(specs).map_err(|e| Error::Policy { message: e.to_string() })?;
    Ok(match key {
        Some(_) if specs.iter().all(|spec| spec.key.is_some()) => Method::ByKey,
        _ => Method::OnePass(
            "a layer without key= counts every key's requests together, so no key is decided \
             alone",
        ),
    })
}

/// One admitted request of a part: when it arrived and completed, in µs after 1970, and
/// its row (or line) in the part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flight {
    /// When it arrived.
    pub arrival: i64,
    /// When it completed, no earlier.
    pub completion: i64,
    /// Its row in the part's data.
    pub row: u64,
}

/// What a part of whole keys found, in integers: the figures a merge adds up or takes the
/// most of. The most admitted requests in flight at once of all keys is not among them: it
/// mixes keys, and is found from the parts' [`Flight`]s ([`peak`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// [`VERSION`].
    pub version: u32,
    /// The requests of the part.
    pub requests: u64,
    /// Those every layer admitted.
    pub passed: u64,
    /// Each layer's figures, in the policy's order.
    pub layers: Vec<LayerPart>,
}

/// One layer's figures in a part, as [`SettledLayerReport`] gives them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerPart {
    refused: u64,
    reserved: u128,
    refunded: u128,
    charged_after: u128,
    largest_debt: u64,
    most_spent: Option<u128>,
    /// In µs after 1970.
    most_spent_from: Option<i64>,
    peak_in_flight: u64,
}

impl Part {
    fn of(report: &SettledReport) -> Part {
        let layer = |layer: &SettledLayerReport| LayerPart {
            refused: layer.refused,
            reserved: layer.reserved,
            refunded: layer.refunded,
            charged_after: layer.charged_after,
            largest_debt: layer.largest_debt,
            most_spent: layer.most_spent,
            most_spent_from: layer.most_spent_from.map(Timestamp::as_micros),
            peak_in_flight: layer.peak_in_flight,
        };
        Part {
            version: VERSION,
            requests: report.requests,
            passed: report.passed,
            layers: report.layers.iter().map(layer).collect(),
        }
    }
}

/// Replays the requests of `source` (whole keys, read by `read`) through `specs`, each
/// completing as `completion` says, and returns what the part found and its admitted
/// requests. The requests are kept in memory, as [`replay`](super::replay) keeps them.
pub fn replay_part(
    source: &Source,
    read: &ReadOptions,
    specs: &[LayerSpec],
    completion: Option<&Completion>,
    window: Option<Span>,
) -> Result<(Part, Vec<Flight>)> {
    let mut run = Run::new(source, read, specs, window, Vec::new())?;
    let (requests, _) = read_requests(source, read, completion, &run.costs.columns)?;
    run.flights = Some(Vec::with_capacity(requests.len()));
    for n in 0..requests.len() {
        run.settle(&requests, n)?;
    }
    let flights = run.flights.take().unwrap_or_default();
    Ok((Part::of(&run.report(requests.len())?), flights))
}

/// A run of admitted requests' arrivals and completions in time order (a part of them
/// all, cut by time): where it starts, how many more are in flight after it than before,
/// and the most more at any moment within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlightBlock {
    /// Its first event's time, in µs.
    pub first: i64,
    /// In flight after it, less before.
    pub change: i64,
    /// The most in flight at a moment within it, less before.
    pub most: i64,
}

/// What an admitted request's event does to the requests in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlightEvent {
    /// A completion: one fewer. At one time, completions come before arrivals.
    Completes,
    /// An arrival: one more.
    Arrives,
    /// An arrival that completes at once: one more for a moment, before the next event.
    Passes,
}

/// Sums up `events`, admitted requests' arrivals and completions in time order (at one
/// time completions first, then arrivals in order), the first at `first`.
pub fn block(first: i64, events: impl IntoIterator<Item = FlightEvent>) -> FlightBlock {
    let (mut change, mut most) = (0i64, i64::MIN);
    for event in events {
        match event {
            FlightEvent::Completes => change -= 1,
            FlightEvent::Arrives => change += 1,
            FlightEvent::Passes => most = most.max(change + 1),
        }
        most = most.max(change);
    }
    FlightBlock { first, change, most: most.max(change) }
}

/// The events of `flights` in time order, each with its time: at one time completions
/// first, then arrivals in the flights' order.
pub fn events(flights: &[Flight]) -> Vec<(i64, FlightEvent)> {
    let mut events: Vec<(i64, u8, usize, FlightEvent)> = Vec::with_capacity(2 * flights.len());
    for (n, flight) in flights.iter().enumerate() {
        if flight.completion == flight.arrival {
            events.push((flight.arrival, 1, n, FlightEvent::Passes));
        } else {
            events.push((flight.arrival, 1, n, FlightEvent::Arrives));
            events.push((flight.completion, 0, n, FlightEvent::Completes));
        }
    }
    events.sort_by_key(|&(t, arrives, n, _)| (t, arrives, n));
    events.into_iter().map(|(t, _, _, event)| (t, event)).collect()
}

/// Returns the most admitted requests in flight at once, of all keys, from `blocks` that
/// cut every admitted request's arrival and completion in time order: each starts where
/// the one before left off.
pub fn peak(blocks: &mut [FlightBlock]) -> u64 {
    blocks.sort_by_key(|block| block.first);
    let (mut now, mut most) = (0i64, 0i64);
    for block in blocks.iter() {
        most = most.max(now + block.most);
        now += block.change;
    }
    u64::try_from(most).unwrap_or(0)
}

/// Merges `parts`, each of whole keys, into the report of one pass over them all through
/// `specs` (its busiest windows `window` long), named `input`; `peak` is the most admitted
/// requests in flight at once of all keys ([`peak`]).
pub fn merge(
    input: &str,
    specs: &[LayerSpec],
    window: Option<Span>,
    parts: &[Part],
    peak: u64,
) -> Result<SettledReport> {
    let settled = layers(specs, window)?;
    if let Some(part) = parts.iter().find(|part| part.version != VERSION) {
        let message = format!("a part of version {} cannot merge with {VERSION}", part.version);
        return Err(Error::Policy { message });
    }
    if parts.iter().any(|part| part.layers.len() != specs.len()) {
        let message = format!("a part has not the policy's {} layers", specs.len());
        return Err(Error::Policy { message });
    }
    let layer = |n: usize| {
        let (spec, bound) = (&specs[n], settled[n].bound);
        let of = || parts.iter().map(|part| &part.layers[n]);
        let rate = match bound {
            settle::Bound::Rate(settings) => Some(settings.rate),
            settle::Bound::Concurrency(_) => None,
        };
        let limit = rate.map(|r| r.count());
        // Of the windows that hold the most, one pass names the earliest.
        let most = of()
            .filter_map(|l| l.most_spent.map(|m| (m, l.most_spent_from)))
            .max_by(|(a, from_a), (b, from_b)| a.cmp(b).then_with(|| from_b.cmp(from_a)));
        let most_spent = rate.map(|_| most.map_or(0, |(m, _)| m));
        SettledLayerReport {
            spec: spec.to_string(),
            charge: spec.charge,
            refused: of().map(|l| l.refused).sum(),
            reserved: of().map(|l| l.reserved).sum(),
            refunded: of().map(|l| l.refunded).sum(),
            charged_after: of().map(|l| l.charged_after).sum(),
            largest_debt: of().map(|l| l.largest_debt).max().unwrap_or(0),
            limit,
            period_s: rate.map(|r| r.period()),
            most_spent,
            most_spent_from: most.and_then(|(_, from)| from).and_then(Timestamp::from_micros),
            overshot: most_spent.zip(limit).is_some_and(|(m, l)| m > u128::from(l)),
            peak_in_flight: of().map(|l| l.peak_in_flight).max().unwrap_or(0),
        }
    };
    let requests = parts.iter().map(|part| part.requests).sum::<u64>();
    let passed = parts.iter().map(|part| part.passed).sum::<u64>();
    Ok(SettledReport {
        input: input.to_owned(),
        requests,
        passed,
        refused: requests - passed,
        peak_in_flight: peak,
        layers: (0..specs.len()).map(layer).collect(),
        retry: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settled::{RequestsAsk, replay};

    /// `count` requests of five users, a second or less apart (often at one time), lasting
    /// 0 to 9 s, costing 1 to 400 tokens, from a seed: the CSV's rows.
    fn requests(count: usize, seed: u64) -> Vec<String> {
        let mut state = seed;
        let mut next = |n: u64| -> usize {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from((state >> 33) % n).unwrap()
        };
        let mut ms = 1_735_689_600_000i64;
        (0..count)
            .map(|_| {
                ms += [0, 0, 250, 1_000][next(4)];
                let time = Timestamp::from_micros(ms * 1_000).unwrap();
                let d = [0, 0, 1_000, 9_000][next(4)] + next(500);
                format!("{time},u{},{d},{},{}", next(5), 1 + next(400), 1 + next(400))
            })
            .collect()
    }

    fn csv(folder: &std::path::Path, name: &str, rows: &[&String]) -> Source {
        let path = folder.join(name);
        let body: String = rows.iter().map(|row| format!("{row}\n")).collect();
        std::fs::write(&path, format!("time,user,d,reserve,cost\n{body}")).unwrap();
        Source::Path(path)
    }

    #[test]
    fn parts_of_whole_keys_merge_into_the_report_of_one_pass() {
        let specs: Vec<LayerSpec> = [
            "algo=gcra,rate=2000/m,burst=2000,key=user,reserve=reserve,cost=cost",
            "algo=litellm,rate=20/10s,key=user",
            "algo=concurrency,max=3,key=user",
        ]
        .iter()
        .map(|spec| spec.parse().unwrap())
        .collect();
        assert_eq!(method(&specs).unwrap(), Method::ByKey);
        let folder = std::env::temp_dir().join(format!("settled-parts-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let rows = requests(3_000, 7);
        let read = ReadOptions { key_column: Some("user".into()), ..ReadOptions::default() };
        let completion = Completion::given(Some("d"), None);
        let ask = RequestsAsk { completion: completion.as_ref(), ..RequestsAsk::default() };
        let whole = csv(&folder, "all.csv", &rows.iter().collect::<Vec<_>>());
        let (want, _) = replay(&whole, &read, &specs, ask).unwrap();
        assert!(want.refused > 100 && want.peak_in_flight > 3, "{want:?}");
        // Users u0 and u3 in one part, the others in another; each flight with its row in
        // the whole log, to put arrivals at one time in the log's order.
        let mut parts = Vec::new();
        let mut flights = Vec::new();
        for (n, users) in [["u0", "u3", "u3"], ["u1", "u2", "u4"]].iter().enumerate() {
            let mine: Vec<(usize, &String)> = rows
                .iter()
                .enumerate()
                .filter(|(_, row)| users.iter().any(|u| row.contains(&format!(",{u},"))))
                .collect();
            let source = csv(
                &folder,
                &format!("part-{n}.csv"),
                &mine.iter().map(|(_, row)| *row).collect::<Vec<_>>(),
            );
            let (part, flown) =
                replay_part(&source, &read, &specs, completion.as_ref(), None).unwrap();
            parts.push(part);
            // A file's first request is on line 2.
            flights.extend(flown.iter().map(|f| {
                let line = usize::try_from(f.row).unwrap();
                Flight { row: u64::try_from(mine[line - 2].0).unwrap(), ..*f }
            }));
        }
        flights.sort_by_key(|f| f.row);
        let events = events(&flights);
        // Cut in blocks where the time changes, every 500 events or so.
        let mut blocks = Vec::new();
        let mut start = 0;
        for at in 1..=events.len() {
            if at == events.len() || (at - start >= 500 && events[at].0 != events[at - 1].0) {
                let kinds = events[start..at].iter().map(|&(_, event)| event);
                blocks.push(block(events[start].0, kinds));
                start = at;
            }
        }
        assert!(blocks.len() > 3);
        blocks.reverse();
        let got = merge(&whole.name(), &specs, None, &parts, peak(&mut blocks)).unwrap();
        std::fs::remove_dir_all(&folder).unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn a_request_that_completes_at_once_is_in_flight_for_a_moment() {
        // `a` over [0, 2); `b` and `c` at 1 complete at once, each beside `a`: two at once;
        // `d` at 2, after `a` completes (completions first): one.
        let flight = |arrival, completion, row| Flight { arrival, completion, row };
        let flights = [flight(0, 2, 0), flight(1, 1, 1), flight(1, 1, 2), flight(2, 3, 3)];
        let events = events(&flights);
        assert_eq!(events[3], (2, FlightEvent::Completes));
        assert_eq!(peak(&mut [block(0, events.iter().map(|&(_, e)| e))]), 2);
    }

    #[test]
    fn a_layer_or_a_cap_for_every_key_is_replayed_in_one_pass() {
        let plan = |specs: &[&str]| {
            let specs: Vec<LayerSpec> = specs.iter().map(|s| s.parse().unwrap()).collect();
            method(&specs).unwrap()
        };
        let keyed = "algo=gcra,rate=10/m,key=user,reserve=r,cost=c";
        assert_eq!(plan(&[keyed, "algo=concurrency,max=2,key=user"]), Method::ByKey);
        assert!(matches!(plan(&[keyed, "algo=concurrency,max=2"]), Method::OnePass(_)));
        assert!(matches!(plan(&["algo=gcra,rate=10/m,reserve=r,cost=c"]), Method::OnePass(_)));
    }

    #[test]
    fn the_peak_of_blocks_carries_what_each_left_in_flight() {
        // Two in flight after the first block (three at its most), one more at most in the
        // second: four at once. The blocks come in any order.
        let mut blocks = [
            FlightBlock { first: 10, change: -2, most: 1 },
            FlightBlock { first: 0, change: 2, most: 3 },
        ];
        assert_eq!(peak(&mut blocks), 3);
        let mut blocks = [
            FlightBlock { first: 10, change: -2, most: 2 },
            FlightBlock { first: 0, change: 2, most: 3 },
        ];
        assert_eq!(peak(&mut blocks), 4);
        assert_eq!(peak(&mut []), 0);
    }
}
