//! The JSON contract: one snapshot per command that prints JSON, on the small inline
//! catalogs, keyed where the command takes keys, so that a change of a field's name or
//! place shows as a diff here and in README's "JSON fields".

use crate::QUAKES;
use crate::harness::run;
use crate::keys::CLIENTS;

#[test]
fn replay_json_by_key() {
    let args = ["replay", "--algo", "gcra", "--rate", "1/h", "--burst", "2", "--key", "client"];
    insta::assert_snapshot!(run(&[&args[..], &["--format", "json"]].concat(), CLIENTS).ok());
}

#[test]
fn compare_json_by_key() {
    let args = ["compare", "--rate", "1/h", "--burst", "2", "--key", "client", "--top", "2"];
    let args = [&args[..], &["--algo", "sliding-log,leaky-queue", "--format", "json"]].concat();
    insta::assert_snapshot!(run(&args, CLIENTS).ok());
}

#[test]
fn min_bucket_json_by_key_with_a_cover() {
    let args = ["min-bucket", "--rate", "1/h,4/h", "--key", "client", "--cover", "50%"];
    insta::assert_snapshot!(run(&[&args[..], &["--format", "json"]].concat(), CLIENTS).ok());
}

#[test]
fn min_bucket_curve_json() {
    insta::assert_snapshot!(run(&["min-bucket", "--curve", "--format", "json"], QUAKES).ok());
}

#[test]
fn min_rate_json() {
    insta::assert_snapshot!(run(&["min-rate", "--burst", "1,3", "--format", "json"], QUAKES).ok());
}
