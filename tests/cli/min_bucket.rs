//! `ratelimit min-bucket` on the inline catalog.

use crate::QUAKES;
use crate::harness::{Stdin, json, run, run_with, temp_file};

#[test]
fn table_for_several_rates() {
    // At 2/h, measured from the first event in units of I = 30 min, a_j = j − t_j/I peaks
    // at 01:10 (j = 5, t = 40 min): 5 − 4/3 = 11/3 above a_0, so b = 1 + ⌈11/3⌉ = 5.
    // At 1/10m everything comes at most once per 10 min but the first two: b = 2.
    let out = run(&["min-bucket", "--rate", "2/h,1/10m", "--rate", "1/d"], QUAKES).ok();
    let times = crate::brute::times(QUAKES);
    let found =
        json(&run(&["min-bucket", "--rate", "2/h,1/10m,1/d", "--format", "json"], QUAKES).ok());
    for (k, (n, period)) in [(2, 3_600_000), (1, 600_000), (1, 86_400_000)].into_iter().enumerate()
    {
        assert_eq!(found[k]["min_bucket"], crate::brute::min_bucket(&times, n, period), "rate {k}");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn json_is_an_array_of_rates() {
    let out = json(&run(&["min-bucket", "--rate", "2/h", "--format", "json"], QUAKES).ok());
    assert_eq!(
        out,
        serde_json::json!([{
            "rate": "2/h",
            "min_bucket": 5,
            "span": {"start": "2025-07-30T00:30:00Z", "end": "2025-07-30T01:10:00Z", "events": 6}
        }])
    );
}

#[test]
fn the_minimum_bucket_drops_nothing_and_one_less_drops() {
    let replay = |burst: &str| {
        let args =
            ["replay", "--algo", "gcra", "--rate", "2/h", "--burst", burst, "--format", "json"];
        json(&run(&args, QUAKES).ok())["dropped"].as_u64().unwrap()
    };
    assert_eq!(replay("5"), 0);
    assert_eq!(replay("4"), 1);
}

#[test]
fn a_redirected_file_a_pipe_and_a_path_agree() {
    let path = temp_file("quakes.csv", QUAKES);
    let args = ["min-bucket", "--rate", "2/h", "--format", "csv"];
    let piped = run(&args, QUAKES).ok();
    let redirected = run_with(&args, Stdin::File(path.to_path_buf())).ok();
    let named = run_with(&[&args[..], &[path.to_str().unwrap()]].concat(), Stdin::Null).ok();
    assert_eq!(piped, redirected);
    assert_eq!(piped, named);
}
