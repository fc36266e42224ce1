//! Sizing figures: the busiest window, the smallest lossless bucket and the burst-rate curve.

pub mod curve;
pub mod curve_summary;
pub mod many_rates;
pub mod merge;
pub mod min_bucket;
pub mod quantile;
pub mod window;

/// Returns the smallest `x` in `low..=high` (`low` at least 1) for which `holds`, given
/// that it holds for `high`, not for `low - 1`, and, once true, stays true: by bisection,
/// asking `holds` about log2(high - low) times.
pub fn first_true(low: u64, high: u64, mut holds: impl FnMut(u64) -> bool) -> u64 {
    let (mut before, mut yes) = (low.saturating_sub(1), high);
    while yes - before > 1 {
        let mid = before + (yes - before) / 2;
        if holds(mid) { yes = mid } else { before = mid }
    }
    yes
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_true_finds_the_least_that_holds_asking_few() {
        let mut asked = 0;
        let found = super::first_true(1, 1000, |x| {
            asked += 1;
            x >= 37
        });
        assert_eq!((found, asked), (37, 10));
        assert_eq!(super::first_true(5, 5, |_| true), 5);
        assert_eq!(super::first_true(1, 8, |_| true), 1);
    }
}
