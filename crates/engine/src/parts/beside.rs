//! Keyed layers beside global ones, split for a replay in parts: the keyed layers by key,
//! each global layer as a limit of its own, to be replayed alone over every row first.
//!
//! All or nothing, a global layer is charged only by the events every layer admits, a part
//! of those it is charged by alone. One whose limiter admits any part of a stream it
//! admits whole ([`Rule::ADMITS_ANY_PART`](crate::limiter::Rule::ADMITS_ANY_PART)) and
//! refuses nothing alone refuses nothing in the run: the keyed layers then decide as if it
//! were not there, each key alone, and its report is a replay of one stream of the rows
//! as they passed. Whether it refuses nothing alone is the caller's to find.

use super::job::Job;
use crate::input::cost::Cost;
use crate::limits::LimitPolicy;

/// Layers keyed by one column beside global ones, split for a replay in parts.
#[derive(Clone, Debug)]
pub struct Beside {
    /// The replay with the keyed layers only.
    pub keyed: Job,
    /// The column that keys them.
    pub key: String,
    /// The global layers, in layer order.
    pub global: Vec<GlobalLayer>,
}

/// A global layer beside keyed ones.
#[derive(Clone, Debug)]
pub struct GlobalLayer {
    /// Its place among all the layers, from 0.
    pub place: usize,
    /// Its spec, as the program's report writes it.
    pub spec: String,
    /// Whether events cost it what a column says (else each the same).
    pub weighed: bool,
    /// The replay with it as the only limit.
    pub alone: Job,
}

/// Splits the layers of `job` into keyed ones, all by one column and none sharing a zone,
/// and global ones each of a limiter that admits any part of what it admits whole and
/// delays nothing, given by its limiter, rate, burst and cost alone; `None` if they do not
/// split so (one limit, no keyed or no global layer, or a layer that does not).
pub fn layers_beside(job: &Job) -> Option<Beside> {
    let LimitPolicy::AllOrNothing(limits) = &job.policy else { return None };
    let (mut keyed, mut key, mut global) = (Vec::new(), None::<&str>, Vec::new());
    for (place, spec) in limits.iter().enumerate() {
        let algorithm = spec.algorithm;
        match &spec.key {
            Some(column) if key.is_none_or(|k| k == column) && !algorithm.has_zone() => {
                key = Some(column);
                keyed.push(spec.clone());
            }
            Some(_) => return None,
            None if algorithm.admits_any_part()
                && !algorithm.delays()
                && spec.params.is_empty() =>
            {
                let alone = Job { policy: LimitPolicy::One(spec.clone()), ..job.clone() };
                let weighed = matches!(spec.cost, Cost::Column(_));
                global.push(GlobalLayer { place, spec: spec.to_string(), weighed, alone });
            }
            None => return None,
        }
    }
    match key {
        Some(key) if !global.is_empty() => {
            let keyed = Job { policy: LimitPolicy::AllOrNothing(keyed), ..job.clone() };
            Some(Beside { keyed, key: key.to_owned(), global })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::asked::Asked;
    use crate::limit::Limit;

    fn layers(specs: &[&str]) -> Job {
        let limits = specs.iter().map(|spec| spec.parse::<Limit>().unwrap()).collect();
        let asked = Asked { time_column: Some("ts".to_owned()), ..Asked::default() };
        Job::new(LimitPolicy::AllOrNothing(limits), asked)
    }

    #[test]
    fn keyed_layers_split_from_a_global_one_given_as_a_limit_of_its_own() {
        let keyed = "algo=gcra,rate=2/m,burst=3,key=client";
        let global = "algo=sliding-log,rate=75000/m,cost=tokens";
        let found = layers_beside(&layers(&[keyed, global])).unwrap();
        assert_eq!(found.keyed.policy, layers(&[keyed]).policy);
        assert_eq!(found.keyed.asked.time_column.as_deref(), Some("ts"));
        assert_eq!(found.key, "client");
        let [layer] = &found.global[..] else { panic!("{:?}", found.global) };
        assert_eq!((layer.place, &layer.spec[..], layer.weighed), (1, global, true));
        assert_eq!(layer.alone.policy, LimitPolicy::One(global.parse().unwrap()));
        assert_eq!(layer.alone.asked.time_column.as_deref(), Some("ts"));
        // A bucket with its burst, first among the layers, each event costing the same.
        let found = layers_beside(&layers(&["algo=gcra,rate=9/s,burst=4", keyed])).unwrap();
        assert_eq!(found.global[0].place, 0);
        assert!(!found.global[0].weighed);
        let alone = "algo=gcra,rate=9/s,burst=4".parse().unwrap();
        assert_eq!(found.global[0].alone.policy, LimitPolicy::One(alone));
    }

    #[test]
    fn layers_that_do_not_split_so_are_none() {
        let keyed = "algo=gcra,rate=2/m,burst=3,key=client";
        for limits in [
            // All keyed, or none.
            &[keyed, "algo=fixed-window,rate=5/m,key=client"][..],
            &["algo=gcra,rate=2/m", "algo=fixed-window,rate=5/m"],
            // Keyed by two columns; nginx's keys share a zone.
            &[keyed, "algo=gcra,rate=2/m,key=path", "algo=gcra,rate=9/s"],
            &["algo=nginx,rate=2r/m,key=client", "algo=gcra,rate=9/s"],
            // A global layer that may refuse a part of what it admits whole, or a queue.
            &[keyed, "algo=haproxy,rate=100/10s"],
            &[keyed, "algo=leaky-queue,rate=9/s,burst=4"],
        ] {
            assert!(layers_beside(&layers(limits)).is_none(), "{limits:?}");
        }
        // One limit has no layers.
        let one =
            Job::new(LimitPolicy::One("algo=gcra,rate=1/s".parse().unwrap()), Asked::default());
        assert!(layers_beside(&one).is_none());
    }
}
