//! `replay --emit`: the input rows as a pipeline filter, in time order.

use crate::QUAKES;
use crate::harness::run;

fn emit(which: &str) -> (String, String) {
    let args = ["replay", "--algo", "gcra", "--rate", "2/h", "--burst", "2", "--emit", which];
    let out = run(&args, QUAKES);
    assert_eq!(out.code, 0, "{}", out.stderr);
    (out.stdout, out.stderr)
}

/// The rows of the catalog with these ids, in the given order, with the header.
fn rows(ids: &[&str]) -> String {
    let mut lines = QUAKES.lines();
    let mut text = format!("{}\n", lines.next().unwrap());
    let rows: Vec<&str> = lines.collect();
    for id in ids {
        let row = rows.iter().find(|r| r.contains(&format!(",us,{id},"))).unwrap();
        text += &format!("{row}\n");
    }
    text
}

#[test]
fn passed_rows_in_time_order_with_the_original_text() {
    let (stdout, stderr) = emit("passed");
    // Stable for equal times: t1b comes before t1a in the file, so it stays first.
    assert_eq!(stdout, rows(&["t1b", "t1a", "t5", "t7"]));
    assert!(stderr.contains("passed      4"), "the report goes to stderr: {stderr}");
}

#[test]
fn dropped_rows() {
    assert_eq!(emit("dropped").0, rows(&["t3", "t4", "t6"]));
}

#[test]
fn all_rows_with_a_decision_column() {
    let (stdout, _) = emit("all");
    let mut lines = stdout.lines();
    assert_eq!(lines.next().unwrap(), format!("{},decision", QUAKES.lines().next().unwrap()));
    let decisions: Vec<&str> = lines.map(|l| l.rsplit(',').next().unwrap()).collect();
    let want = ["passed", "passed", "dropped", "dropped", "passed", "dropped", "passed"];
    assert_eq!(decisions, want);
    // Quoted fields with commas come through unchanged.
    assert!(
        stdout.contains(",\"100 km SE of Petropavlovsk-Kamchatsky, Russia\",earthquake,passed\n")
    );
}

#[test]
fn emit_with_a_json_report_keeps_the_streams_apart() {
    let args =
        ["replay", "--algo", "gcra", "--rate", "2/h", "--emit", "passed", "--format", "json"];
    let out = run(&args, QUAKES);
    assert_eq!(out.stdout, rows(&["t1b", "t1a", "t5", "t7"]));
    assert_eq!(crate::harness::json(&out.stderr)["passed"], 4);
}

#[test]
fn emit_reads_crlf_and_a_last_row_without_a_newline() {
    let csv = "id,time\r\nb,2025-01-01T00:00:01Z\r\na,2025-01-01T00:00:00Z";
    let args = ["replay", "--algo", "gcra", "--rate", "1/s", "--emit", "all"];
    let out = run(&args, csv).ok();
    assert_eq!(
        out,
        "id,time,decision\na,2025-01-01T00:00:00Z,passed\nb,2025-01-01T00:00:01Z,passed\n"
    );
}

#[test]
fn a_bad_row_anywhere_means_no_rows_written() {
    let bad = format!("{QUAKES}2025-07-30T99:00:00Z,0,0,0,5,mb,,,,0,us,x,,here,earthquake\n");
    let args = ["replay", "--algo", "gcra", "--rate", "2/h", "--emit", "all"];
    let err = run(&args, &bad).error();
    assert!(err.contains("line 9"), "{err}");
}

#[test]
fn no_header_leaves_the_header_out_of_the_emitted_rows() {
    let args = ["replay", "--algo", "gcra", "--rate", "2/h", "--emit", "all"];
    let with = run(&args, QUAKES).ok();
    let without = run(&[&args[..], &["--no-header"]].concat(), QUAKES).ok();
    let (header, rows) = with.split_once('\n').unwrap();
    assert!(header.ends_with(",decision"), "{header}");
    assert_eq!(without, rows);
    // It says what it is for: without --emit there is no header to leave out.
    let err = run(&["replay", "--algo", "gcra", "--rate", "2/h", "--no-header"], "");
    assert_eq!(err.code, 2);
}
