//! `fetch` against a local stand-in for the USGS event service.

use crate::fdsn::Fdsn;
use crate::formats::report_text;
use crate::harness::{Stdin, real_catalog, run_with, temp_file};

const M5: &str = "usgs_m5_2015_2025.csv";

fn fetch(service: &Fdsn, extra: &[&str], out: &std::path::Path) -> crate::harness::Run {
    let args = [
        "fetch",
        "--url",
        &service.url,
        "--since",
        "2015-01-01",
        "--until",
        "2026-01-01",
        "--min-mag",
        "5",
        "--limit",
        "5000",
        "-o",
        out.to_str().unwrap(),
    ];
    run_with(&[&args[..], extra].concat(), Stdin::Null)
}

#[test]
#[ignore = "needs ../shared/data"]
fn fetch_gets_a_catalog_past_the_limit_in_order_byte_for_byte() {
    let path = real_catalog(M5);
    let want = std::fs::read(&path).unwrap();
    // With the count method, spans over the limit are halved before they are asked for;
    // without it, when the service refuses them.
    for counts in [true, false] {
        let service = Fdsn::start(&path, 5000, counts);
        let out = temp_file("quakes.csv", "");
        let run = fetch(&service, &[], &out);
        let requests = service.requests();
        assert_eq!(run.code, 0, "{}", run.stderr);
        let said = format!("fetched 19032 events in {requests} requests (1 tried again)");
        assert!(run.stderr.contains(&said), "counts {counts}: {}", run.stderr);
        assert!(std::fs::read(&out).unwrap() == want, "counts {counts}: not the catalog's bytes");
    }
}

#[test]
#[ignore = "needs ../shared/data"]
fn fetched_geojson_replays_as_the_csv_does() {
    let path = real_catalog(M5);
    let service = Fdsn::start(&path, 5000, true);
    let out = temp_file("quakes.geojson", "");
    assert_eq!(fetch(&service, &["--format", "geojson"], &out).code, 0);
    let args = ["replay", "--algo", "gcra", "--rate", "5/h", "--key", "net"];
    assert_eq!(report_text(&args, &out), report_text(&args, &path));
}

#[test]
fn a_service_that_keeps_failing_ends_in_one_line() {
    // Nothing listens on this port once the listener is dropped.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = temp_file("none.csv", "kept");
    let args = [
        "fetch",
        "--url",
        &format!("http://127.0.0.1:{port}/fdsnws/event/1"),
        "--since",
        "2025-01-01",
        "--until",
        "2025-02-01",
        "--tries",
        "2",
        "-o",
        out.to_str().unwrap(),
    ];
    let err = run_with(&args, Stdin::Null).error();
    assert!(err.contains("no good answer in 2 tries"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept", "the old file stays whole");
}

#[test]
fn a_count_that_is_not_a_number_is_quoted_once() {
    // A service whose every answer is the same two lines, with quotes, where a count was
    // asked for.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { return };
            let _ = stream.read(&mut [0; 4096]);
            let body = "oops\n\"down\"";
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(format!("{head}{body}").as_bytes());
        }
    });
    let out = temp_file("none.csv", "kept");
    let url = format!("http://127.0.0.1:{port}/fdsnws/event/1");
    let args = ["fetch", "--url", &url, "--since", "2025-01-01", "--until", "2025-02-01"];
    let args = [&args[..], &["--tries", "1", "-o", out.to_str().unwrap()]].concat();
    let err = run_with(&args, Stdin::Null).error();
    assert!(err.contains(r#"answered "oops\n"down"", not a count"#), "{err}");
}

#[test]
fn a_full_disk_names_the_file_and_leaves_nothing() {
    // The sample served, and written where files past 8 KiB cannot be (ulimit -f, with
    // SIGXFSZ ignored, as a full disk refuses a write).
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.csv");
    let service = Fdsn::start(&sample, 5000, true);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("quakes.csv");
    let script = format!(
        "trap '' XFSZ; ulimit -f 16; exec {} fetch --url {} --since 2025-07-01 --until 2025-08-12 -o {}",
        env!("CARGO_BIN_EXE_ratelimit"),
        service.url,
        out.display()
    );
    let run = crate::harness::finished(
        std::process::Command::new("sh").args(["-c", &script]).output().unwrap(),
    );
    assert_eq!(run.error(), format!("ratelimit: cannot write {}: File too large", out.display()));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
