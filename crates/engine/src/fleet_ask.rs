//! A simulated fleet as its user asks for it (how many servers, how events find one, how
//! they share the limit), settled into a [`FleetPlan`] once, for the command line's flags
//! and a library's keywords alike.

use std::num::NonZeroU32;
use std::str::FromStr;

use anyhow::{Result, anyhow, bail};

use crate::fleet::{FleetPlan, MAX_SERVERS, Route};
use crate::input::asked::Names;
use crate::limiter::Share;
use crate::recorder::Settings;
use crate::units::time::Span;

/// The most share modes put side by side: local, split, and synced at up to 62 periods.
/// Each is a lane, with its own copies of every key's state.
pub const MAX_SHARES: usize = 64;

/// How events find their server, as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteAsk {
    /// Event i to server i mod K.
    RoundRobin,
    /// Drawn uniformly.
    Random,
    /// By a column's value.
    Hash(String),
}

impl FromStr for RouteAsk {
    type Err = String;

    fn from_str(text: &str) -> Result<RouteAsk, String> {
        match text {
            "round-robin" => Ok(RouteAsk::RoundRobin),
            "random" => Ok(RouteAsk::Random),
            _ => match text.strip_prefix("hash:") {
                Some(column) if !column.is_empty() => Ok(RouteAsk::Hash(column.to_owned())),
                _ => Err(format!("'{text}' is none of round-robin, random and hash:COLUMN")),
            },
        }
    }
}

/// How a fleet's servers share the limit, as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShareMode {
    /// Each server runs the whole limit.
    Local,
    /// Each server runs its share: N per K·P, burst ⌈b/K⌉.
    Split,
    /// One shared limiter, each server seeing it as it was at the last sync.
    Synced,
}

impl FromStr for ShareMode {
    type Err = String;

    fn from_str(text: &str) -> Result<ShareMode, String> {
        match text {
            "local" => Ok(ShareMode::Local),
            "split" => Ok(ShareMode::Split),
            "synced" => Ok(ShareMode::Synced),
            _ => Err(format!("'{text}' is none of local, split and synced")),
        }
    }
}

/// A fleet as asked: every field the user's, or its "not given". Without `servers`, no
/// fleet, and the other fields must not be given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetAsk {
    /// How many servers.
    pub servers: Option<u32>,
    /// How events find their server (round-robin if `None`).
    pub route: Option<RouteAsk>,
    /// The seed of a random route (1 if `None`).
    pub seed: Option<u64>,
    /// How the servers share the limit.
    pub share: Option<ShareMode>,
    /// How often synced servers see the shared state.
    pub sync: Vec<Span>,
}

impl FleetAsk {
    /// Returns the column to read as each event's key: `key`, else the column that a
    /// hash route routes by; with the option that asked for it, named as `names` says, for
    /// messages.
    pub fn key_column<'a>(
        &'a self,
        key: Option<&'a str>,
        names: Names,
    ) -> Option<(&'a str, &'static str)> {
        let (by_key, by_route) = match names {
            Names::Flags => ("--key", "--route"),
            Names::Keywords => ("key=", "route="),
        };
        match (key, &self.route) {
            (Some(key), _) => Some((key, by_key)),
            (None, Some(RouteAsk::Hash(column))) if self.servers.is_some() => {
                Some((column, by_route))
            }
            (None, _) => None,
        }
    }

    /// Settles the fleet of limiters with `settings` side by side, keyed by `key`: with
    /// `modes`, one limiter on a fleet with no share mode asked runs in every share mode
    /// side by side (each a lane of the settings returned), as `compare` shows them.
    pub fn plan(
        &self,
        settings: Vec<Settings>,
        key: Option<&str>,
        modes: bool,
        names: Names,
    ) -> Result<(Vec<Settings>, Option<FleetPlan>)> {
        match settings[..] {
            [one] if modes && self.servers.is_some() && self.share.is_none() => {
                let fleet = self.every_share(key, names)?;
                let lanes = fleet.as_ref().map_or(1, |f| f.shares.len());
                Ok((vec![one; lanes], fleet))
            }
            _ => {
                let fleet = self.one_share(key, settings.len(), names)?;
                Ok((settings, fleet))
            }
        }
    }

    /// Settles the fleet for `lanes` limiters sharing their limits as asked, or `None`
    /// without servers; `key` is the key column. Options are named as `names` says.
    pub fn one_share(
        &self,
        key: Option<&str>,
        lanes: usize,
        names: Names,
    ) -> Result<Option<FleetPlan>> {
        let n = |flag| names.of(flag);
        let Some((servers, route)) = self.route(key, names)? else { return Ok(None) };
        let share = match (self.share.unwrap_or(ShareMode::Local), self.sync.as_slice()) {
            (ShareMode::Synced, [every]) => Share::Synced(positive_sync(*every, names)?),
            (ShareMode::Synced, []) => {
                bail!(
                    "{} synced needs {} DURATION: how often servers see the shared state",
                    n("share"),
                    n("sync")
                )
            }
            (ShareMode::Synced, _) => bail!("{} synced takes one {}", n("share"), n("sync")),
            (ShareMode::Local, []) => Share::Local,
            (ShareMode::Split, []) => Share::Split,
            (_, _) => bail!("{} applies to {} synced", n("sync"), n("share")),
        };
        Ok(Some(FleetPlan { servers, route, shares: vec![share; lanes], keyed: key.is_some() }))
    }

    /// Settles the fleet for one limiter in every share mode side by side: local, split,
    /// and synced at each sync period (1m if none), or `None` without servers.
    pub fn every_share(&self, key: Option<&str>, names: Names) -> Result<Option<FleetPlan>> {
        let Some((servers, route)) = self.route(key, names)? else { return Ok(None) };
        let syncs = if self.sync.is_empty() { vec![Span::MINUTE] } else { self.sync.clone() };
        let mut shares = vec![Share::Local, Share::Split];
        for every in syncs {
            shares.push(Share::Synced(positive_sync(every, names)?));
        }
        if shares.len() > MAX_SHARES {
            bail!("compare takes at most {} {}", MAX_SHARES - 2, names.of("sync"));
        }
        Ok(Some(FleetPlan { servers, route, shares, keyed: key.is_some() }))
    }

    fn route(&self, key: Option<&str>, names: Names) -> Result<Option<(NonZeroU32, Route)>> {
        let n = |flag| names.of(flag);
        let Some(k) = self.servers else {
            let fleet_only = self.route.is_some() || self.seed.is_some();
            if fleet_only || self.share.is_some() || !self.sync.is_empty() {
                bail!(
                    "{}, {}, {} and {} shape a fleet: use them with {} K",
                    n("route"),
                    n("seed"),
                    n("share"),
                    n("sync"),
                    n("servers")
                );
            }
            return Ok(None);
        };
        let servers = NonZeroU32::new(k)
            .filter(|k| k.get() <= MAX_SERVERS)
            .ok_or_else(|| anyhow!("{} must be from 1 to {MAX_SERVERS}, not {k}", n("servers")))?;
        let route = match &self.route {
            None | Some(RouteAsk::RoundRobin) => Route::RoundRobin,
            Some(RouteAsk::Random) => Route::Random(self.seed.unwrap_or(1)),
            Some(RouteAsk::Hash(column)) => match key {
                Some(key) if key != column => bail!(
                    "{} hash:{column} with {} {key}: a fleet routes by the key column (use {} \
                     hash:{key})",
                    n("route"),
                    n("key"),
                    n("route")
                ),
                _ => Route::Sticky(column.clone()),
            },
        };
        if self.seed.is_some() && !matches!(route, Route::Random(_)) {
            bail!("{} draws the servers of {} random", n("seed"), n("route"));
        }
        Ok(Some((servers, route)))
    }
}

/// Refuses a sync period of zero.
fn positive_sync(every: Span, names: Names) -> Result<Span> {
    if every.is_zero() {
        bail!("{} must be longer than zero", names.of("sync"));
    }
    Ok(every)
}
