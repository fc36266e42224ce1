//! The HTML exporter: one self-contained page, its style and script written in, and the
//! report's JSON beside them, from which the script draws every chart.
//!
//! Hand-written SVG and a little plain JavaScript, with no library: the page must open
//! offline from disk, and what it draws (ticks, bars, a curve) needs nothing more.

use std::io::{self, Write};

use serde::Serialize;

const PAGE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Writes the page for `data`, which the script reads as JSON.
pub fn write_page(out: &mut dyn Write, data: &impl Serialize) -> io::Result<()> {
    let json = serde_json::to_string(data).map_err(io::Error::other)?;
    // Inside a script element `</` can end it early, and `<!--` with `<script` can keep its
    // `</script>` from ending it: no `<` is left, nor `>` and `&` for any other context.
    // `\u003c` is the same JSON string.
    let json = json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026");
    let (head, rest) = PAGE.split_once("/*STYLE*/").unwrap_or((PAGE, ""));
    let (middle, rest) = rest.split_once("/*DATA*/").unwrap_or((rest, ""));
    let (before_script, tail) = rest.split_once("/*SCRIPT*/").unwrap_or((rest, ""));
    for part in [head, STYLE, middle, &json, before_script, SCRIPT, tail] {
        out.write_all(part.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_end_its_script_early() {
        for payload in ["</script><b>", "<!--<script>", "<!--<script></script>-->", "&lt;<>&"] {
            let mut out = Vec::new();
            write_page(&mut out, &serde_json::json!({ "input": payload })).unwrap();
            let page = String::from_utf8(out).unwrap();
            assert_eq!(page.matches("</script>").count(), 2, "the data's and the script's ends");
            assert_eq!(page.matches("<!--").count(), 0, "{payload}");
            assert!(!page.contains("/*STYLE*/") && !page.contains("/*DATA*/"));
            // The data reads back as it was.
            let data = page.split(r#"id="report-data">"#).nth(1).unwrap();
            let data: serde_json::Value =
                serde_json::from_str(data.split("</script>").next().unwrap()).unwrap();
            assert_eq!(data["input"], payload);
        }
    }
}
