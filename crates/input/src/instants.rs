//! Events that share an instant: how many, and what that says when times are whole seconds.

use crate::keys::Key;
use crate::ties::Ties;
use crate::units::time::Timestamp;

/// How many events of a run in time order share their instant with another of their key
/// (with one key for all, with any other).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instants {
    /// Events whose instant another event of their key has too, in the groups closed.
    shared: u64,
    last: Option<Timestamp>,
    /// The keys of the events at the last instant, in arrival order.
    group: Vec<Key>,
}

impl Instants {
    /// Takes the next event's time and key, no earlier than the one before.
    #[inline]
    pub fn see(&mut self, time: Timestamp, key: Key) {
        if self.last != Some(time) {
            self.shared += Instants::tied(&mut self.group);
            self.group.clear();
            self.last = Some(time);
        }
        self.group.push(key);
    }

    /// How many of the events at one instant, of these keys, share it with another of
    /// their key. Sorts `keys`.
    fn tied(keys: &mut [Key]) -> u64 {
        if keys.len() < 2 {
            return 0;
        }
        keys.sort_unstable();
        let runs = keys.chunk_by(|a, b| a == b);
        // Events in memory: a usize widens to u64 exactly on every target.
        runs.filter(|run| run.len() > 1).map(|run| run.len() as u64).sum()
    }

    /// Events that share their instant with another of their key, in all.
    pub fn shared(&self) -> u64 {
        self.shared + Instants::tied(&mut self.group.clone())
    }

    /// Returns what to say when the times were written in whole seconds and events share a
    /// second ([`ReadStats::whole_second_ties`](crate::catalog::ReadStats::whole_second_ties)):
    /// how many (of one key, if `keyed`), how they were read (`ties`), what that does to
    /// the figures, and how to see the other reading; for an access log (`logged`), how
    /// nginx logs finer times.
    pub fn note(&self, keyed: bool, logged: bool, ties: Ties) -> String {
        let shared = self.shared();
        let whose = if keyed { " of their key" } else { "" };
        let finer = if logged {
            "; log times to the millisecond (nginx $msec, or --log-format with $msec and \
             $request_time)"
        } else {
            "; write times to the millisecond"
        };
        let read = match ties {
            Ties::Together => "replayed as simultaneous, though up to 1 s apart",
            Ties::Spread => {
                "replayed spread evenly across their second (--ties spread), though \
                             they may have come anywhere in it"
            }
        };
        let other = ties.other().name();
        format!(
            "the times are whole seconds, and {shared} events share their second with another{whose}: \
             they are {read}. The figures may be off, either way, by what the rate refills in \
             1 s: see the other reading with --ties {other}{finer}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ReadStats;

    fn seen(events: &[(i64, Key)]) -> Instants {
        let mut instants = Instants::default();
        for &(t, key) in events {
            instants.see(Timestamp::from_micros(t).unwrap(), key);
        }
        instants
    }

    #[test]
    fn three_and_two_events_in_one_second_share_five() {
        let one = |t: i64| (t, 0);
        let instants =
            seen(&[0, 1_000_000, 1_000_000, 1_000_000, 2_000_000, 5_000_000, 5_000_000].map(one));
        assert_eq!(instants.shared(), 5);
        let note = instants.note(false, false, Ties::Together);
        assert!(note.starts_with("the times are whole seconds, and 5 events"), "{note}");
        assert!(note.ends_with("write times to the millisecond"), "{note}");
        assert!(instants.note(false, true, Ties::Together).contains("nginx $msec"));
        // Times written to the millisecond that tie are ties of the events themselves.
        let stats = |fractions, instants| ReadStats { fractions, instants, ..ReadStats::default() };
        assert!(stats(false, instants.clone()).whole_second_ties());
        assert!(!stats(true, instants).whole_second_ties());
        assert!(!stats(false, seen(&[one(0), one(1_000_000)])).whole_second_ties());
    }

    #[test]
    fn with_keys_only_ties_within_a_key_count() {
        // Second 1: keys 1, 2, 1, 3 (two of key 1); second 2: keys 2, 2 (two).
        let events = [(1, 1), (1, 2), (1, 1), (1, 3), (2, 2), (2, 2), (3, 1)];
        let instants = seen(&events.map(|(s, k)| (s * 1_000_000, k)));
        assert_eq!(instants.shared(), 4);
        assert!(
            instants
                .note(true, false, Ties::Together)
                .contains("4 events share their second with another of their key")
        );
    }
}
