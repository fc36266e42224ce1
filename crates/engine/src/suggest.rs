//! Which known name a misspelled one may mean, as clap finds a flag: the closest by
//! Jaro-Winkler similarity, if it is close enough; and what a `--limit` SPEC written as a
//! configuration writes it (spaced, or an nginx directive) may mean.

use crate::limiter::Algorithm;

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

/// Returns `text` with its parts joined by commas, if some of them are spaced apart as a
/// configuration file writes them (`algo=gcra rate=5/h`): every word of a spaced part is
/// `key=value` or a limiter's bare parameter. `None` if none is.
pub(crate) fn spaced(text: &str) -> Option<String> {
    let word = |w: &str| w.contains('=') || Algorithm::taking(w).next().is_some();
    let mut found = false;
    let parts: Vec<String> = (text.split(','))
        .map(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            if words.len() > 1 && words.iter().all(|w| word(w)) {
                found = true;
                words.join(",")
            } else {
                part.trim().to_owned()
            }
        })
        .collect();
    found.then(|| parts.join(","))
}

/// The `--limit` SPEC that `text`, an nginx directive pasted whole (`limit_req zone=one
/// burst=5 nodelay;`, `limit_req_zone $binary_remote_addr zone=one:10m rate=10r/s;`), may
/// mean, if it is one: its burst, delay and rate kept, its zone dropped, and `RATE` where
/// the rate is the zone's.
pub(crate) fn nginx_directive(text: &str) -> Option<String> {
    let mut words = text.trim().trim_end_matches(';').split_whitespace();
    let directive = words.next()?;
    if directive != "limit_req" && directive != "limit_req_zone" {
        return None;
    }
    let mut parts = vec!["algo=nginx".to_owned()];
    let mut rate = None;
    for word in words {
        match word.split_once('=') {
            Some(("zone", _)) => {}
            Some(("rate", value)) => rate = Some(value.to_owned()),
            Some((name @ ("burst" | "delay"), value)) => parts.push(format!("{name}={value}")),
            None if word.starts_with('$') => parts.push(format!("key={word}")),
            None if word == "nodelay" => parts.push(word.to_owned()),
            _ => {}
        }
    }
    parts.insert(1, format!("rate={}", rate.as_deref().unwrap_or("RATE")));
    Some(parts.join(","))
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
