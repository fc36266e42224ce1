//! `ratelimit fetch`: an FDSN event query of any length, in requests the service accepts.

mod answer;

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::cli::args::Decimal;
use crate::message::one_line;
use crate::render::outfile::Output;
use crate::units::time::{Span, Timestamp};

use answer::{Asked, Writer};

/// The longest wait a `Retry-After` may ask for; a longer one is cut to this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// The first wait before trying again, which doubles with each try, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// The longest wait between tries, before jitter.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The largest answer read, so that a service that never stops cannot fill the memory.
const MAX_ANSWER: u64 = 1 << 30;

/// The most of a refusal's text that is read, to quote it.
const MAX_REFUSAL: u64 = 64 << 10;

/// The most redirects one request follows.
const MAX_HOPS: u32 = 5;

/// The progress bar: how much of the span is done, and the events so far.
const BAR: &str = "{bar:40} {percent}% of the span, {msg}";

/// One millisecond: the finest time the FDSN services give, and the step between spans.
const MILLI: i64 = 1_000;

pub(super) fn run(args: &FetchArgs) -> Result<ExitCode> {
    if args.since >= args.until {
        bail!("--since ({}) must be before --until ({})", args.since, args.until);
    }
    if args.limit == 0 || args.tries == 0 {
        bail!("--limit and --tries must be at least 1");
    }
    let mut service = Service::new(args)?;
    let output = Output::new(args.output.clone());
    let mut failure = None;
    let mut events = 0;
    let written = output.write(|out| {
        let mut out = io::BufWriter::new(Watched { inner: out, failed: None });
        match service.fetch(args.since, args.until, args.format, &mut out) {
            Ok(count) => {
                events = count;
                out.flush()
            }
            // The file could not take what was fetched (a full disk): its own error, which
            // the output names.
            Err(error) => match out.get_mut().failed.take() {
                Some(failed) => Err(failed),
                None => {
                    failure = Some(error);
                    Err(io::Error::other("fetch failed"))
                }
            },
        }
    });
    if let Some(error) = failure {
        return Err(error);
    }
    written?;
    let (requests, retries) = (service.requests, service.retries);
    eprintln!("ratelimit: fetched {events} events in {requests} requests ({retries} tried again)");
    Ok(ExitCode::SUCCESS)
}

/// A writer that remembers whether a write failed, so that a failure of the output is told
/// from one of the service.
struct Watched<W> {
    inner: W,
    failed: Option<io::Error>,
}

impl<W> Watched<W> {
    /// Keeps a copy of a write's error: the system's own, if it is one.
    fn keep(&mut self, e: &io::Error) {
        self.failed = Some(match e.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(e.kind(), e.to_string()),
        });
    }
}

impl<W: io::Write> io::Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf);
        if let Err(e) = &written {
            self.keep(e);
        }
        written
    }

    fn flush(&mut self) -> io::Result<()> {
        let flushed = self.inner.flush();
        if let Err(e) = &flushed {
            self.keep(e);
        }
        flushed
    }
}

/// An FDSN event service, with what a query asks besides its span.
struct Service {
    agent: ureq::Agent,
    url: String,
    filters: Vec<(&'static str, String)>,
    limit: u64,
    tries: u32,
    /// Whether a redirect to another origin is followed.
    follow: bool,
    /// Whether the service has a count method; a service without one is asked for events
    /// at once, and spans it refuses as too large are halved.
    counts: bool,
    random: Xoshiro256PlusPlus,
    requests: u64,
    retries: u64,
    progress: Option<ProgressBar>,
}

/// What a service answered: a body to read, or that the span holds too many events.
enum Answer {
    Body(Box<dyn Read>),
    TooLarge,
    NoSuchMethod,
}

impl Service {
    fn new(args: &FetchArgs) -> Result<Service> {
        let mut filters = Vec::new();
        if let Some(m) = args.min_mag {
            filters.push(("minmagnitude", decimal_text(m)));
        }
        if let Some(m) = args.max_mag {
            filters.push(("maxmagnitude", decimal_text(m)));
        }
        if let Some(bbox) = &args.bbox {
            let corners: Vec<&str> = bbox.split(',').map(str::trim).collect();
            let valid = corners.len() == 4 && corners.iter().all(|c| c.parse::<Decimal>().is_ok());
            if !valid {
                bail!("--bbox '{bbox}' is not four numbers W,S,E,N, like -125,32,-114,42");
            }
            for (name, value) in ["minlongitude", "minlatitude", "maxlongitude", "maxlatitude"]
                .into_iter()
                .zip(corners)
            {
                filters.push((name, value.to_owned()));
            }
        }
        let timeout = Duration::from_micros(u64::try_from(args.timeout.as_micros()).unwrap_or(0));
        if timeout.is_zero() {
            bail!("--timeout must be longer than zero");
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            // Redirects are followed here, where their origin is checked.
            .max_redirects(0)
            .user_agent(concat!("ratelimit/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            // The low 64 bits of the clock's nanoseconds seed the jitter; any will do.
            .map_or(0, |d| u64::try_from(d.as_nanos() % (1 << 64)).unwrap_or_default());
        let span = (args.until.since(args.since)).unsigned_abs();
        let progress = crate::cli::diagnostics::progress().then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(span), ProgressDrawTarget::stderr_with_hz(5));
            // A constant, which a unit test reads.
            let style = ProgressStyle::with_template(BAR).expect("a valid template");
            bar.set_style(style);
            bar
        });
        Ok(Service {
            agent,
            url: args.url.trim_end_matches('/').to_owned(),
            filters,
            limit: args.limit,
            tries: args.tries,
            follow: args.follow_redirects,
            counts: true,
            random: Xoshiro256PlusPlus::seed_from_u64(seed),
            requests: 0,
            retries: 0,
            progress,
        })
    }

    /// Fetches every event from `since` up to `until`, in time order, into `out`; returns
    /// how many there were.
    fn fetch(
        &mut self,
        since: Timestamp,
        until: Timestamp,
        format: FetchFormat,
        out: &mut dyn Write,
    ) -> Result<u64> {
        let mut writer = Writer::new(format);
        writer.start(out)?;
        // Spans still to fetch, in time order: [start, end) in microseconds.
        let mut spans = VecDeque::from([(since.as_micros(), until.as_micros())]);
        while let Some((start, end)) = spans.pop_front() {
            let count = if self.counts { self.count(start, end)? } else { None };
            // Whether the span's events were written; not if it holds too many for one answer.
            let written = match count {
                Some(0) => true,
                Some(n) if n > self.limit => false,
                _ => self.query(start, end, count, &mut writer, out)?,
            };
            match written {
                true => {
                    if let Some(bar) = &self.progress {
                        bar.set_position((end - since.as_micros()).unsigned_abs());
                        bar.set_message(format!("{} events", writer.events));
                    }
                }
                false => {
                    // Halved on a millisecond, the finest time the service knows.
                    let middle = start + (end - start) / 2 / MILLI * MILLI;
                    if middle <= start {
                        bail!(
                            "more than --limit {} events in one millisecond at {}",
                            self.limit,
                            stamp(start)
                        );
                    }
                    spans.push_front((middle, end));
                    spans.push_front((start, middle));
                }
            }
        }
        writer.finish(out)?;
        if let Some(bar) = &self.progress {
            bar.finish_and_clear();
        }
        Ok(writer.events)
    }

    /// Asks how many events a span holds; `None` if the service has no count method.
    fn count(&mut self, start: i64, end: i64) -> Result<Option<u64>> {
        let url = self.request_url("count", start, end, None);
        match self.get(&url)? {
            Answer::Body(body) => {
                let mut bytes = Vec::new();
                body.take(MAX_REFUSAL)
                    .read_to_end(&mut bytes)
                    .map_err(|e| anyhow!("{url}: the answer was cut: {e}"))?;
                let text = String::from_utf8_lossy(&bytes);
                let count = text.trim().parse::<u64>().or_else(|_| {
                    serde_json::from_str::<serde_json::Value>(&text)
                        .ok()
                        .and_then(|v| v["count"].as_u64())
                        .ok_or(())
                });
                match count {
                    Ok(count) => Ok(Some(count)),
                    Err(()) => bail!("{url} answered \"{}\", not a count", one_line(&text)),
                }
            }
            Answer::NoSuchMethod | Answer::TooLarge => {
                self.counts = false;
                Ok(None)
            }
        }
    }

    /// Asks for a span's events, oldest first, and writes them with `writer`, checked
    /// against the span and the `count` said; false if the service refuses the span as
    /// holding too many.
    fn query(
        &mut self,
        start: i64,
        end: i64,
        count: Option<u64>,
        writer: &mut Writer,
        out: &mut dyn Write,
    ) -> Result<bool> {
        let url = self.request_url("query", start, end, Some(writer.format()));
        match self.get(&url)? {
            Answer::Body(body) => {
                writer.add(body, &Asked { url: &url, start, end, count }, out)?;
                Ok(true)
            }
            Answer::TooLarge => Ok(false),
            Answer::NoSuchMethod => bail!("{url}: the service has no query method (404)"),
        }
    }

    /// The URL of a request for a span: its end is the millisecond before `end`, since an
    /// FDSN end time is inclusive.
    fn request_url(
        &self,
        method: &str,
        start: i64,
        end: i64,
        format: Option<FetchFormat>,
    ) -> String {
        let mut url = format!(
            "{}/{method}?starttime={}&endtime={}",
            self.url,
            stamp(start),
            stamp(end - MILLI)
        );
        if let Some(format) = format {
            let name = match format {
                FetchFormat::Csv => "csv",
                FetchFormat::Geojson => "geojson",
            };
            url.push_str(&format!("&format={name}&orderby=time-asc"));
        }
        for (name, value) in &self.filters {
            url.push_str(&format!("&{name}={value}"));
        }
        url
    }

    /// Sends a GET, trying again on 429, 503 and timeouts, up to `tries` times, and
    /// following redirects within the service's origin (any, with --follow-redirects).
    fn get(&mut self, url: &str) -> Result<Answer> {
        let mut last = String::new();
        let (mut target, mut hops) = (url.to_owned(), 0);
        let mut attempt = 0;
        while attempt < self.tries {
            if attempt > 0 {
                self.retries += 1;
            }
            self.requests += 1;
            let wait = match self.agent.get(&target).call() {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let header = |name: &str| {
                        response
                            .headers()
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    let retry_after = header("retry-after")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
                    let location = header("location");
                    let body = response.into_body().into_with_config().limit(MAX_ANSWER).reader();
                    match status {
                        200 => return Ok(Answer::Body(Box::new(body))),
                        204 => return Ok(Answer::Body(Box::new(io::empty()))),
                        301 | 302 | 303 | 307 | 308 => {
                            target = self.redirect(&target, location.as_deref(), &mut hops)?;
                            continue;
                        }
                        _ => {}
                    }
                    let mut text = Vec::new();
                    // A refusal cut short is quoted as far as it came.
                    let _ = body.take(MAX_REFUSAL).read_to_end(&mut text);
                    match status {
                        404 => return Ok(Answer::NoSuchMethod),
                        400 | 413 if too_large(&text) => return Ok(Answer::TooLarge),
                        429 | 502 | 503 | 504 => {
                            last = format!("{status}");
                            self.backoff(attempt).max(retry_after.unwrap_or_default())
                        }
                        _ => {
                            let text = String::from_utf8_lossy(&text);
                            let said = text.lines().map(str::trim).find(|l| !l.is_empty());
                            bail!("{target} answered {status}: {}", one_line(said.unwrap_or("")));
                        }
                    }
                }
                Err(ureq::Error::Timeout(_)) => {
                    last = "no answer in time".into();
                    self.backoff(attempt)
                }
                Err(ureq::Error::Io(error)) => {
                    last = error.to_string();
                    self.backoff(attempt)
                }
                Err(error) => bail!("{target}: {}", one_line(&error.to_string())),
            };
            attempt += 1;
            if attempt < self.tries {
                std::thread::sleep(wait);
            }
        }
        Err(anyhow!("{url}: no good answer in {} tries (the last: {last})", self.tries))
    }

    /// Returns where a redirect from `from` leads, if it may be followed: within the same
    /// origin (scheme, host and port), or anywhere with --follow-redirects; at most
    /// [`MAX_HOPS`] in a row.
    fn redirect(&self, from: &str, location: Option<&str>, hops: &mut u32) -> Result<String> {
        let Some(location) = location else { bail!("{from} redirects without a Location") };
        let to = if location.starts_with('/') {
            format!("{}{location}", origin(from))
        } else {
            location.to_owned()
        };
        *hops += 1;
        if *hops > MAX_HOPS {
            bail!("{from}: more than {MAX_HOPS} redirects in a row");
        }
        if !self.follow && origin(&to) != origin(from) {
            bail!(
                "{from} redirects to {}, another host or port; --follow-redirects follows it",
                one_line(&to)
            );
        }
        Ok(to)
    }

    /// The wait before try `attempt + 1`: exponential backoff with full jitter, a random
    /// time from zero to the doubled wait.
    fn backoff(&mut self, attempt: u32) -> Duration {
        let ceiling = FIRST_BACKOFF.saturating_mul(1 << attempt.min(16)).min(MAX_BACKOFF);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(self.random.next_u64() % (millis + 1))
    }
}

/// Whether a refusal says the query matched too many events, as USGS says it.
fn too_large(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body).to_ascii_lowercase();
    text.contains("limit") || text.contains("too many") || text.contains("too large")
}

/// Returns a URL's origin: its scheme, host and port, as `https://host:port`.
fn origin(url: &str) -> &str {
    let after = url.find("://").map_or(0, |at| at + 3);
    let end = url[after..].find(['/', '?', '#']).map_or(url.len(), |at| after + at);
    &url[..end]
}

/// An instant as FDSN services read it: UTC, to the millisecond, without a zone.
pub(super) fn stamp(micros: i64) -> String {
    let time = chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default();
    time.format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
}

/// A magnitude as a service reads it: 4.5, not millionths.
fn decimal_text(value: Decimal) -> String {
    let (sign, abs) =
        if value.0 < 0 { ("-", value.0.unsigned_abs()) } else { ("", value.0.unsigned_abs()) };
    let (whole, fraction) = (abs / 1_000_000, abs % 1_000_000);
    if fraction == 0 {
        return format!("{sign}{whole}");
    }
    let digits = format!("{fraction:06}");
    format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magnitudes_and_instants_as_the_service_reads_them() {
        assert_eq!(decimal_text(Decimal(4_500_000)), "4.5");
        assert_eq!(decimal_text(Decimal(5_000_000)), "5");
        assert_eq!(decimal_text(Decimal(-250_000)), "-0.25");
        assert_eq!(stamp(1_420_070_400_000_000 - MILLI), "2014-12-31T23:59:59.999");
    }

    #[test]
    fn the_bar_template_reads() {
        assert!(ProgressStyle::with_template(BAR).is_ok());
    }

    #[test]
    fn usgs_refusals_read_as_too_large() {
        let usgs = b"Error 400: Bad Request\n\n20001 matching events exceeds search limit of 20000. Modify the search to match fewer events.";
        assert!(too_large(usgs));
        assert!(!too_large(b"Error 400: Bad Request\n\nBad starttime"));
    }
}

pub(super) const FETCH_AFTER_HELP: &str = "\
The span is split into requests the service accepts: its count method says how many events \
a span holds, and a span over --limit (or one the service refuses as too large) is halved. \
Answers 429 and 503, and timeouts, are tried again up to --tries times, after a wait that \
grows exponentially with full jitter, and at least what Retry-After says (at most 2 minutes). \
The file is written whole, in time order, with one header, or not at all.

Example: ratelimit fetch --since 2015-01-01 --until 2026-01-01 --min-mag 4.5 -o quakes.csv";

/// A query to an FDSN event service.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The first instant to fetch.
    #[arg(long, value_name = "TIME", value_parser = crate::units::time::rfc3339)]
    pub since: Timestamp,

    /// Fetch events before this instant.
    #[arg(long, value_name = "TIME", value_parser = crate::units::time::rfc3339)]
    pub until: Timestamp,

    /// Only events of at least this magnitude.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub min_mag: Option<Decimal>,

    /// Only events of at most this magnitude.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    pub max_mag: Option<Decimal>,

    /// Only events in this box, in degrees: west, south, east, north.
    #[arg(long, value_name = "W,S,E,N", allow_hyphen_values = true)]
    pub bbox: Option<String>,

    /// The format to write.
    #[arg(short = 'f', long, value_enum, default_value_t = FetchFormat::Csv)]
    pub format: FetchFormat,

    /// Where to write; - for standard output.
    #[arg(short, long, value_name = "FILE", default_value = "-")]
    pub output: PathBuf,

    /// The FDSN event service: USGS, or another that speaks the protocol (EMSC, IRIS), or a
    /// mirror named once in the environment.
    #[arg(
        long,
        value_name = "URL",
        env = "RATELIMIT_FDSN_URL",
        default_value = "https://earthquake.usgs.gov/fdsnws/event/1"
    )]
    pub url: String,

    /// The most events the service gives in one answer.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub limit: u64,

    /// How many times to try a request before giving up.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub tries: u32,

    /// Follow a redirect to another host or port; without it, only redirects within the
    /// service's own origin are followed.
    #[arg(long)]
    pub follow_redirects: bool,

    /// Give up on a request, and try it again, after this long.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub timeout: Span,
}

/// What `fetch` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FetchFormat {
    /// The USGS CSV layout, one header.
    Csv,
    /// One GeoJSON FeatureCollection.
    Geojson,
}
