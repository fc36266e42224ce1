//! GCRA over a chunk of events as a function of the state it starts in: where a stream
//! cannot be cut at rest, each chunk's function is found apart, the functions are composed
//! in order, and each chunk is then replayed from its true start, exactly.

use super::{Gcra, KeyedState};
use crate::units::time::Timestamp;

/// The tat a GCRA ends a chunk of events with, as a function of the tat it starts it with
/// (in its units of 1/N µs): sorted pieces, each holding from its first tat up to the next
/// piece's, and mapping x to x + k or to a constant. One event's function has at most three
/// pieces; composed, they stay few in practice, and [`Gcra::transfer`] says when they
/// pass a cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pieces: Vec<(i128, Piece)>,
}

/// What one piece of a [`Transfer`] does to the tat. With the feature `serde` it reads back
/// as it is written: a range of a replay in parts tells its function so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Piece {
    /// x ↦ x + k.
    Shift(i128),
    /// x ↦ c.
    Const(i128),
}

impl Piece {
    fn at(self, x: i128) -> i128 {
        match self {
            Piece::Shift(k) => x.saturating_add(k),
            Piece::Const(c) => c,
        }
    }
}

impl Default for Transfer {
    fn default() -> Transfer {
        Transfer::identity()
    }
}

impl Transfer {
    /// The function of no events: every tat stays.
    pub fn identity() -> Transfer {
        Transfer { pieces: vec![(i128::MIN, Piece::Shift(0))] }
    }

    /// Returns the tat the chunk ends with from start `x`.
    pub fn apply(&self, x: i128) -> i128 {
        // The first piece starts at i128::MIN, so one always holds x.
        let at = self.pieces.partition_point(|&(start, _)| start <= x) - 1;
        self.pieces[at].1.at(x)
    }

    /// Returns its pieces: each one's first tat and what it does.
    pub fn pieces(&self) -> &[(i128, Piece)] {
        &self.pieces
    }

    /// Returns the function with these pieces, if they are sorted and the first starts at
    /// i128::MIN.
    pub fn from_pieces(pieces: Vec<(i128, Piece)>) -> Option<Transfer> {
        let sorted = pieces.windows(2).all(|w| w[0].0 < w[1].0);
        (pieces.first().is_some_and(|p| p.0 == i128::MIN) && sorted).then_some(Transfer { pieces })
    }

    /// Returns this chunk's function followed by `next`'s: `next ∘ self`.
    pub fn then(&self, next: &Transfer) -> Transfer {
        let mut pieces: Vec<(i128, Piece)> = Vec::new();
        let mut push = |start: i128, piece: Piece| match pieces.last() {
            Some(&(_, last)) if last == piece => {}
            _ => pieces.push((start, piece)),
        };
        for (n, &(start, piece)) in self.pieces.iter().enumerate() {
            let end = self.pieces.get(n + 1).map_or(i128::MAX, |p| p.0 - 1);
            match piece {
                Piece::Const(c) => push(start, Piece::Const(next.apply(c))),
                Piece::Shift(k) => {
                    // x + k runs over [start + k, end + k]: split where `next`'s pieces do.
                    let (low, high) = (start.saturating_add(k), end.saturating_add(k));
                    let first = next.pieces.partition_point(|&(s, _)| s <= low) - 1;
                    for (m, &(s, later)) in next.pieces.iter().enumerate().skip(first) {
                        if s > high {
                            break;
                        }
                        let from = if m == first { start } else { s.saturating_sub(k) };
                        let piece = match later {
                            Piece::Shift(j) => Piece::Shift(k.saturating_add(j)),
                            Piece::Const(c) => Piece::Const(c),
                        };
                        push(from, piece);
                    }
                }
            }
        }
        Transfer { pieces }
    }
}

impl Gcra {
    /// Returns the function of the chunk of `events` (time and cost, in time order): the
    /// tat it ends with from any start. `None` once it passes `most` pieces.
    pub fn transfer(
        &self,
        events: impl IntoIterator<Item = (Timestamp, u64)>,
        most: usize,
    ) -> Option<Transfer> {
        let mut whole = Transfer::identity();
        for (time, cost) in events {
            whole = whole.then(&self.step_function(time, cost));
            if whole.pieces.len() > most {
                return None;
            }
        }
        Some(whole)
    }

    /// One event's function, as [`KeyedState::step`] decides it: from a tat at most t,
    /// t + c·I if it passes; from a later one up to t + b·I − c·I, that plus c·I; past
    /// it, refused, the same tat.
    fn step_function(&self, time: Timestamp, cost: u64) -> Transfer {
        let t = i128::from(time.as_micros()) * self.n;
        let spend = super::spend(cost, self.interval);
        if spend > self.capacity {
            return Transfer::identity();
        }
        let mut pieces = vec![(i128::MIN, Piece::Const(t + spend))];
        let last = t + self.capacity - spend;
        if last > t {
            pieces.push((t + 1, Piece::Shift(spend)));
        }
        pieces.push((last + 1, Piece::Shift(0)));
        Transfer { pieces }
    }

    /// Returns the tat a fresh limiter starts with.
    pub fn fresh_tat(&self) -> i128 {
        self.clone().state_mut().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use proptest::prelude::*;

    use super::*;
    use crate::units::rate::Rate;
    use crate::units::time::Span;

    fn gcra(n: u64, p: i64, b: u64) -> Gcra {
        Gcra::new(Rate::new(n, Span::from_micros(p).unwrap()).unwrap(), NonZeroU64::new(b).unwrap())
    }

    /// Replays `events` from tat `x`, returning the end tat.
    fn replay(limiter: &Gcra, x: i128, events: &[(Timestamp, u64)]) -> i128 {
        let mut tat = x;
        for &(t, c) in events {
            limiter.step(&mut tat, t, c, false);
        }
        tat
    }

    #[test]
    fn one_event_by_hand() {
        // 1 per 10 µs, b = 2: I = 10, b·I = 20, in units of 1/1 µs. An event at 100.
        let limiter = gcra(1, 10, 2);
        let f = limiter.transfer([(Timestamp::from_micros(100).unwrap(), 1)], 8).unwrap();
        // Up to 100: 110. Past 100 up to 110: tat + 10. Past 110: refused, the same.
        assert_eq!([f.apply(i128::MIN), f.apply(100)], [110, 110]);
        assert_eq!([f.apply(101), f.apply(110)], [111, 120]);
        assert_eq!([f.apply(111), f.apply(5_000)], [111, 5_000]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Composed over any chunking, the functions give what one pass gives from any
        /// start, the fresh one included.
        #[test]
        fn composed_functions_replay_as_one_pass(
            n in 1u64..=4, p in 1i64..=40, b in 1u64..=5,
            steps in prop::collection::vec((0i64..=30, 0u64..=4), 0..60),
            cuts in prop::collection::vec(0usize..60, 0..5),
            starts in prop::collection::vec(-200i128..2_000, 1..6),
        ) {
            let limiter = gcra(n, p, b);
            let events: Vec<(Timestamp, u64)> = steps
                .iter()
                .scan(1_000i64, |t, &(dt, c)| { *t += dt; Some((Timestamp::from_micros(*t).unwrap(), c)) })
                .collect();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(events.len())).collect();
            cuts.extend([0, events.len()]);
            cuts.sort_unstable();
            let mut whole = Transfer::identity();
            for pair in cuts.windows(2) {
                let chunk = &events[pair[0]..pair[1]];
                let f = limiter.transfer(chunk.iter().copied(), usize::MAX).unwrap();
                for &x in &starts {
                    let x = x * i128::from(n);
                    prop_assert_eq!(f.apply(x), replay(&limiter, x, chunk));
                }
                whole = whole.then(&f);
            }
            let fresh = limiter.fresh_tat();
            for x in starts.iter().map(|&x| x * i128::from(n)).chain([fresh, i128::MIN]) {
                prop_assert_eq!(whole.apply(x), replay(&limiter, x, &events));
            }
        }
    }
}
