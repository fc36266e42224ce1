//! Reading the fields of a line in the combined log format of nginx and Apache.

/// The fields of a line in the combined log format, in order.
pub const CLF_FIELDS: [&str; 8] = [
    "remote_addr",
    "remote_user",
    "time_local",
    "request",
    "status",
    "body_bytes_sent",
    "http_referer",
    "http_user_agent",
];

/// Returns a combined-log line's fields by name: `remote_addr - remote_user [time_local]
/// "request" status body_bytes_sent "http_referer" "http_user_agent"`. The last two may be
/// missing (the common log format); quoted fields may hold `\"`.
pub(super) fn clf_fields(line: &[u8], fields: &[String]) -> Result<Vec<Vec<u8>>, String> {
    let all = split_clf(line).ok_or_else(|| {
        "expected a combined log line: addr - user [time] \"request\" status bytes \"referer\" \"agent\"".to_owned()
    })?;
    fields
        .iter()
        .map(|name| match CLF_FIELDS.iter().position(|f| f == name) {
            Some(index) => Ok(all[index].clone()),
            // nginx's variables for the parts of `$request`: "GET /a?b=1 HTTP/1.1".
            None if let Some(part) = request_part(&all[3], name) => Ok(part.to_vec()),
            None => Err(format!(
                "the combined log format has no field `{}`; it has {}, and of $request {}",
                crate::message::one_line(name),
                CLF_FIELDS.join(", "),
                REQUEST_PARTS.join(", ")
            )),
        })
        .collect()
}

/// The parts of `$request` that nginx names: its method, its URI with the query, and the
/// URI's path.
const REQUEST_PARTS: [&str; 3] = ["request_method", "request_uri", "uri"];

/// Returns the part of a `$request` ("GET /a?b=1 HTTP/1.1") that nginx's variable `name`
/// is, if it names one: an empty part for a request that lacks it.
pub(crate) fn request_part<'r>(request: &'r [u8], name: &str) -> Option<&'r [u8]> {
    let mut words = request.split(|&b| b == b' ');
    let (method, uri) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    match name {
        "request_method" => Some(method),
        "request_uri" => Some(uri),
        "uri" => Some(uri.split(|&b| b == b'?').next().unwrap_or_default()),
        _ => None,
    }
}

/// Returns whether `line` is an access log's line, in the combined (or common) log format.
pub(super) fn is_access_log_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    split_clf(line.strip_suffix(b"\r").unwrap_or(line)).is_some()
}

/// Returns whether `line` is a combined-log line with two decimal numbers after its user
/// agent, as `$msec $request_time` write them (`1735689628.859 0.015`).
pub(crate) fn is_timed_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let decimal = |word: &[u8]| {
        let (whole, fraction) =
            word.split_at(word.iter().position(|&b| b == b'.').unwrap_or(word.len()));
        !whole.is_empty()
            && whole.iter().all(u8::is_ascii_digit)
            && fraction.get(1..).is_some_and(|f| !f.is_empty() && f.iter().all(u8::is_ascii_digit))
    };
    let mut words = line.rsplitn(3, |&b| b == b' ');
    let (Some(request_time), Some(msec), Some(head)) = (words.next(), words.next(), words.next())
    else {
        return false;
    };
    decimal(msec) && decimal(request_time) && head.ends_with(b"\"") && split_clf(head).is_some()
}

/// Splits a combined-log line into its eight fields, or `None` if it is not one.
fn split_clf(line: &[u8]) -> Option<[Vec<u8>; 8]> {
    let mut rest = line;
    let word = |rest: &mut &[u8]| -> Option<Vec<u8>> {
        let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        let found = rest[..end].to_vec();
        *rest = rest.get(end + 1..).unwrap_or_default();
        (!found.is_empty()).then_some(found)
    };
    let addr = word(&mut rest)?;
    let _ident = word(&mut rest)?;
    let user = word(&mut rest)?;
    let time = {
        let inner = rest.strip_prefix(b"[")?;
        let end = inner.iter().position(|&b| b == b']')?;
        let time = inner[..end].to_vec();
        rest = inner[end + 1..].strip_prefix(b" ")?;
        time
    };
    let request = quoted(&mut rest)?;
    let status = word(&mut rest)?;
    let bytes = word(&mut rest)?;
    let (referer, agent) = if rest.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let referer = quoted(&mut rest)?;
        let agent = quoted(&mut rest)?;
        (referer, agent)
    };
    // Anything after the agent (nginx logs may add fields) is left alone.
    Some([addr, user, time, request, status, bytes, referer, agent])
}

/// Reads a double-quoted field and the space after it, keeping `\"` and `\\` as written.
fn quoted(rest: &mut &[u8]) -> Option<Vec<u8>> {
    let inner = rest.strip_prefix(b"\"")?;
    let mut escaped = false;
    let end = inner.iter().position(|&b| {
        let close = b == b'"' && !escaped;
        escaped = b == b'\\' && !escaped;
        close
    })?;
    let found = inner[..end].to_vec();
    let after = &inner[end + 1..];
    *rest = after.strip_prefix(b" ").unwrap_or(after);
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_s_parts_are_nginx_s_variables() {
        let line = br#"10.0.0.1 - - [01/Jan/2025:00:00:28 +0000] "POST /api/orders?id=7 HTTP/1.1" 200 612 "-" "curl/8""#;
        let names = ["request_method", "request_uri", "uri", "remote_addr"].map(String::from);
        let found = clf_fields(line, &names).unwrap();
        assert_eq!(found, [&b"POST"[..], b"/api/orders?id=7", b"/api/orders", b"10.0.0.1"]);
        let unknown = clf_fields(line, &["host".to_owned()]).unwrap_err();
        assert!(unknown.ends_with("and of $request request_method, request_uri, uri"), "{unknown}");
    }

    #[test]
    fn a_timed_line_has_msec_and_request_time_after_the_agent() {
        let combined =
            r#"10.0.0.1 - - [01/Jan/2025:00:00:28 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8""#;
        assert!(!is_timed_line(combined.as_bytes()));
        assert!(is_timed_line(format!("{combined} 1735689628.859 0.015\n").as_bytes()));
        assert!(!is_timed_line(format!("{combined} 1735689628 0.015").as_bytes()));
        assert!(!is_timed_line(format!("{combined} upstream 0.015").as_bytes()));
        assert!(!is_timed_line(b"time,client\n"));
    }
}
