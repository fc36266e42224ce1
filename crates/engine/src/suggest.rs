//! Which known name a misspelled one may mean, as clap finds a flag: the closest by
//! Jaro-Winkler similarity, if it is close enough.

/// How alike two names must be (Jaro-Winkler, 0 to 1) for one to be offered for the other:
/// clap's own threshold.
const ALIKE: f64 = 0.8;

/// Returns the one of `known` that `given` may misspell, if one is close enough.
pub fn closest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|known| (strsim::jaro_winkler(given, known), known))
        .filter(|&(score, known)| score > ALIKE && known != given)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| known)
}

/// Returns ` (did you mean 'KNOWN'?)` for the one of `known` that `given` may misspell;
/// empty if none is close.
pub fn did_you_mean<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(given, known).map(|known| format!(" (did you mean '{known}'?)")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_name_is_offered_and_a_far_one_is_not() {
        let names = ["gcra", "token-bucket", "nodelay", "burst"];
        assert_eq!(closest("gcar", names), Some("gcra"));
        assert_eq!(closest("nodealy", names), Some("nodelay"));
        assert_eq!(closest("brust", names), Some("burst"));
        assert_eq!(closest("zzz", names), None);
        assert_eq!(did_you_mean("gcar", names), " (did you mean 'gcra'?)");
        assert_eq!(did_you_mean("zzz", names), "");
    }
}
