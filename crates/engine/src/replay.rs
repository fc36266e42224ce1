//! A replay: a source's events through a policy, decided in a backend, and the report of
//! what passed and what was dropped. The one call behind the program's `replay` and the
//! library's.

use anyhow::Result;

use crate::Policy;
use crate::backend::Backend;
use crate::decisions::Decisions;
use crate::fleet::FleetPlan;
use crate::input::catalog::{self, Event, ReadOptions, ReadStats, Sink, Source};
use crate::layered::{Layer, LayeredRecord};
use crate::limit::Limit;
use crate::limiter::{OwnSize, SystemSizer};
use crate::limits::LimitPolicy;
use crate::notes::{dropped_by_lane, notes, ties_note};
use crate::policy_report::{LayerReport, LayeredReport, ReplayReport};
use crate::recorder::{KeyNames, Recorder, Settings};
use crate::redis::RedisTarget;
use crate::report::{LimiterReport, SystemSize};
use crate::units::time::Span;

/// How a replay runs, beside its policy and its input.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The length of the busiest windows (each limit's period if `None`).
    pub window: Option<Span>,
    /// How many keys the report ranks (0 for all).
    pub top: usize,
    /// Whether to keep each row's decision.
    pub decisions: bool,
    /// Redis, if the limits run there; in memory if `None`.
    pub redis: Option<RedisTarget>,
    /// A simulated fleet of servers, if one limit runs on one (never with Redis).
    pub fleet: Option<FleetPlan>,
    /// Whether envoy-ratelimit layers leave a refused event's hits uncounted in the limits
    /// it is not over.
    pub stop_counting_over_limit: bool,
}

impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions {
            window: None,
            top: 10,
            decisions: false,
            redis: None,
            fleet: None,
            stop_counting_over_limit: false,
        }
    }
}

/// What a replay found: the report, each row's decision if asked, and the notes of its
/// reading (a line each: what its user should know beside the report).
#[derive(Clone, Debug)]
pub struct Replayed {
    /// The report: one limit's, or the layers'.
    pub report: ReplayReport,
    /// Each row's decision, if asked for.
    pub decisions: Option<Decisions>,
    /// What the reading and the replay found worth saying.
    pub notes: Vec<String>,
}

/// Replays the events of `source`, read with `read` (whose key column and cost are the
/// policy's: [`LimitPolicy::settle`]), through `policy`, as `options` say.
pub fn replay(
    policy: &LimitPolicy,
    source: &Source,
    read: &ReadOptions,
    options: &ReplayOptions,
) -> crate::error::Result<Replayed> {
    Ok(replay_policy(policy, source, read, options)?)
}

/// [`replay`], its errors the internals'.
fn replay_policy(
    policy: &LimitPolicy,
    source: &Source,
    read: &ReadOptions,
    options: &ReplayOptions,
) -> Result<Replayed> {
    let settled = Settled::of(policy, options.window, options.stop_counting_over_limit)?;
    let backend = Backend::new(&settled.settings(), options.redis.as_ref(), options.fleet.clone())?;
    let (top, decisions) = (options.top, options.decisions);
    Run { source, read, backend: &backend, top, decisions }.replay(&settled)
}

/// A policy settled for a run: one limiter with its settings, or layers, each with the
/// limit it was settled from.
#[derive(Clone, Debug)]
pub enum Settled {
    /// One limiter.
    One(Settings),
    /// Layers, all or nothing.
    Layers {
        /// The limits, as given.
        limits: Vec<Limit>,
        /// Each one's layer.
        layers: Vec<Layer>,
    },
}

impl Settled {
    /// Settles `policy`, its busiest windows `window` long (each limit's period if `None`);
    /// envoy-ratelimit layers count refused hits unless `stop_counting`.
    pub fn of(policy: &LimitPolicy, window: Option<Span>, stop_counting: bool) -> Result<Settled> {
        Ok(match policy {
            LimitPolicy::One(limit) => Settled::One(limit.settings(window, true, "")?),
            LimitPolicy::AllOrNothing(limits) => {
                let layers = crate::limits::layers(limits, window, stop_counting, "layers")?;
                Settled::Layers { limits: limits.clone(), layers: layers.layers }
            }
        })
    }

    /// The policy, as engines take it: one limiter, or the layers all or nothing.
    pub fn policy(&self) -> Policy<'_> {
        match self {
            Settled::One(settings) => Policy::SideBySide(std::slice::from_ref(settings)),
            Settled::Layers { layers, .. } => Policy::AllOrNothing(layers),
        }
    }

    /// Each limit's settings, in order.
    pub fn settings(&self) -> Vec<Settings> {
        match self {
            Settled::One(settings) => vec![*settings],
            Settled::Layers { layers, .. } => layers.iter().map(|l| l.settings).collect(),
        }
    }
}

/// A replay's input and backend, and what it reports.
pub struct Run<'a> {
    /// Where the events come from.
    pub source: &'a Source,
    /// What to read from it.
    pub read: &'a ReadOptions,
    /// Where the limits run.
    pub backend: &'a Backend,
    /// How many keys the report ranks (0 for all).
    pub top: usize,
    /// Whether to keep each row's decision.
    pub decisions: bool,
}

impl Run<'_> {
    /// Replays the events through the settled policy: one limiter, or layers.
    pub fn replay(&self, settled: &Settled) -> Result<Replayed> {
        match settled {
            Settled::One(settings) => self.one(*settings),
            Settled::Layers { limits, layers } => self.layers(limits, layers),
        }
    }

    /// Decides `events`, read with `stats` (the rows in time order, or as the system logged
    /// them), through the settled policy, and returns each one's decision, the report, and
    /// the notes (with what one more read tells, as `again` asks, of one limiter).
    pub fn decide(
        &self,
        settled: &Settled,
        events: impl IntoIterator<Item = Event>,
        stats: &ReadStats,
        again: Again,
    ) -> Result<(Vec<bool>, ReplayReport, Vec<String>)> {
        let mut notes = notes(self.source, self.read, stats);
        let keys = &stats.keys;
        match settled {
            Settled::One(settings) => {
                let keyed = self.read.key_column.is_some();
                let recorder = self.backend.decide(&[*settings], keyed, (events, keys))?;
                let (report, spread) = self.one_report(*settings, &recorder, stats, again)?;
                notes.extend(spread);
                Ok((recorder.trace().to_vec(), ReplayReport::One(report), notes))
            }
            Settled::Layers { limits, layers } => {
                let mut record = self.backend.decide_layers(layers, (events, keys))?;
                let trace = std::mem::take(&mut record.trace);
                let report = self.layered_report(limits, record, stats);
                Ok((trace, ReplayReport::Layers(report), notes))
            }
        }
    }

    /// Replays the events through one limiter with `settings`.
    pub fn one(&self, settings: Settings) -> Result<Replayed> {
        let (source, read) = (self.source, self.read);
        let lanes = [settings];
        let keyed = read.key_column.is_some();
        let (recorder, stats, decisions) = if self.decisions {
            match self.backend.replay(&lanes, keyed, (source, read), true)? {
                // Every row made an event, taken in the rows' order: one decision a row.
                (recorder, stats) if !stats.sorted && stats.events == stats.rows => {
                    let decisions = Decisions::in_order(recorder.trace());
                    (recorder, stats, Some(decisions))
                }
                // Else read again, keeping where each event's row is.
                _ => {
                    let (rows, stats) = catalog::read_rows(source, read)?;
                    let events = rows.iter().map(|(event, _)| event);
                    let recorder = self.backend.decide(&lanes, keyed, (events, &stats.keys))?;
                    let decisions = Decisions::of_rows(&rows, recorder.trace(), source);
                    (recorder, stats, Some(decisions))
                }
            }
        } else {
            let (recorder, stats) = self.backend.replay(&lanes, keyed, (source, read), false)?;
            (recorder, stats, None)
        };
        let mut notes = notes(source, read, &stats);
        let again = Again { own_size: true, spread: true };
        let (report, spread) = self.one_report(settings, &recorder, &stats, again)?;
        notes.extend(spread);
        Ok(Replayed { report: ReplayReport::One(report), decisions, notes })
    }

    /// Returns the report of one limiter with `settings` whose replay gave `recorder` and
    /// `stats`, with what reading the input `again` tells if asked and it can be read
    /// again: nginx's own lossless burst, and a note of what whole-second ties can matter.
    pub fn one_report(
        &self,
        settings: Settings,
        recorder: &Recorder,
        stats: &ReadStats,
        again: Again,
    ) -> Result<(LimiterReport, Option<String>)> {
        let key = self.read.key_column.as_deref();
        let names = KeyNames::of(key, stats);
        let name = self.source.name();
        let mut reports = recorder.reports(&name, names, self.top, self.read.threads).lanes;
        let mut report = reports.swap_remove(0);
        let own = settings.algorithm.own_size().filter(|own| own.in_replay && again.own_size);
        let memory = matches!(self.backend, Backend::Memory);
        let tied = stats.whole_second_ties() && memory;
        if let Some(read) = self.read_again(own.map(|own| (own, settings)))? {
            report.system_size = read.own.map(|(mut finder, own)| {
                let (value, key) = finder.result();
                let named = key.filter(|_| self.read.key_column.is_some());
                SystemSize {
                    system: settings.algorithm.name().to_owned(),
                    setting: own.setting.to_owned(),
                    value,
                    key: named.zip(names.names).map(|(key, table)| table.name(key)),
                }
            });
        }
        let other = (tied && again.spread && self.source.can_read_again())
            .then(|| self.other_reading(settings, report.dropped))
            .transpose()?;
        Ok((report, other))
    }

    /// Reads the input once more, if it can be read again and the system's own lossless
    /// setting (nginx's `burst=`) is asked, at `own`'s settings, per key if keyed, in the
    /// order the system sees them. `None` if it is not asked, or the input cannot be read
    /// again.
    fn read_again(&self, own: Option<(OwnSize, Settings)>) -> Result<Option<Reread>> {
        let Some((own, settings)) = own.filter(|_| self.source.can_read_again()) else {
            return Ok(None);
        };
        let keyed = self.read.key_column.is_some();
        let empty =
            (keyed && settings.algorithm.skips_empty_key()).then(|| self.read.key_notes.clone());
        let fresh = || Reread {
            // The system's own, with the parameters the replay ran it with (nginx's zone).
            own: Some(((own.finder)(settings.rate, &settings.params), own)),
            empty: empty.clone(),
        };
        let (again, _) = catalog::read_events(self.source, self.read, fresh)?;
        Ok(Some(again))
    }

    /// What whole-second ties can matter: the input replayed again through a limiter with
    /// `settings`, its ties read the other way (`--ties`), and that replay's drops beside
    /// `dropped`, this reading's.
    fn other_reading(&self, settings: Settings, dropped: u64) -> Result<String> {
        let other = ReadOptions { ties: self.read.ties.other(), ..self.read.clone() };
        let keyed = self.read.key_column.is_some();
        let (recorder, _) = self.backend.replay(&[settings], keyed, (self.source, &other), true)?;
        let other_dropped = dropped_by_lane(recorder.trace(), 1)[0];
        Ok(ties_note(self.read.ties, &[(None, dropped, other_dropped)]))
    }

    /// Replays the events through `layers`, each settled from its limit in `limits`, all or
    /// nothing.
    pub fn layers(&self, limits: &[Limit], layers: &[Layer]) -> Result<Replayed> {
        let (source, read) = (self.source, self.read);
        let (record, stats, decisions) = if self.decisions {
            let (rows, stats) = catalog::read_rows(source, read)?;
            let events = rows.iter().map(|(event, _)| event);
            let record = self.backend.decide_layers(layers, (events, &stats.keys))?;
            let decided = (&record.trace[..], &record.refusals[..]);
            let decisions = Decisions::of_layers(&rows, decided, layers.len(), source);
            (record, stats, Some(decisions))
        } else {
            let (record, stats) = self.backend.replay_layers(layers, source, read)?;
            (record, stats, None)
        };
        let notes = notes(source, read, &stats);
        let report = self.layered_report(limits, record, &stats);
        Ok(Replayed { report: ReplayReport::Layers(report), decisions, notes })
    }

    /// Returns the report of a layered record, each layer named by its limit in `limits`.
    pub fn layered_report(
        &self,
        limits: &[Limit],
        record: LayeredRecord,
        stats: &ReadStats,
    ) -> LayeredReport {
        let name = self.source.name();
        let threads = self.read.threads;
        let layers = limits
            .iter()
            .zip(record.layers)
            .map(|(limit, (recorder, refused, only, alone))| {
                let names = KeyNames::of(limit.key.as_deref(), stats);
                let mut reports = recorder.reports(&name, names, self.top, threads).lanes;
                let limiter = reports.swap_remove(0);
                LayerReport { spec: limit.to_string(), refused, only, alone, limiter }
            })
            .collect();
        LayeredReport {
            input: name,
            events: record.events,
            passed: record.passed,
            dropped: record.events - record.passed,
            layers,
        }
    }
}

/// What one more read of the input may tell of one limiter's replay.
#[derive(Clone, Copy, Debug)]
pub struct Again {
    /// The system's own lossless setting, if its limiter has one a replay reports (nginx's
    /// `burst=`).
    pub own_size: bool,
    /// The drops with whole-second ties spread across their second, if any are tied.
    pub spread: bool,
}

impl Again {
    /// Nothing: the input is not read again.
    pub const NOTHING: Again = Again { own_size: false, spread: false };
}

/// What a second read of the input keeps: the system's own finder, and the events
/// themselves, to be replayed with their whole-second ties spread.
struct Reread {
    own: Option<(Box<dyn SystemSizer>, OwnSize)>,
    /// With keys, the empty key, which the system does not account.
    empty: Option<catalog::KeyNotes>,
}

impl Sink for Reread {
    type Error = anyhow::Error;

    fn event(&mut self, event: Event) -> Result<()> {
        if let Some((finder, _)) = &mut self.own
            && !self.empty.as_ref().is_some_and(|empty| empty.is(event.key))
        {
            finder.push(event);
        }
        Ok(())
    }
}
