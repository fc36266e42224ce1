//! The formats' own tests: records read from each layout.

use super::*;

fn names(fields: &[&str]) -> Vec<String> {
    fields.iter().map(|&f| f.to_owned()).collect()
}

fn read_all(format: InputFormat, text: &str, fields: &[&str]) -> Result<Vec<Vec<String>>, String> {
    let mut records = Records::new(text.as_bytes(), format, names(fields));
    let mut record = ByteRecord::new();
    let mut found = Vec::new();
    loop {
        match records.read(&mut record) {
            Ok(true) => {
                found.push(record.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect())
            }
            Ok(false) => return Ok(found),
            Err(ReadFailure::Record(e)) => {
                return Err(format!("line {}: {}", e.line, e.problem));
            }
            Err(ReadFailure::Io(e)) => return Err(e.to_string()),
        }
    }
}

#[test]
fn combined_log_lines() {
    let log = "203.0.113.9 - alice [10/Oct/2000:13:55:36 -0700] \"GET /a\\\"b HTTP/1.1\" 200 2326 \"http://x/\" \"curl/8.0\"\n\
               198.51.100.2 - - [10/Oct/2000:13:55:37 -0700] \"POST /login HTTP/1.1\" 401 0\n";
    let found = read_all(
        InputFormat::Clf,
        log,
        &["time_local", "remote_addr", "request", "http_user_agent"],
    )
    .unwrap();
    assert_eq!(
        found[0],
        ["10/Oct/2000:13:55:36 -0700", "203.0.113.9", "GET /a\\\"b HTTP/1.1", "curl/8.0"]
    );
    assert_eq!(
        found[1],
        ["10/Oct/2000:13:55:37 -0700", "198.51.100.2", "POST /login HTTP/1.1", ""]
    );
    let err =
        read_all(InputFormat::Clf, "a - - [x] \"y\" 200 1\nnot a log line\n", &["time_local"])
            .unwrap_err();
    assert!(err.starts_with("line 2: expected a combined log line"), "{err}");
    let err = read_all(InputFormat::Clf, log, &["client"]).unwrap_err();
    assert!(err.contains("no field `client`"), "{err}");
}

#[test]
fn json_lines_by_dotted_path() {
    let text = "{\"t\": 1, \"who\": {\"ip\": \"a\"}}\n\n{\"t\": \"2025-01-01T00:00:00Z\", \"who\": null}\n";
    let found = read_all(InputFormat::Jsonl, text, &["t", "who.ip"]).unwrap();
    assert_eq!(found, [["1", "a"], ["2025-01-01T00:00:00Z", ""]]);
    let err = read_all(InputFormat::Jsonl, "{\"t\": 1}\n{\"t\": 2\n", &["t"]).unwrap_err();
    assert!(err.starts_with("line 2: expected a JSON object"), "{err}");
    let err = read_all(InputFormat::Jsonl, "[1]\n", &["t"]).unwrap_err();
    assert_eq!(err, "line 1: expected a JSON object");
}

#[test]
fn geojson_features_one_at_a_time() {
    let doc = "{\"type\": \"FeatureCollection\", \"metadata\": {\"count\": 2, \"s\": \"]}\\\"\"},\n \"features\": [\n\
               {\"type\":\"Feature\",\"properties\":{\"mag\":5.1,\"time\":1753831492483,\"net\":\"us\"},\"id\":\"us1\"},\n\
               {\"type\":\"Feature\",\"properties\":{\"mag\":null,\"time\":1753831492484,\"net\":\"ak\"},\"id\":\"ak2\"}\n], \"bbox\": [1, 2]}";
    let found =
        read_all(InputFormat::Geojson, doc, &["properties.time", "properties.mag", "net", "id"])
            .unwrap();
    assert_eq!(found, [["1753831492483", "5.1", "us", "us1"], ["1753831492484", "", "ak", "ak2"]]);
    let empty =
        read_all(InputFormat::Geojson, "{\"type\":\"FeatureCollection\",\"features\":[]}", &["id"]);
    assert_eq!(empty, Ok(vec![]));
    for (doc, says) in [
        (
            "{\"type\":\"Feature\",\"features\":[]}",
            "expected a GeoJSON FeatureCollection, found type \"Feature\"",
        ),
        ("[1, 2]", "expected a GeoJSON FeatureCollection: a JSON object"),
        ("{\"type\":\"FeatureCollection\"}", "needs `features`"),
        ("{\"features\":[{\"id\":1}", "the document ends inside `features`"),
        ("{\"features\":[{\"id\":1},\n 7]}", "line 2: expected a feature"),
        ("{\"features\":[]}\n {\"features\":[]}", "line 2: at byte offset 17: expected the end"),
        ("{\"features\":[]} x", "line 1: at byte offset 16: expected the end of the file"),
    ] {
        let err = read_all(InputFormat::Geojson, doc, &["id"]).unwrap_err();
        assert!(err.contains(says), "{doc}: {err}");
    }
}
