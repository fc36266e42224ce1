//! Resolving the command line: each group of arguments settles its own defaults and
//! conflicts, once, before anything is read; each command's own options stay where clap
//! put them.

use std::io::{self, IsTerminal};
use std::num::NonZeroU32;
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::ValueEnum;

use crate::cli::args::{
    ColorChoice, FleetArgs, InputArgs, LimitArgs, LiveLimitArgs, RateArgs, RedisArgs, RouteArg,
    ShareMode, Until,
};
use crate::engine::fleet::{FleetPlan, MAX_SERVERS, Route};
use crate::engine::limit::Limit;
use crate::engine::recorder::Settings;
use crate::engine::redis::RedisTarget;
use crate::input::catalog::{self, ColumnFilter, ReadOptions, RowFilter, Source, TimeFilter};
use crate::input::cost::Cost;
use crate::input::format::InputFormat;
use crate::input::log_format::{ARRIVAL, LogFormat, TIMED_COMBINED, is_timed_log};
use crate::limiter::{Algorithm, Share};
use crate::message::one_line;
use crate::render::export::Style;
use crate::render::outfile::{Identity, Output};
use crate::sample;
use crate::units::layout::{TimeLayout, TimePattern, parse_offset};
use crate::units::time::{Span, TimeFormat};

pub use crate::engine::limit::MAX_BURST;

/// The most share modes `compare --servers` puts side by side: local, split, and synced at
/// up to 62 periods. Each is a lane, with its own copies of every key's state.
const MAX_SHARES: usize = 64;

/// The most rates `min-bucket` takes, in all its `--rate` lists and ranges.
pub const MAX_RATES: usize = crate::units::rate::MAX_RANGE;

/// How tables are styled on stdout and on stderr: colored only for a terminal, unless
/// `--color` says otherwise, or the environment does: anstream reads `NO_COLOR`,
/// `CLICOLOR`, `CLICOLOR_FORCE` and `TERM=dumb` as other well-made tools do.
#[derive(Clone, Copy, Debug)]
pub struct Styles {
    /// For tables on stdout.
    pub stdout: Style,
    /// For tables on stderr.
    pub stderr: Style,
}

impl Styles {
    /// Settles the colors from `--color`, the environment and the terminals.
    pub fn resolve(choice: ColorChoice) -> Styles {
        // Tables are built as strings, padded by width before they are written, so the
        // colors are chosen here once, rather than stripped by an anstream writer after.
        let color = |auto: anstream::ColorChoice| match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => auto != anstream::ColorChoice::Never,
        };
        Styles {
            stdout: Style::new(color(anstream::AutoStream::choice(&io::stdout()))),
            stderr: Style::new(color(anstream::AutoStream::choice(&io::stderr()))),
        }
    }
}

/// The input of a command: where the catalog comes from, and what to read from it.
#[derive(Debug)]
pub struct Input {
    /// Where the catalog comes from.
    pub source: Source,
    /// What to read from it.
    pub read: ReadOptions,
    /// A note for stderr about the input's choice, when the user did not make it.
    pub note: Option<&'static str>,
}

impl LiveLimitArgs {
    /// Settles the one limiter; `command` names the command that needs it, for the error.
    pub fn settings(&self, command: &str) -> Result<Settings> {
        let Some(rate) = self.rate else { bail!("{command} needs --rate, or --limit") };
        RateArgs { rate, shape: self.shape }.settings(self.algo, None, true)
    }
}

impl RateArgs {
    /// Settles one limiter's settings, with a window of `window` (the rate's period if
    /// `None`). A burst given to a limiter without one is an error when the user named
    /// that limiter (`strict`), and ignored when it is one of several.
    pub fn settings(
        &self,
        algorithm: Algorithm,
        window: Option<Span>,
        strict: bool,
    ) -> Result<Settings> {
        let limit = Limit {
            algorithm,
            rate: self.rate,
            burst: self.shape.burst,
            cost: Cost::default(),
            key: None,
            params: self.shape.nginx.given(),
        };
        let settings = limit.settings(window, strict, "--")?;
        check_window(window)?;
        Ok(settings)
    }
}

/// Refuses a `--window` of zero.
pub fn check_window(window: Option<Span>) -> Result<()> {
    if window.is_some_and(Span::is_zero) {
        bail!("--window must be longer than zero");
    }
    Ok(())
}

impl LimitArgs {
    /// Settles the settings of several limiters side by side, in order: a burst goes to
    /// those that have one.
    pub fn side_by_side(&self, algorithms: &[Algorithm]) -> Result<Vec<Settings>> {
        algorithms.iter().map(|&a| self.size.settings(a, self.window, false)).collect()
    }
}

impl InputArgs {
    /// Settles the input: the file, stdin or the sample, and the rows to keep, with keys
    /// from `key_column` if given, with the flag that asked for it.
    pub fn resolve(&self, key_column: Option<(&str, &'static str)>) -> Result<Input> {
        let mut note = None;
        let source = match &self.file[..] {
            _ if let Some(given) = &self.given => given.clone(),
            _ if self.sample => sample::source(),
            [path] if path == Path::new("-") => Source::Stdin,
            [path] => Source::Path(path.to_owned()),
            [] if io::stdin().is_terminal() => {
                note = Some(sample::NOTE);
                sample::source()
            }
            [] => Source::Stdin,
            paths if paths.iter().any(|p| p == Path::new("-")) => {
                bail!("- (standard input) is read alone, not with other files")
            }
            paths => Source::Files(paths.to_vec()),
        };
        let until = match (self.until, self.since) {
            (Some(Until::After(span)), Some(since)) => match since.checked_add(span) {
                Some(until) => Some(until),
                None => bail!("--since plus --until {span} is past the year 9999"),
            },
            (Some(Until::After(_)), None) => bail!("--until +DURATION needs --since"),
            (Some(Until::At(until)), _) => Some(until),
            (None, _) => None,
        };
        if let (Some(since), Some(until)) = (self.since, until)
            && since >= until
        {
            bail!("--since ({since}) must be before --until ({until})");
        }
        let log_format = match &self.log_format {
            Some(text) => Some(
                LogFormat::parse(text)
                    .map_err(|why| anyhow!("--log-format '{}': {why}", one_line(text)))?,
            ),
            None => None,
        };
        // A file's name or first line says its format; of several files, the first's. So
        // does standard input's first line when it is a file (`< access.log`), which can be
        // looked at from its start without taking what the reader reads; a pipe cannot.
        let stdin = std::path::PathBuf::from("/dev/stdin");
        let first = match &source {
            Source::Path(path) => Some(path),
            Source::Files(paths) => paths.first(),
            Source::Stdin if cfg!(unix) => Some(&stdin),
            _ => None,
        };
        let format = match (&self.input_format, first) {
            (Some(format), _) if log_format.is_some() && *format != InputFormat::Clf => {
                bail!("--log-format reads access logs; --input-format {} is not one", format.name())
            }
            _ if log_format.is_some() => InputFormat::Clf,
            (Some(format), _) => *format,
            (None, Some(path)) => InputFormat::of_path(path)
                .or_else(|| InputFormat::of_content(path))
                .unwrap_or_default(),
            (None, None) => InputFormat::Csv,
        };
        // An access log whose lines carry $msec and $request_time after the combined
        // fields is read in that layout unless told another: times to the millisecond.
        let log_format = match (log_format, first) {
            (None, Some(path))
                if format == InputFormat::Clf
                    && self.time_column.is_none()
                    && is_timed_log(path) =>
            {
                LogFormat::parse(TIMED_COMBINED).ok()
            }
            (given, _) => given,
        };
        // Of several files, each is read as the first is: one whose name says another
        // format would be misread.
        if let (None, Source::Files(paths)) = (&self.input_format, &source)
            && let Some((other, said)) = paths.iter().find_map(|path| {
                InputFormat::of_path(path).filter(|&said| said != format).map(|said| (path, said))
            })
        {
            bail!(
                "{}: its name says {}, but {} is read as {}: several files are read in one \
                 format",
                other.display(),
                said.name(),
                paths[0].display(),
                format.name()
            );
        }
        let tabular = matches!(format, InputFormat::Csv | InputFormat::Tsv);
        if !tabular && (self.delimiter.is_some() || self.no_headers) {
            let flag = if self.no_headers { "--no-headers" } else { "--delimiter" };
            bail!("{flag} is for CSV and TSV input; this input is {}", format.name());
        }
        let time_column = match (&self.time_column, &log_format) {
            (Some(column), _) => column.clone(),
            (None, Some(layout)) => match layout.time_field() {
                Some(field) => field.into(),
                None => bail!(
                    "--log-format has no time: $msec, $time_iso8601 or $time_local (or name \
                     one with --time-column and --time-format)"
                ),
            },
            (None, None) if self.no_headers => "1".into(),
            (None, None) => format.time_column().into(),
        };
        if time_column.split(',').any(str::is_empty) {
            bail!("--time-column '{time_column}' has an empty name");
        }
        let time_format = self.time_layout(format, log_format.is_some(), &time_column)?;
        Ok(Input {
            source,
            read: ReadOptions {
                format,
                delimiter: self.delimiter,
                headers: !self.no_headers,
                log_format,
                time_column,
                time_format,
                filters: (self.since.map(|t| RowFilter::Time(TimeFilter::Since(t))))
                    .into_iter()
                    .chain(until.map(|t| RowFilter::Time(TimeFilter::Until(t))))
                    .chain(self.min_mag(format))
                    .chain(self.at_least.iter().map(|w| {
                        RowFilter::Column(ColumnFilter {
                            column: w.column.clone(),
                            at_least: w.at_least.0,
                            asked_by: "--where",
                        })
                    }))
                    .collect(),
                cost: self.cost.clone().unwrap_or_default(),
                key_column: key_column.map(|(column, _)| column.to_owned()),
                key_asked_by: key_column.map_or("--key", |(_, flag)| flag),
                // Only a person at a terminal wants to see a bar; it goes to stderr.
                progress: super::diagnostics::progress().then_some(crate::render::progress::bar),
                skip_bad: self.skip_bad,
                empty_key: self.empty_key.resolve(key_column.is_some())?,
                stop: super::diagnostics::stop(),
                threads: self.threads.map_or_else(catalog::available_threads, usize::from),
            },
            note,
        })
    }

    /// Settles how times are written: a named format or a pattern, else the format's own
    /// (`logged`: a log read by a `log_format`, whose variables say how).
    fn time_layout(
        &self,
        format: InputFormat,
        logged: bool,
        time_column: &str,
    ) -> Result<TimeLayout> {
        let offset = match &self.time_zone {
            Some(text) => Some(parse_offset(text).ok_or_else(|| {
                anyhow!("--time-zone '{text}' is not an offset from UTC like +00:00, -0700 or Z")
            })?),
            None => None,
        };
        let named = |text: &str| TimeFormat::from_str(text, true).ok();
        let layout = match self.time_format.as_deref() {
            Some(text) if text.contains('%') => {
                TimeLayout::Pattern(TimePattern::new(text, offset)?)
            }
            Some(text) => TimeLayout::Named(named(text).ok_or_else(|| {
                anyhow!(
                    "--time-format '{text}' is neither rfc3339, unix-s, unix-ms, unix-us nor a \
                     strftime pattern (with %)"
                )
            })?),
            // nginx's variables, in a --log-format: $msec (and the arrival made of it) is
            // epoch seconds, $time_iso8601 RFC 3339, $time_local the combined log's.
            None if logged && matches!(time_column, "msec" | ARRIVAL) => {
                TimeLayout::Named(TimeFormat::UnixS)
            }
            None if logged && time_column == "time_iso8601" => {
                TimeLayout::Named(TimeFormat::Rfc3339)
            }
            None if format == InputFormat::Clf => {
                TimeLayout::Pattern(TimePattern::new(CLF_TIME, offset)?)
            }
            None if format == InputFormat::Geojson => TimeLayout::Named(TimeFormat::UnixMs),
            None => TimeLayout::Named(TimeFormat::Rfc3339),
        };
        if offset.is_some() && matches!(layout, TimeLayout::Named(_)) {
            bail!("--time-zone applies to a --time-format pattern that names no zone");
        }
        Ok(layout)
    }
}

/// How nginx and Apache write `$time_local`: `10/Oct/2000:13:55:36 -0700`.
const CLF_TIME: &str = "%d/%b/%Y:%H:%M:%S %z";

impl Input {
    /// Refuses an output that would overwrite this input, before anything is read.
    pub fn check_output(&self, output: &Output) -> Result<()> {
        let of = |path: &std::path::PathBuf| {
            std::fs::metadata(path).ok().as_ref().and_then(Identity::of)
        };
        match &self.source {
            Source::Path(path) => output.check_not_input(of(path).as_ref(), &self.source.name()),
            Source::Stdin => output.check_not_input(Identity::of_stdin().as_ref(), "<stdin>"),
            Source::Files(paths) => paths.iter().try_for_each(|path| {
                output.check_not_input(of(path).as_ref(), &path.display().to_string())
            }),
            _ => output.check_not_input(None, &self.source.name()),
        }
    }
}

impl FleetArgs {
    /// Returns the column to read as each event's key: `key` (--key's), else the column
    /// that --route hash:COLUMN routes by.
    /// With the column, the flag that asked for it, for messages.
    pub fn key_column<'a>(&'a self, key: Option<&'a str>) -> Option<(&'a str, &'static str)> {
        match (key, &self.route) {
            (Some(key), _) => Some((key, "--key")),
            (None, Some(RouteArg::Hash(column))) if self.servers.is_some() => {
                Some((column, "--route"))
            }
            (None, _) => None,
        }
    }

    /// Settles the fleet for `lanes` limiters sharing their limits as --share says, or
    /// `None` without --servers; `key` is --key's column.
    pub fn one_share(&self, key: Option<&str>, lanes: usize) -> Result<Option<FleetPlan>> {
        let Some((servers, route)) = self.route(key)? else { return Ok(None) };
        let share = match (self.share.unwrap_or(ShareMode::Local), self.sync.as_slice()) {
            (ShareMode::Synced, [every]) => Share::Synced(positive_sync(*every)?),
            (ShareMode::Synced, []) => {
                bail!(
                    "--share synced needs --sync DURATION: how often servers see the shared state"
                )
            }
            (ShareMode::Synced, _) => bail!("--share synced takes one --sync"),
            (ShareMode::Local, []) => Share::Local,
            (ShareMode::Split, []) => Share::Split,
            (_, _) => bail!("--sync applies to --share synced"),
        };
        Ok(Some(FleetPlan { servers, route, shares: vec![share; lanes], keyed: key.is_some() }))
    }

    /// Settles the fleet for one limiter in every share mode side by side: local, split,
    /// and synced at each --sync (1m if none), or `None` without --servers.
    pub fn every_share(&self, key: Option<&str>) -> Result<Option<FleetPlan>> {
        let Some((servers, route)) = self.route(key)? else { return Ok(None) };
        let syncs = if self.sync.is_empty() { vec![Span::MINUTE] } else { self.sync.clone() };
        let mut shares = vec![Share::Local, Share::Split];
        for every in syncs {
            shares.push(Share::Synced(positive_sync(every)?));
        }
        if shares.len() > MAX_SHARES {
            bail!("compare takes at most {} --sync", MAX_SHARES - 2);
        }
        Ok(Some(FleetPlan { servers, route, shares, keyed: key.is_some() }))
    }

    fn route(&self, key: Option<&str>) -> Result<Option<(NonZeroU32, Route)>> {
        let Some(k) = self.servers else {
            let fleet_only = self.route.is_some() || self.seed.is_some();
            if fleet_only || self.share.is_some() || !self.sync.is_empty() {
                bail!(
                    "--route, --seed, --share and --sync shape a fleet: use them with --servers K"
                );
            }
            return Ok(None);
        };
        let servers = NonZeroU32::new(k)
            .filter(|k| k.get() <= MAX_SERVERS)
            .ok_or_else(|| anyhow!("--servers must be from 1 to {MAX_SERVERS}, not {k}"))?;
        let route = match &self.route {
            None | Some(RouteArg::RoundRobin) => Route::RoundRobin,
            Some(RouteArg::Random) => Route::Random(self.seed.unwrap_or(1)),
            Some(RouteArg::Hash(column)) => match key {
                Some(key) if key != column => bail!(
                    "--route hash:{column} with --key {key}: a fleet routes by the key column \
                     (use --route hash:{key})"
                ),
                _ => Route::Sticky(column.clone()),
            },
        };
        if self.seed.is_some() && !matches!(route, Route::Random(_)) {
            bail!("--seed draws the servers of --route random");
        }
        Ok(Some((servers, route)))
    }
}

/// Refuses a sync period of zero.
fn positive_sync(every: Span) -> Result<Span> {
    if every.is_zero() {
        bail!("--sync must be longer than zero");
    }
    Ok(every)
}

impl RedisArgs {
    /// Settles where limiters run in Redis, if anywhere.
    pub fn target(&self) -> Result<Option<RedisTarget>> {
        let micros = u64::try_from(self.redis_timeout.as_micros()).unwrap_or(0);
        if micros == 0 {
            bail!("--redis-timeout must be longer than zero");
        }
        let timeout = Duration::from_micros(micros);
        let prefix = &self.redis_prefix;
        Ok((!self.redis.is_empty()).then(|| RedisTarget {
            urls: self.redis.clone(),
            prefix: prefix.clone(),
            timeout,
        }))
    }
}

impl InputArgs {
    /// Returns the filter `--min-mag` asks for (feature `quakes`): the magnitude is a
    /// column like any other to the reader.
    fn min_mag(&self, format: InputFormat) -> Option<RowFilter> {
        #[cfg(feature = "quakes")]
        return self.min_mag.map(|m| {
            RowFilter::Column(ColumnFilter {
                column: mag_column(format).to_owned(),
                at_least: m.0,
                asked_by: "--min-mag",
            })
        });
        #[cfg(not(feature = "quakes"))]
        {
            let _ = format;
            None
        }
    }
}

/// Returns the field `--min-mag` reads in an earthquake catalog of `format`: the USGS
/// CSV's `mag`, or its GeoJSON's `properties.mag`. The readers know no magnitude: to
/// them it is a column like any other (`--where`).
#[cfg(feature = "quakes")]
fn mag_column(format: InputFormat) -> &'static str {
    match format {
        InputFormat::Geojson => "properties.mag",
        _ => "mag",
    }
}
