//! A replay and a sizing in parts (Spark's and Dask's partitions), exactly: the method
//! the registry's facts allow, never a limiter's name; what each part tells, and the
//! parts merged into the report of one pass.

use anyhow::{Result, bail};

use crate::input::catalog::{ReadOptions, Source, Ties};
use crate::limiter::Algorithm;
use crate::limits::LimitPolicy;

mod beside;
mod blocks;
mod chunks;
mod job;
mod keyed;
mod layered;
mod ranges;
mod recommend;
mod stream;
mod told;

pub use self::beside::{Beside, GlobalLayer, layers_beside};
pub use self::blocks::BlockRows;
pub use self::chunks::Chunked;
pub use self::job::{Job, Part};
use self::layered::LayeredPlan;
pub use self::ranges::RangeSpan;
pub use self::recommend::{RecommendParts, Stage};
pub use self::told::VERSION;

/// Refuses to read a part with whole-second ties spread (`ties="spread"`): a range of time,
/// or a key's rows, may hold part of a second, and a second's events are spread over all
/// of them at once; spread in parts, the answer would not be the whole run's.
fn whole_seconds_together(read: ReadOptions) -> Result<ReadOptions> {
    if read.ties == Ties::Spread {
        bail!(
            "ties=\"spread\" is not read in parts: a part may hold some of a second's events, \
             and they are spread over all of that second's; spread the times in the frame, \
             or read it whole (ratelimit_replay.replay)"
        );
    }
    Ok(read)
}

/// How the events of one limit may be cut into parts and decided exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Each key whole in one part, decided alone: its decisions are its own events'.
    ByKey,
    /// One stream cut in ranges of time, each decided from a fresh state where the limiter
    /// rests between them; with `transfer`, every range from its true start, by GCRA's
    /// functions of the ranges, whatever rests.
    Ranges {
        /// Whether it passes exactly what GCRA passes ([`Algorithm::passes_as_gcra`]).
        transfer: bool,
    },
    /// Every event in one pass, in one part, and why.
    OnePass(&'static str),
}

/// Returns the method by which a limit of `algorithm` (per key if `keyed`) is decided
/// exactly in parts, from the registry's facts: keys that share one store
/// ([`Algorithm::has_zone`]) are decided in one pass, since a key's decisions depend on
/// the others'.
pub fn method(algorithm: Algorithm, keyed: bool) -> Method {
    match keyed {
        true if algorithm.has_zone() => Method::OnePass(
            "its keys share one store, so each key's decisions depend on the others'",
        ),
        true => Method::ByKey,
        false => Method::Ranges { transfer: algorithm.passes_as_gcra() },
    }
}

/// Returns the method by which a replay's report of a limit of `algorithm` (per key if
/// `keyed`) is found exactly in parts: its decisions' method, but in one pass where the
/// report carries the system's own size ([`OwnSize::in_replay`]: nginx's `burst=`, found
/// over every event in its zone), which no merge of parts gives.
///
/// [`OwnSize::in_replay`]: crate::limiter::OwnSize::in_replay
pub fn report_method(algorithm: Algorithm, keyed: bool) -> Method {
    match algorithm.own_size().is_some_and(|own| own.in_replay) {
        true => Method::OnePass("its own size is found over every event, in one pass"),
        false => method(algorithm, keyed),
    }
}

impl Job {
    /// The method by which this job's decisions are found exactly in parts (`report`:
    /// its report's, [`report_method`]). Layers are decided by key where every layer is
    /// keyed by one column ([`layers_key`]), else in one pass: keyed layers beside global
    /// ones split only where the global ones refuse nothing, which [`layers_beside`] says
    /// how to find.
    pub fn method(&self, report: bool) -> crate::error::Result<Method> {
        let LimitPolicy::One(limit) = &self.policy else {
            return Ok(match layered::layers_key(self)? {
                Some(_) => Method::ByKey,
                None => Method::OnePass("its layers are not all keyed by one column"),
            });
        };
        let keyed = limit.key.is_some();
        Ok(if report {
            report_method(limit.algorithm, keyed)
        } else {
            method(limit.algorithm, keyed)
        })
    }
}

impl Job {
    /// The blocks of time that the busiest windows are found over, as the parts' events
    /// are to be cut (µs): their width, and how far each reads on into the next, so that
    /// every window that starts in a block is counted whole there. Of one stream, a whole
    /// number of periods, so that no aligned window straddles two.
    pub fn blocks(&self) -> crate::error::Result<(i64, i64)> {
        let window = match &self.policy {
            LimitPolicy::One(_) if !self.keyed() => return Ok(stream::geometry(&self.one()?)),
            LimitPolicy::One(_) => self.one()?.window.as_micros(),
            LimitPolicy::AllOrNothing(limits) => {
                let layers =
                    crate::limits::layers(limits, self.window, self.stop_counting, "layers")?;
                layers.layers.iter().map(|l| l.settings.window.as_micros()).max().unwrap_or(0)
            }
        };
        Ok((window.max(stream::BLOCK_US), window))
    }
}

/// Replays the rows of `given`, which hold whole keys, as `job` asks (one limit by key,
/// or layers all keyed by one column), and returns what they tell.
pub fn replay_part(job: &Job, given: &Source) -> crate::error::Result<Part> {
    Ok(match LayeredPlan::of(job)? {
        Some(plan) => plan.part(job, given)?,
        None => keyed::replay_part(job, given)?,
    })
}

/// Returns a line for each block in `rows` (sorted by block, then time), as
/// [`merge_parts`] reads them: of one limit by key, of one stream (with what the promise
/// measures), or each layer's.
pub fn block_lines(job: &Job, rows: &BlockRows) -> crate::error::Result<Vec<String>> {
    let lines = || -> Result<Vec<String>> {
        match LayeredPlan::of(job)? {
            Some(plan) => plan.block_lines(rows),
            None if job.keyed() => keyed::block_lines(job.one()?, rows),
            None => stream::stream_block_lines(job.one()?, rows),
        }
    };
    Ok(lines()?)
}

/// Merges every part's summary (of one stream, its chunks' lines in time order), and
/// every block's line, into the report of one pass over all the rows, as JSON: what
/// `ratelimit replay --format json` prints.
pub fn merge_parts(
    job: &Job,
    parts: &[String],
    blocks: &[String],
) -> crate::error::Result<Vec<u8>> {
    let merged = || -> Result<Vec<u8>> {
        match (LayeredPlan::of(job)?, &job.policy) {
            (Some(plan), _) => plan.merge(parts, blocks),
            (None, LimitPolicy::One(limit)) if limit.key.is_some() => {
                let column = limit.key.as_deref().unwrap_or_default();
                keyed::merge_parts(job.one()?, (column, job.top), parts, blocks)
            }
            (None, _) => stream::merge_stream(job.one()?, parts, blocks),
        }
    };
    Ok(merged()?)
}

/// Returns what a range of one stream tells (a Spark partition's rows, in time order),
/// as `job` asks (one limit, no key): its first and last events' times in µs, and the
/// instant from which the limiter is at rest after the last, if one is known; `None` for a
/// range without events.
pub fn range_line(job: &Job, given: &Source) -> crate::error::Result<Option<RangeSpan>> {
    Ok(ranges::range_line(job, given)?)
}

/// Returns GCRA's function of a range of one stream (a Spark partition's rows, in time
/// order), as `job` asks (one limit, no key), as a partial result for [`range_starts`]:
/// the fresh tat and each piece, in units of 1/N µs; `None` if the limiter's decisions are
/// not GCRA's or the function passes 4,096 pieces.
pub fn range_transfer(job: &Job, given: &Source) -> crate::error::Result<Option<String>> {
    Ok(ranges::range_transfer(job, given)?)
}

/// Returns the tat each range starts with (1/N µs): the ranges' functions, as
/// [`range_transfer`] wrote them (in range order, every one), composed from the first's
/// fresh tat.
pub fn range_starts(lines: &[String]) -> crate::error::Result<Vec<i128>> {
    Ok(ranges::range_starts(lines)?)
}

/// Decides the rows of a range of one stream by GCRA (`job` as for [`range_transfer`]),
/// starting from `tat`: each row's decision, in the rows' order (`None` for a row that
/// made no event).
pub fn decide_range(
    job: &Job,
    given: &Source,
    tat: i128,
) -> crate::error::Result<Vec<Option<bool>>> {
    Ok(ranges::decide_range(job, given, tat)?)
}

/// Returns what a chunk of one stream tells: the rows of `given`, a stretch of the stream
/// in time order, read as `job` asks (one limit, no key), each decided
/// as `decided` says (one for each row, in the rows' order). `start` is the tat (1/N µs)
/// the limiter starts the chunk with, for a leaky queue's waits; `None` is an empty queue.
pub fn stream_part(
    job: &Job,
    given: &Source,
    decided: &[Option<bool>],
    start: Option<i128>,
) -> crate::error::Result<Part> {
    Ok(stream::stream_part(job, given, decided, start)?)
}

/// Returns what a chunk tells, read from `given` as `asked` says: of one stream, a summary
/// a rate (or the curve's summary, with no rate), for a chunk of it in time order; per
/// key, a line a key (its name in hex, its events, and its bucket and stretch at each
/// rate), for a chunk that holds whole keys.
pub fn chunk_lines(asked: &Chunked, given: Source) -> crate::error::Result<Vec<String>> {
    Ok(chunks::chunk_lines(asked, given)?)
}

/// Merges the lines of every chunk, as [`chunk_lines`] wrote them for the same `asked`,
/// and returns what `ratelimit min-bucket --format json` prints for all the rows: of one
/// stream, the chunks given in the stream's order; per key, in any order.
pub fn merge_chunks(asked: &Chunked, chunks: &[Vec<String>]) -> crate::error::Result<Vec<u8>> {
    Ok(chunks::merge_chunks(asked, chunks)?)
}

/// Returns the one column that keys every layer of `job`, if every layer is keyed by it
/// and none shares a zone (nginx's): then each key's events are decided by its own layers
/// alone, and a replay may run by key. `None` otherwise, and for one limit.
pub fn layers_key(job: &Job) -> crate::error::Result<Option<String>> {
    Ok(layered::layers_key(job)?)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::limiter::AnyPerKey;
    use crate::units::time::Timestamp;

    /// The decisions on `events` (time in ms, key) of one limiter over all keys, and of one
    /// limiter a key, each fresh, each given only its key's events.
    fn together_and_apart(algorithm: Algorithm, events: &[(i64, usize)]) -> (Vec<bool>, Vec<bool>) {
        let (rate, burst) = ("2/s".parse().unwrap(), std::num::NonZeroU64::new(2).unwrap());
        let at = |ms: i64| Timestamp::from_micros(ms * 1000).unwrap();
        let params = match algorithm {
            // A zone of 191 nodes, so that keys may take each other's.
            Algorithm::Nginx => algorithm.params(&[("zone", Some("32k"))]).unwrap(),
            _ => algorithm.default_params(),
        };
        let mut all = AnyPerKey::with_params(algorithm, rate, burst, params);
        let together = events.iter().map(|&(t, key)| all.decide(key, at(t), 1).passed).collect();
        let mut alone: Vec<AnyPerKey> = Vec::new();
        let apart = events
            .iter()
            .map(|&(t, key)| {
                while alone.len() <= key {
                    alone.push(AnyPerKey::with_params(algorithm, rate, burst, params));
                }
                alone[key].decide(0, at(t), 1).passed
            })
            .collect();
        (together, apart)
    }

    /// A limiter no system registers, whose keys share one store: one fixed window of 3
    /// events an hour over every key. Decided apart, each key would pass 3 an hour; so a
    /// system like it, registered without saying that its keys share (`has_zone`), would
    /// be planned by key and split wrongly. The property below must catch that.
    #[derive(Default)]
    struct SharedWindow {
        window: i64,
        count: u32,
    }

    impl SharedWindow {
        fn decide(&mut self, ms: i64) -> bool {
            let window = ms.div_euclid(3_600_000);
            if window != self.window {
                (self.window, self.count) = (window, 0);
            }
            self.count += 1;
            self.count <= 3
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn the_property_finds_a_limiter_whose_keys_share_a_store(
            mut times in prop::collection::vec(0i64..3_600_000, 4..=12)
        ) {
            // As `together_and_apart` decides a registered limiter: one store for every
            // key, then one a key. 4 to 12 events in one hour, the keys in turn, so no key
            // has 4: together, the fourth is refused; apart, none is.
            times.sort_unstable();
            let events: Vec<(i64, usize)> = times.iter().zip((0..4).cycle()).map(|(&t, k)| (t, k)).collect();
            let mut all = SharedWindow::default();
            let together: Vec<bool> = events.iter().map(|&(t, _)| all.decide(t)).collect();
            let mut alone: Vec<SharedWindow> = (0..4).map(|_| SharedWindow::default()).collect();
            let apart: Vec<bool> = events.iter().map(|&(t, key)| alone[key].decide(t)).collect();
            prop_assert!(apart.iter().all(|&passed| passed));
            prop_assert_ne!(together, apart);
        }

        #[test]
        fn a_limit_planned_by_key_decides_each_key_as_all_keys_together(
            steps in prop::collection::vec((0i64..3_000, 0usize..400), 1..600)
        ) {
            let events: Vec<(i64, usize)> =
                steps.iter().scan(0, |t, &(step, key)| { *t += step; Some((*t, key)) }).collect();
            for algorithm in Algorithm::ALL {
                if method(algorithm, true) == Method::ByKey {
                    let (together, apart) = together_and_apart(algorithm, &events);
                    prop_assert_eq!(together, apart, "{}", algorithm.name());
                }
            }
        }
    }

    #[test]
    fn a_limit_whose_keys_share_a_store_is_never_planned_by_key() {
        // 400 keys in turn, then the first three times more: nginx's 32k zone holds 191, so
        // the first's node was taken, and it passes again as new; alone, its third refused.
        let mut events: Vec<(i64, usize)> =
            (0..400).map(|k| (i64::try_from(k).unwrap(), k)).collect();
        events.extend([(401, 0), (402, 0), (403, 0)]);
        for algorithm in Algorithm::ALL {
            let (together, apart) = together_and_apart(algorithm, &events);
            let planned = method(algorithm, true);
            if together != apart {
                assert!(matches!(planned, Method::OnePass(_)), "{}: {planned:?}", algorithm.name());
            }
        }
        // The case is one where sharing shows: nginx's keys decide otherwise apart.
        let (together, apart) = together_and_apart(Algorithm::Nginx, &events);
        assert_ne!(together, apart);
        assert!(matches!(method(Algorithm::Nginx, true), Method::OnePass(_)));
        assert_eq!(method(Algorithm::TokenBucket, false), Method::Ranges { transfer: true });
        assert_eq!(method(Algorithm::SlidingLog, false), Method::Ranges { transfer: false });
        assert!(matches!(report_method(Algorithm::Nginx, false), Method::OnePass(_)));
        assert_eq!(report_method(Algorithm::Gcra, true), Method::ByKey);
    }
}
