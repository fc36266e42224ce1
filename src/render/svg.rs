//! A small SVG writer: elements with attributes and escaped text, appended to a string.
//!
//! The scene needs five kinds of element and full control of number formatting (file size
//! matters at 100 000 events), which is less code than adapting a general SVG crate.

use std::fmt::{Display, Write};

/// An SVG document being written.
pub struct Svg {
    out: String,
    open: Vec<&'static str>,
}

/// An attribute value: a number written with at most one decimal, or text, escaped.
pub enum Value<'a> {
    /// A coordinate or a length.
    Num(f64),
    /// A whole number.
    Int(u64),
    /// Text.
    Str(&'a str),
}

impl From<f64> for Value<'_> {
    fn from(v: f64) -> Self {
        Value::Num(v)
    }
}

impl From<u64> for Value<'_> {
    fn from(v: u64) -> Self {
        Value::Int(v)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Str(v)
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Self {
        Value::Str(v)
    }
}

impl Display for Value<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Num(v) => {
                let tenths = (v * 10.0).round() / 10.0;
                if tenths.fract() == 0.0 {
                    // Drawing coordinates and labels, far inside an i64.
                    #[allow(clippy::cast_possible_truncation)]
                    let whole = tenths as i64;
                    write!(f, "{whole}")
                } else {
                    write!(f, "{tenths:.1}")
                }
            }
            Value::Int(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(&escape(s)),
        }
    }
}

/// Escapes text for use in an attribute or an element.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

impl Svg {
    /// Starts a document `width` by `height` pixels.
    pub fn new(width: f64, height: f64) -> Svg {
        let mut svg = Svg { out: String::new(), open: Vec::new() };
        svg.out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        svg.start(
            "svg",
            &[
                ("xmlns", "http://www.w3.org/2000/svg".into()),
                ("width", width.into()),
                ("height", height.into()),
                ("viewBox", (&format!("0 0 {} {}", Value::Num(width), Value::Num(height))).into()),
                ("font-family", "DejaVu Sans, Helvetica, Arial, sans-serif".into()),
            ],
        );
        svg
    }

    /// Starts a picture on white, with a bold title and a gray subtitle.
    pub fn page(width: f64, height: f64, title: &str, subtitle: &str) -> Svg {
        let mut svg = Svg::new(width, height);
        let fill = [("width", width.into()), ("height", height.into()), ("fill", "white".into())];
        svg.empty("rect", &fill);
        let bold = [
            ("x", 20.0.into()),
            ("y", 30.0.into()),
            ("font-size", 19.0.into()),
            ("font-weight", "bold".into()),
        ];
        svg.text("text", &bold, title);
        let gray = [
            ("x", 20.0.into()),
            ("y", 52.0.into()),
            ("font-size", 12.0.into()),
            ("fill", "#555".into()),
        ];
        svg.text("text", &gray, subtitle);
        svg
    }

    fn tag(&mut self, name: &str, attrs: &[(&str, Value)]) {
        self.out.push('<');
        self.out.push_str(name);
        for (key, value) in attrs {
            let _ = write!(self.out, " {key}=\"{value}\"");
        }
    }

    /// Opens an element that `end` will close.
    pub fn start(&mut self, name: &'static str, attrs: &[(&str, Value)]) {
        self.tag(name, attrs);
        self.out.push_str(">\n");
        self.open.push(name);
    }

    /// Closes the element opened last.
    pub fn end(&mut self) {
        let name = self.open.pop().expect("an element is open");
        let _ = writeln!(self.out, "</{name}>");
    }

    /// Writes an element with no content.
    pub fn empty(&mut self, name: &str, attrs: &[(&str, Value)]) {
        self.tag(name, attrs);
        self.out.push_str("/>\n");
    }

    /// Writes a path drawn as an unfilled line: `d` in SVG path syntax.
    pub fn stroke(&mut self, d: &str, color: &str, width: f64) {
        let attrs = [
            ("d", d.into()),
            ("fill", "none".into()),
            ("stroke", color.into()),
            ("stroke-width", width.into()),
        ];
        self.empty("path", &attrs);
    }

    /// Writes an element holding text.
    pub fn text(&mut self, name: &str, attrs: &[(&str, Value)], text: &str) {
        self.tag(name, attrs);
        let _ = writeln!(self.out, ">{}</{name}>", escape(text));
    }

    /// Closes every open element and returns the document.
    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.end();
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_escaped_elements_and_short_numbers() {
        let mut svg = Svg::new(100.0, 50.0);
        svg.start("g", &[("class", "lane".into())]);
        svg.empty("rect", &[("x", 1.25.into()), ("y", 3.0.into()), ("data-n", 7u64.into())]);
        svg.text("text", &[("x", 0.04.into())], "a < b & \"c\"");
        let doc = svg.finish();
        assert!(doc.contains("<rect x=\"1.3\" y=\"3\" data-n=\"7\"/>\n"), "{doc}");
        assert!(doc.contains("<text x=\"0\">a &lt; b &amp; &quot;c&quot;</text>\n"), "{doc}");
        assert!(doc.ends_with("</g>\n</svg>\n"), "{doc}");
    }
}
