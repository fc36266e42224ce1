//! Outputs never destroy what they replace: files are replaced whole, devices and FIFOs are
//! written in place, links are followed, inputs and unwritable files are refused, and a
//! signal leaves no temporary file.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::QUAKES;
use crate::harness::{Stdin, command, command_unprivileged, finished, is_root, run_with};

const PLOT: [&str; 3] = ["plot", "--rate", "2/h"];

/// A fresh directory holding `in.csv`, the small catalog.
fn dir_with_input() -> (TempDir, String) {
    let dir = tempfile::Builder::new().prefix("ratelimit-test-").tempdir().unwrap();
    let input = dir.path().join("in.csv");
    fs::write(&input, QUAKES).unwrap();
    (dir, input.to_str().unwrap().to_owned())
}

fn path(dir: &TempDir, name: &str) -> String {
    dir.path().join(name).to_str().unwrap().to_owned()
}

fn plot_to(input: &str, output: &str) -> crate::harness::Run {
    run_with(&[&PLOT[..], &[input, "-o", output]].concat(), Stdin::Null)
}

/// Asserts that nothing but `names` is in the directory: no temporary file was left.
fn assert_only(dir: &TempDir, names: &[&str]) {
    let mut found: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(found, want);
}

#[test]
fn writing_over_the_input_is_refused_before_reading() {
    let (dir, input) = dir_with_input();
    let err = plot_to(&input, &input).error();
    assert_eq!(
        err,
        format!("ratelimit: refusing to write {input} over the input {input}: it is the same file")
    );
    // Through a link, and through standard input, it is the same file.
    let link = path(&dir, "link.csv");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    assert!(plot_to(&link, &input).error().contains("it is the same file"));
    let err =
        run_with(&[&PLOT[..], &["-o", &input]].concat(), Stdin::File(input.clone().into())).error();
    assert!(err.contains("over the input <stdin>"), "{err}");
    // `--emit` writes rows to stdout; appended to the input, it would read its own rows.
    let out = command()
        .args(["replay", &input, "--algo", "gcra", "--rate", "2/h", "--emit", "passed"])
        .stdout(fs::OpenOptions::new().append(true).open(&input).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let min_bucket = ["min-bucket", &input, "--curve", "--plot", &input];
    assert!(run_with(&min_bucket, Stdin::Null).error().contains("it is the same file"));
    assert_eq!(fs::read_to_string(&input).unwrap(), QUAKES);
    assert_only(&dir, &["in.csv", "link.csv"]);
}

#[test]
fn a_symlink_is_written_through_and_stays() {
    let (dir, input) = dir_with_input();
    fs::write(dir.path().join("target.svg"), "old").unwrap();
    let link = path(&dir, "link.svg");
    std::os::unix::fs::symlink("target.svg", &link).unwrap();
    assert_eq!(plot_to(&input, &link).ok(), "");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(fs::read_to_string(dir.path().join("target.svg")).unwrap().starts_with("<?xml"));
    // A link to a file that does not exist yet creates it.
    let dangling = path(&dir, "dangling.svg");
    std::os::unix::fs::symlink("new.svg", &dangling).unwrap();
    plot_to(&input, &dangling).ok();
    assert!(fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    assert!(fs::read_to_string(dir.path().join("new.svg")).unwrap().starts_with("<?xml"));
    assert_only(&dir, &["in.csv", "target.svg", "link.svg", "dangling.svg", "new.svg"]);
}

#[test]
fn a_fifo_is_written_in_place() {
    let (dir, input) = dir_with_input();
    let fifo = path(&dir, "fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    assert_eq!(plot_to(&input, &fifo).ok(), "");
    assert!(reader.join().unwrap().starts_with("<?xml"));
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_only(&dir, &["in.csv", "fifo"]);
}

#[test]
fn a_device_stays_a_device() {
    let (_dir, input) = dir_with_input();
    // As root, a rename over /dev/null would succeed and replace the device with a file.
    assert_eq!(plot_to(&input, "/dev/null").ok(), "");
    let synth = ["synth", "--days", "1", "-o", "/dev/null"];
    assert_eq!(run_with(&synth, Stdin::Null).ok(), "");
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
}

#[test]
fn a_file_the_user_may_not_write_is_refused_as_cp_refuses_it() {
    let (dir, input) = dir_with_input();
    // The user below is `nobody` when the tests run as root, so the directory must let
    // anyone in, and the input be readable by anyone.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(&input, fs::Permissions::from_mode(0o644)).unwrap();
    let locked = path(&dir, "locked.svg");
    fs::write(&locked, "keep").unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o444)).unwrap();
    let out = command_unprivileged().args(PLOT).args([&input, "-o", &locked]).output().unwrap();
    let err = finished(out).error();
    let cp = Command::new("cp").args([&input, &locked]).output().unwrap();
    if !is_root() {
        // The same words as cp's.
        let cp = String::from_utf8(cp.stderr).unwrap();
        assert_eq!(err.strip_prefix("ratelimit: "), cp.trim_end().strip_prefix("cp: "));
    }
    assert_eq!(err, format!("ratelimit: cannot create regular file '{locked}': Permission denied"));
    if !is_root() {
        assert_eq!(fs::read_to_string(&locked).unwrap(), "keep");
    }
}

#[test]
fn a_replaced_file_keeps_its_permissions() {
    let (dir, input) = dir_with_input();
    use std::os::unix::fs::PermissionsExt;
    let out = path(&dir, "out.svg");
    fs::write(&out, "old").unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o640)).unwrap();
    plot_to(&input, &out).ok();
    assert!(fs::read_to_string(&out).unwrap().starts_with("<?xml"));
    assert_eq!(fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o640);
}

#[test]
fn a_dash_means_stdout_for_every_output_option() {
    let (_dir, input) = dir_with_input();
    assert!(plot_to(&input, "-").ok().starts_with("<?xml"));
    let synth = run_with(&["synth", "--days", "1", "-o", "-"], Stdin::Null).ok();
    assert!(synth.starts_with("time,latitude,"), "{synth}");
    // The picture takes stdout, so the curve's table goes to stderr.
    let out = run_with(&["min-bucket", &input, "--curve", "--plot", "-"], Stdin::Null);
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("<?xml"));
    assert!(out.stderr.starts_with("from"), "{}", out.stderr);
    assert!(!Path::new("-").exists());
}

/// Starts `synth` writing a large file, waits for its temporary file, sends `signal`, and
/// returns the exit code; asserts nothing is left in the directory.
fn interrupt_synth(signal: &str) -> i32 {
    let dir = tempfile::Builder::new().prefix("ratelimit-test-").tempdir().unwrap();
    let out = path(&dir, "big.csv");
    let mut child = command()
        .args(["synth", "--scale", "500", "--days", "4018", "-o", &out])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while fs::read_dir(dir.path()).unwrap().count() == 0 {
        assert!(Instant::now() < deadline, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_only(&dir, &[]);
    status.code().expect("it exits, rather than dying by the signal")
}

#[test]
fn sigint_sigterm_and_sighup_leave_no_temporary_file() {
    assert_eq!(interrupt_synth("-INT"), 130);
    assert_eq!(interrupt_synth("-TERM"), 143);
    assert_eq!(interrupt_synth("-HUP"), 129);
}

#[test]
fn a_full_disk_under_standard_output_is_named() {
    // /dev/full refuses every write, as a full disk does under `> file`.
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for args in [
        &["replay", "--sample", "--algo", "gcra", "--rate", "5/h"][..],
        &["replay", "--sample", "--algo", "gcra", "--rate", "5/h", "--emit", "passed"],
        &["synth", "--days", "3"],
    ] {
        let out = command().args(args).stdout(full()).output().unwrap();
        let out = finished(out);
        assert_eq!(
            out.error(),
            "ratelimit: cannot write standard output: No space left on device",
            "{args:?}"
        );
    }
}
