//! `ratelimit synth`'s earthquake catalog (feature `quakes`): the ETAS model, streamed in
//! the USGS CSV layout.

use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{Result, anyhow, bail};
use clap::Args;

use crate::cli::args::{Days, Decimal};
use crate::render::outfile::Output;
use crate::synth::etas::{self, Simulation};
use crate::synth::usgs::write_catalog;
use crate::units::time::{Span, Timestamp};

pub(crate) const SYNTH_AFTER_HELP: &str = "\
The model is ETAS. Background events are a Poisson process, 2.7 a day of M>=5 (times 10^(b(5 - \
Mc)) for another --min-mag, times --scale); with the aftershocks they trigger, the long-run \
mean is about 4.7 M>=5 events a day, the 2015-2025 world average. Magnitudes follow \
Gutenberg-Richter from --min-mag up to 9.5. Every event triggers aftershocks at the rate \
K*10^(alpha(M - Mc)) / (t + c)^p per day, with K = 0.0038, alpha = 1, c = 0.01 day, p = 1.1, \
for up to 10 years; a planted M8.8 yields about 190 M>=5 events in its first 48 hours.

Examples:
  ratelimit synth --seed 1 --days 4018 > synthetic_2015_2025.csv
  ratelimit synth --days 42 --mainshock 8.8@2015-01-20T00:00:00Z | ratelimit min-bucket --rate 5/h
  ratelimit synth --scale 500 --days 4018 -o big.csv     # about 10 million events

Exit status: 0 on success, 2 on any error.";

/// `ratelimit synth`'s earthquake catalog.
#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// The seed of the random numbers: the same seed and options give a byte-identical file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// The first instant of the catalog.
    #[arg(
        long,
        value_name = "TIME",
        value_parser = crate::units::time::rfc3339,
        default_value = "2015-01-01T00:00:00Z",
        allow_hyphen_values = true
    )]
    pub start: Timestamp,

    /// How many days to simulate [default: 365].
    #[arg(long, value_name = "DAYS", conflicts_with = "until", allow_hyphen_values = true)]
    pub days: Option<Days>,

    /// Simulate up to this instant, exclusive, instead of --days.
    #[arg(long, value_name = "TIME", value_parser = crate::units::time::rfc3339, allow_hyphen_values = true)]
    pub until: Option<Timestamp>,

    /// Plant a great earthquake, such as 8.8@2025-07-29T23:24:52.483Z; repeatable.
    #[arg(long, value_name = "MAG@TIME", allow_hyphen_values = true)]
    pub mainshock: Vec<Mainshock>,

    /// The smallest magnitude simulated, Mc, from 0 to 10.
    #[arg(long, value_name = "M", default_value = "5", allow_hyphen_values = true)]
    pub min_mag: Decimal,

    /// The Gutenberg-Richter b-value.
    #[arg(long, value_name = "B", default_value = "1", allow_hyphen_values = true)]
    pub b_value: Decimal,

    /// Multiply the background rate by X, for large catalogs: 500 gives about 10 million
    /// events over 4018 days.
    #[arg(long, value_name = "X", default_value = "1", allow_hyphen_values = true)]
    pub scale: Decimal,

    /// Write the catalog to FILE, which appears whole or not at all, instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// A planted earthquake: its magnitude and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mainshock {
    /// The magnitude.
    pub mag: Decimal,
    /// The time.
    pub time: Timestamp,
}

impl FromStr for Mainshock {
    type Err = anyhow::Error;

    fn from_str(text: &str) -> anyhow::Result<Mainshock> {
        let (mag, time) = text.split_once('@').ok_or_else(|| {
            anyhow::anyhow!("'{text}' is not MAG@TIME, like 8.8@2025-07-29T23:24:52Z")
        })?;
        Ok(Mainshock { mag: mag.parse()?, time: crate::units::time::rfc3339(time)? })
    }
}

impl CatalogArgs {
    /// Writes the catalog.
    pub fn write(&self) -> Result<ExitCode> {
        let (params, output) = self.resolve()?;
        let simulation = Simulation::new(params);
        output.write(|out| write_catalog(simulation, out))?;
        Ok(ExitCode::SUCCESS)
    }

    /// Settles the model's parameters, refusing those it cannot honor, and the output.
    pub fn resolve(&self) -> Result<(etas::Params, Output)> {
        let start = self.start;
        let end = match (self.until, self.days) {
            (Some(until), _) => until,
            (None, days) => {
                // A millionth of a day is exactly 86 400 µs.
                let micro_days = days.map_or(365_000_000, |d| d.0);
                micro_days
                    .checked_mul(86_400)
                    .and_then(Span::from_micros)
                    .and_then(|span| start.checked_add(span))
                    .ok_or_else(|| anyhow!("--start plus --days is past the year 9999"))?
            }
        };
        if end < start {
            bail!("--until ({end}) must not be before --start ({start})");
        }
        let in_range = |m: Decimal| (0..=10_000_000).contains(&m.0);
        if !(0.0..etas::Params::MAX_MAG).contains(&self.min_mag.as_f64()) {
            bail!(
                "--min-mag must be from 0 to below {}, the largest magnitude the model makes",
                etas::Params::MAX_MAG
            );
        }
        if self.b_value.0 <= 0 {
            bail!("--b-value must be more than 0");
        }
        if self.scale.0 <= 0 {
            bail!("--scale must be more than 0: a zero rate makes no catalog");
        }
        let mut params = etas::Params::new(self.seed, start, end);
        params.min_mag = self.min_mag.as_f64();
        params.b_value = self.b_value.as_f64();
        // The background rate is set for M≥5; Gutenberg–Richter carries it to another Mc.
        params.background_per_day = etas::Params::BACKGROUND_M5_PER_DAY
            * libm::pow(10.0, params.b_value * (5.0 - params.min_mag))
            * self.scale.as_f64();
        if !params.background_per_day.is_finite() {
            bail!(
                "the background rate, 2.7 × 10^(b(5 - Mc)) × --scale a day, overflows with \
                 --b-value {} and --min-mag {}",
                self.b_value.as_f64(),
                self.min_mag.as_f64()
            );
        }
        let n = params.branching_ratio();
        if n >= 1.0 {
            bail!(
                "with --b-value {} and --min-mag {}, each event triggers {n:.2} aftershocks on \
                 average: sequences would grow without end; raise --b-value",
                self.b_value.as_f64(),
                self.min_mag.as_f64()
            );
        }
        for shock in &self.mainshock {
            if !in_range(shock.mag) || shock.mag.0 < self.min_mag.0 {
                bail!("--mainshock magnitude must be from --min-mag to 10");
            }
            if shock.time < start || shock.time >= end {
                bail!("--mainshock at {} is outside the catalog, [{start}, {end})", shock.time);
            }
            params.mainshocks.push((shock.mag.as_f64(), shock.time));
        }
        let expected = params.expected_events();
        if expected.is_nan() || expected > etas::Params::MAX_EVENTS {
            bail!(
                "these settings make about {expected:.1e} events, more than the {:.0e} synth \
                 makes at most; shorten --days, lower --scale, raise --min-mag or plant a smaller --mainshock",
                etas::Params::MAX_EVENTS
            );
        }
        Ok((params, self.output.clone().map_or(Output::Stdout, Output::new)))
    }
}
