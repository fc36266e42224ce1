//! Property: a catalog split into several files, in any format, plain or gzipped, and
//! given in any order, is replayed as the one file is.

use proptest::prelude::*;

use crate::harness::gzip;
use crate::rotated::report;

/// The formats a split is written in, each with the flags that read its key and time.
const FORMATS: [&str; 5] = ["csv", "tsv", "jsonl", "geojson", "log"];

/// `rows` (seconds from the start of 2025, and a key from 0 to 2) written as a whole file of
/// format `format`.
fn written(format: &str, rows: &[(u32, u8)]) -> Vec<u8> {
    let base = 1_735_689_600_u64;
    let iso = |s: u32| {
        chrono::DateTime::from_timestamp(i64::try_from(base).unwrap() + i64::from(s), 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    };
    let clf = |s: u32| {
        chrono::DateTime::from_timestamp(i64::try_from(base).unwrap() + i64::from(s), 0)
            .unwrap()
            .format("%d/%b/%Y:%H:%M:%S +0000")
            .to_string()
    };
    let text = match format {
        "csv" => {
            let rows: String = rows.iter().map(|&(s, k)| format!("{},k{k}\n", iso(s))).collect();
            format!("time,key\n{rows}")
        }
        "tsv" => {
            let rows: String = rows.iter().map(|&(s, k)| format!("{}\tk{k}\n", iso(s))).collect();
            format!("time\tkey\n{rows}")
        }
        "jsonl" => rows
            .iter()
            .map(|&(s, k)| format!("{{\"time\":\"{}\",\"key\":\"k{k}\"}}\n", iso(s)))
            .collect(),
        "geojson" => {
            let features: Vec<String> = rows
                .iter()
                .map(|&(s, k)| {
                    let ms = (base + u64::from(s)) * 1000;
                    format!(
                        "{{\"type\":\"Feature\",\"properties\":{{\"time\":{ms},\"key\":\"k{k}\"}}}}"
                    )
                })
                .collect();
            format!(
                "{{\"type\":\"FeatureCollection\",\"features\":[\n{}\n]}}\n",
                features.join(",\n")
            )
        }
        _ => rows
            .iter()
            .map(|&(s, k)| {
                format!("10.0.0.{k} - - [{}] \"GET / HTTP/1.1\" 200 1 \"-\" \"ua\"\n", clf(s))
            })
            .collect(),
    };
    text.into_bytes()
}

/// The JSON report of a keyed replay of `files`, its input's name left out.
fn replayed(files: &[String], format: &str) -> serde_json::Value {
    let key = if format == "log" { "remote_addr" } else { "key" };
    let mut args: Vec<&str> = vec!["replay"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--algo", "gcra", "--rate", "2/m", "--burst", "2", "--key", key]);
    report(&args)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_split_into_several_files_replays_as_the_one_file(
        gaps in prop::collection::vec((0u32..40, 0u8..3), 1..40),
        format in 0..FORMATS.len(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        gzipped in prop::collection::vec(any::<bool>(), 5),
        reversed in any::<bool>(),
    ) {
        let format = FORMATS[format];
        // Times in order, ties and all, so that the one file streams.
        let mut at = 0;
        let rows: Vec<(u32, u8)> = gaps.iter().map(|&(gap, key)| { at += gap; (at, key) }).collect();
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join(format!("whole.{format}"));
        std::fs::write(&whole, written(format, &rows)).unwrap();
        let want = replayed(&[whole.to_str().unwrap().to_owned()], format);
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(rows.len() + 1)).collect();
        cuts.extend([0, rows.len()]);
        cuts.sort_unstable();
        let mut parts = Vec::new();
        for (n, span) in cuts.windows(2).enumerate() {
            let text = written(format, &rows[span[0]..span[1]]);
            let (bytes, end) = match gzipped[n % gzipped.len()] {
                true => (gzip(&text), ".gz"),
                false => (text, ""),
            };
            let part = dir.path().join(format!("part{n}.{format}{end}"));
            std::fs::write(&part, bytes).unwrap();
            parts.push(part.to_str().unwrap().to_owned());
        }
        // Given newest first, the parts are read out of order, and sorted.
        if reversed {
            parts.reverse();
        }
        prop_assert_eq!(replayed(&parts, format), want);
    }
}
