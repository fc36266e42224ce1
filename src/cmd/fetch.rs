//! `ratelimit fetch`: an FDSN event query of any length, in requests the service accepts.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::cli::args::Decimal;
use crate::message::one_line;
use crate::render::outfile::Output;
use crate::units::time::{Span, Timestamp};

/// The longest wait a `Retry-After` may ask for; a longer one is cut to this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// The first wait before trying again, which doubles with each try, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// The longest wait between tries, before jitter.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The largest answer read, so that a service that never stops cannot fill the memory.
const MAX_ANSWER: u64 = 1 << 30;

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
        let mut out = io::BufWriter::new(out);
        match service.fetch(args.since, args.until, args.format, &mut out) {
            Ok(count) => {
                events = count;
                out.flush()
            }
            Err(error) => {
                failure = Some(error);
                Err(io::Error::other("fetch failed"))
            }
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

/// An FDSN event service, with what a query asks besides its span.
struct Service {
    agent: ureq::Agent,
    url: String,
    filters: Vec<(&'static str, String)>,
    limit: u64,
    tries: u32,
    /// Whether the service has a count method; a service without one is asked for events
    /// at once, and spans it refuses as too large are halved.
    counts: bool,
    random: Xoshiro256PlusPlus,
    requests: u64,
    retries: u64,
    progress: Option<ProgressBar>,
}

/// What a service answered: a body, or that the span holds too many events.
enum Answer {
    Body(Vec<u8>),
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
        let mut writer = Writer { format, header: None, events: 0 };
        writer.start(out)?;
        // Spans still to fetch, in time order: [start, end) in microseconds.
        let mut spans = VecDeque::from([(since.as_micros(), until.as_micros())]);
        while let Some((start, end)) = spans.pop_front() {
            let fits = if self.counts { self.count(start, end)? } else { None };
            // The span's events, or `None` if it holds too many for one answer.
            let events = match fits {
                Some(0) => Some(Vec::new()),
                Some(n) if n > self.limit => None,
                _ => self.query(start, end, format)?,
            };
            match events {
                Some(body) => {
                    writer.add(&body, out)?;
                    if let Some(bar) = &self.progress {
                        bar.set_position((end - since.as_micros()).unsigned_abs());
                        bar.set_message(format!("{} events", writer.events));
                    }
                }
                None => {
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
                let text = String::from_utf8_lossy(&body);
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

    /// Asks for a span's events, oldest first; `None` if the service refuses the span as
    /// holding too many.
    fn query(&mut self, start: i64, end: i64, format: FetchFormat) -> Result<Option<Vec<u8>>> {
        let url = self.request_url("query", start, end, Some(format));
        match self.get(&url)? {
            Answer::Body(body) => Ok(Some(body)),
            Answer::TooLarge => Ok(None),
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

    /// Sends a GET, trying again on 429, 503 and timeouts, up to `tries` times.
    fn get(&mut self, url: &str) -> Result<Answer> {
        let mut last = String::new();
        for attempt in 0..self.tries {
            if attempt > 0 {
                self.retries += 1;
            }
            self.requests += 1;
            let wait = match self.agent.get(url).call() {
                Ok(mut response) => {
                    let status = response.status().as_u16();
                    let retry_after = response
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
                    let body = response
                        .body_mut()
                        .with_config()
                        .limit(MAX_ANSWER)
                        .read_to_vec()
                        .with_context(|| format!("{url}: the answer could not be read"))?;
                    match status {
                        200 => return Ok(Answer::Body(body)),
                        204 => return Ok(Answer::Body(Vec::new())),
                        404 => return Ok(Answer::NoSuchMethod),
                        400 | 413 if too_large(&body) => return Ok(Answer::TooLarge),
                        429 | 502 | 503 | 504 => {
                            last = format!("{status}");
                            self.backoff(attempt).max(retry_after.unwrap_or_default())
                        }
                        _ => {
                            let text = String::from_utf8_lossy(&body);
                            let said = text.lines().map(str::trim).find(|l| !l.is_empty());
                            bail!("{url} answered {status}: {}", one_line(said.unwrap_or("")));
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
                Err(error) => bail!("{url}: {}", one_line(&error.to_string())),
            };
            if attempt + 1 < self.tries {
                std::thread::sleep(wait);
            }
        }
        Err(anyhow!("{url}: no good answer in {} tries (the last: {last})", self.tries))
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

/// Writes the answers as one file: one header for CSV, one collection for GeoJSON.
struct Writer {
    format: FetchFormat,
    header: Option<Vec<u8>>,
    events: u64,
}

impl Writer {
    fn start(&mut self, out: &mut dyn Write) -> Result<()> {
        if self.format == FetchFormat::Geojson {
            out.write_all(b"{\"type\":\"FeatureCollection\",\"features\":[\n")?;
        }
        Ok(())
    }

    fn add(&mut self, body: &[u8], out: &mut dyn Write) -> Result<()> {
        match self.format {
            FetchFormat::Csv => {
                let mut lines = body.split_inclusive(|&b| b == b'\n');
                let Some(header) = lines.next() else { return Ok(()) };
                match &self.header {
                    None => {
                        out.write_all(header)?;
                        self.header = Some(header.to_vec());
                    }
                    Some(first) if first == header => {}
                    Some(_) => bail!("the service changed its CSV columns between answers"),
                }
                for line in lines.filter(|l| !l.trim_ascii().is_empty()) {
                    out.write_all(line)?;
                    if !line.ends_with(b"\n") {
                        out.write_all(b"\n")?;
                    }
                    self.events += 1;
                }
            }
            FetchFormat::Geojson => {
                if body.is_empty() {
                    return Ok(());
                }
                let collection: serde_json::Value = serde_json::from_slice(body)
                    .map_err(|e| anyhow!("the service answered with bad GeoJSON: {e}"))?;
                let features = collection["features"]
                    .as_array()
                    .ok_or_else(|| anyhow!("the service answered GeoJSON without features"))?;
                for feature in features {
                    if self.events > 0 {
                        out.write_all(b",\n")?;
                    }
                    serde_json::to_writer(&mut *out, feature)?;
                    self.events += 1;
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn Write) -> Result<()> {
        if self.format == FetchFormat::Geojson {
            out.write_all(b"\n]}\n")?;
        }
        Ok(())
    }
}

/// An instant as FDSN services read it: UTC, to the millisecond, without a zone.
fn stamp(micros: i64) -> String {
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
    #[arg(long, value_name = "TIME")]
    pub since: Timestamp,

    /// Fetch events before this instant.
    #[arg(long, value_name = "TIME")]
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

    /// The FDSN event service: USGS, or another that speaks the protocol (EMSC, IRIS).
    #[arg(long, value_name = "URL", default_value = "https://earthquake.usgs.gov/fdsnws/event/1")]
    pub url: String,

    /// The most events the service gives in one answer.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub limit: u64,

    /// How many times to try a request before giving up.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub tries: u32,

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
