//! A limit written as its system's own configuration (`config --for SYSTEM`): what each
//! system that can be configured says in its limiter's file ([`Rule::EXPORT`]), and what
//! the writers share.
//!
//! [`Rule::EXPORT`]: super::Rule::EXPORT

use super::Params;
use crate::units::rate::Rate;

/// How a system's configuration is written, from its limiter's file.
#[derive(Clone, Copy, Debug)]
pub struct Export {
    /// The system's name, as `config --for` takes it: `nginx`, `limits`.
    pub system: &'static str,
    /// What is written, a line.
    pub help: &'static str,
    /// What burst the system takes.
    pub burst: BurstRule,
    /// Reads what the limit is per as one token of the system's syntax, or says why not.
    pub key: fn(&str) -> Result<ExportKey, KeyRefused>,
    /// Writes the configuration.
    pub write: fn(&ExportAsk<'_>) -> String,
}

/// What burst a system's configuration takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BurstRule {
    /// None.
    Without,
    /// Any, from 0 (nginx's `burst=`, the requests beyond the first).
    FromZero,
    /// At least 1 (a bucket's capacity).
    FromOne,
}

/// What a limit is per, as one token of the system's own syntax: never text that could
/// end a directive, open a comment or quote, or start a statement of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportKey {
    /// The client's address: nginx's `$binary_remote_addr`, HAProxy's `src`, Traefik's
    /// default source.
    Client,
    /// An nginx variable's name, without its `$`.
    Variable(String),
    /// A request header's name.
    Header(String),
    /// Text written as a quoted string: a YAML scalar, or a Python string literal.
    Quoted(String),
}

/// Why a system takes no key as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyRefused {
    /// It is not one token of the system's syntax: why.
    NotOne(&'static str),
    /// It is empty.
    Empty,
    /// The system takes no key at all: why.
    NoKeys(&'static str),
}

/// What to write: the rate, the burst as the system writes it, what the limit is per, and
/// the limiter's own parameters (nginx's `delay=`, zone and dry run).
#[derive(Clone, Copy, Debug)]
pub struct ExportAsk<'a> {
    /// The rate.
    pub rate: Rate,
    /// The burst as the system writes it, if given.
    pub burst: Option<u64>,
    /// What the limit is per; one limit for all if `None`.
    pub key: Option<&'a ExportKey>,
    /// The limiter's own parameters.
    pub params: &'a Params,
}

/// Reads a key as a request header's name (letters, digits, `-` and `_`), or the client's
/// address (`remote_addr`, `binary_remote_addr`, `client`): HAProxy's and Traefik's keys.
pub fn client_or_header(key: &str) -> Result<ExportKey, KeyRefused> {
    let name = key.strip_prefix('$').unwrap_or(key);
    if matches!(name, "remote_addr" | "binary_remote_addr" | "client") {
        return Ok(ExportKey::Client);
    }
    let header = !key.is_empty()
        && key.len() <= 256
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match header {
        true => Ok(ExportKey::Header(key.to_owned())),
        false => Err(KeyRefused::NotOne(
            "the key is a request header's name (letters, digits, - and _), or remote_addr \
             for the client's address, and this is not one",
        )),
    }
}

/// Reads a key as any text but none, written quoted: envoy-ratelimit's and `limits`' keys.
pub fn any_quoted(key: &str) -> Result<ExportKey, KeyRefused> {
    match key.is_empty() {
        true => Err(KeyRefused::Empty),
        false => Ok(ExportKey::Quoted(key.to_owned())),
    }
}

/// Returns `text` as a double-quoted string that YAML and Python read back as `text`:
/// backslashes and quotes escaped, and every character that is not printable ASCII written
/// as a `\u` or `\U` escape, which both read alike.
pub fn quoted(text: &str) -> String {
    escaped(text, |c, out| match u32::from(c) {
        c if c <= 0xFFFF => out.push_str(&format!("\\u{c:04x}")),
        c => out.push_str(&format!("\\U{c:08x}")),
    })
}

/// Returns `text` as a JavaScript string literal that reads back as `text`: as [`quoted`],
/// but a character past U+FFFF is the pair of `\u` escapes of its UTF-16 surrogates, as
/// JavaScript has no `\U`.
pub(crate) fn js_quoted(text: &str) -> String {
    escaped(text, |c, out| {
        for unit in c.encode_utf16(&mut [0; 2]) {
            out.push_str(&format!("\\u{unit:04x}"));
        }
    })
}

/// `text` double-quoted, backslashes and quotes escaped, printable ASCII as it is, and any
/// other character as `wide` escapes it.
fn escaped(text: &str, wide: impl Fn(char, &mut String)) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            ' '..='~' => out.push(c),
            c => wide(c, &mut out),
        }
    }
    out.push('"');
    out
}
