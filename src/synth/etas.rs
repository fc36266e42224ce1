//! An ETAS earthquake model, simulated as a stream of events in time order.
//!
//! Background events form a Poisson process; magnitudes follow Gutenberg–Richter above the
//! magnitude of completeness Mc; every event, background or not, triggers aftershocks at
//! the rate `K · 10^(α(M − Mc)) / (t + c)^p` (Omori–Utsu), and so do they, in turn.
//!
//! Events are produced in time order from a heap of pending ones. Each event's aftershock
//! process is sampled one aftershock at a time, so the heap holds one entry per event with
//! aftershocks still to come, never a whole sequence: memory follows the activity, not the
//! length of the catalog.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use super::schedule::Schedule;
use crate::units::time::{MICROS_PER_SEC, Timestamp};

const MICROS_PER_DAY: f64 = 86_400.0 * MICROS_PER_SEC as f64;

/// The model's parameters. Times are in days.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// The seed of the random numbers; the same parameters and seed give the same events.
    pub seed: u64,
    /// The first instant simulated.
    pub start: Timestamp,
    /// The instant simulation stops, exclusive.
    pub end: Timestamp,
    /// Mc: no event is smaller.
    pub min_mag: f64,
    /// No event is larger: Gutenberg–Richter is truncated here.
    pub max_mag: f64,
    /// The Gutenberg–Richter b-value.
    pub b_value: f64,
    /// Background events a day of magnitude at least Mc.
    pub background_per_day: f64,
    /// K, the productivity of aftershock sequences.
    pub k: f64,
    /// α, how fast productivity grows with magnitude.
    pub alpha: f64,
    /// c, the Omori–Utsu time offset, in days.
    pub c: f64,
    /// p, the Omori–Utsu decay exponent.
    pub p: f64,
    /// Aftershocks come at most this many days after their parent.
    pub horizon: f64,
    /// Great earthquakes to plant: magnitude and time.
    pub mainshocks: Vec<(f64, Timestamp)>,
}

impl Params {
    /// The most events `synth` will set out to make, on average ([`super::MAX_EVENTS`]).
    pub const MAX_EVENTS: f64 = super::MAX_EVENTS;

    /// The largest magnitude the model makes: no `--min-mag` may reach it.
    pub const MAX_MAG: f64 = 9.5;

    /// M≥5 background events a day. With the aftershocks they trigger, the long-run mean
    /// over an 11-year run is about 4.7 a day, the 2015–2025 world average.
    pub const BACKGROUND_M5_PER_DAY: f64 = 2.7;

    /// Returns the default model for M≥5 events from `start` to `end`. Its productivity is
    /// chosen so that a planted M8.8 yields about 195 M≥5 events in its first 48 hours, as
    /// the 2025 Kamchatka sequence did.
    pub fn new(seed: u64, start: Timestamp, end: Timestamp) -> Params {
        Params {
            seed,
            start,
            end,
            min_mag: 5.0,
            max_mag: Params::MAX_MAG,
            b_value: 1.0,
            background_per_day: Params::BACKGROUND_M5_PER_DAY,
            k: 0.0038,
            alpha: 1.0,
            c: 0.01,
            p: 1.1,
            horizon: 3_650.0,
            mainshocks: Vec::new(),
        }
    }

    /// Returns the branching ratio n: how many direct aftershocks an event of a random
    /// magnitude triggers, on average, within the horizon. From 1 up the process is
    /// supercritical: sequences grow without end.
    pub fn branching_ratio(&self) -> f64 {
        use std::f64::consts::LN_10;
        let (beta, a) = (self.b_value * LN_10, self.alpha * LN_10);
        let span = self.max_mag - self.min_mag;
        let kept = 1.0 - libm::exp(-beta * span);
        // The mean of 10^(α(M − Mc)) under the truncated Gutenberg–Richter law.
        let growth = a - beta;
        let productivity = if growth.abs() < 1e-12 {
            beta * span / kept
        } else {
            beta * libm::expm1(growth * span) / (growth * kept)
        };
        self.k * productivity * self.omori_integral()
    }

    /// The Omori–Utsu kernel's integral from the parent to the horizon, in days.
    fn omori_integral(&self) -> f64 {
        (libm::pow(self.c, 1.0 - self.p) - libm::pow(self.horizon + self.c, 1.0 - self.p))
            / (self.p - 1.0)
    }

    /// Returns the number of events the model makes on average: the background's and the
    /// planted mainshocks', with all the aftershocks they trigger (to the horizon, which
    /// overstates sequences cut short by the end), and infinity if it is supercritical.
    pub fn expected_events(&self) -> f64 {
        let days = self.end.since(self.start) as f64 / MICROS_PER_DAY;
        let n = self.branching_ratio();
        if n >= 1.0 {
            return f64::INFINITY;
        }
        let direct: f64 = self
            .mainshocks
            .iter()
            .map(|&(mag, _)| {
                let boost = libm::exp(std::f64::consts::LN_10 * self.alpha * (mag - self.min_mag));
                self.k * boost * self.omori_integral()
            })
            .sum();
        // A count of mainshocks given on the command line: exact in a float far beyond any.
        #[allow(clippy::cast_precision_loss)]
        let planted = self.mainshocks.len() as f64;
        (self.background_per_day * days + direct) / (1.0 - n) + planted
    }
}

/// Where an event came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The background process.
    Background,
    /// A planted mainshock.
    Planted,
    /// An aftershock of the event with this id.
    Aftershock(u64),
}

/// One simulated event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quake {
    /// A sequence number, from 1 in time order.
    pub id: u64,
    /// When it happened, to the millisecond.
    pub time: Timestamp,
    /// Its magnitude.
    pub mag: f64,
    /// Where it came from.
    pub origin: Origin,
}

#[derive(Clone, Copy, Debug)]
enum Trigger {
    Background,
    Planted(f64),
    /// The next aftershock of `parent`, which happened at `parent_at` with productivity
    /// `productivity`; this one comes `offset` days after it, and `decay` is
    /// `(offset + c)^(1 − p)`, kept so that the next one needs no power of it.
    Aftershock {
        parent: u64,
        parent_at: f64,
        productivity: f64,
        decay: f64,
    },
}

/// The events of a simulation, in time order.
pub struct Simulation {
    params: Params,
    rng: Xoshiro256PlusPlus,
    pending: Schedule<Trigger>,
    next_id: u64,
    start_ms: i64,
    /// 1 − 10^(−b(Mmax − Mc)): the share of an untruncated Gutenberg–Richter law kept.
    kept: f64,
    /// c^(1 − p): the Omori–Utsu integral's term at the parent's own time.
    at_parent: f64,
    /// (horizon + c)^(1 − p): the Omori–Utsu integral's term at the horizon.
    at_horizon: f64,
}

impl Simulation {
    /// Starts a simulation.
    pub fn new(params: Params) -> Simulation {
        let days = params.end.since(params.start) as f64 / MICROS_PER_DAY;
        let mut sim = Simulation {
            rng: Xoshiro256PlusPlus::seed_from_u64(params.seed),
            pending: Schedule::new(days),
            next_id: 1,
            start_ms: params.start.as_micros().div_euclid(1_000),
            kept: 1.0 - libm::pow(10.0, -params.b_value * (params.max_mag - params.min_mag)),
            at_parent: libm::pow(params.c, 1.0 - params.p),
            at_horizon: libm::pow(params.horizon + params.c, 1.0 - params.p),
            params,
        };
        if sim.params.background_per_day > 0.0 {
            let first = sim.exponential() / sim.params.background_per_day;
            sim.push(first, Trigger::Background);
        }
        for (mag, time) in sim.params.mainshocks.clone() {
            let at = time.since(sim.params.start) as f64 / MICROS_PER_DAY;
            sim.push(at, Trigger::Planted(mag));
        }
        sim
    }

    fn push(&mut self, at: f64, what: Trigger) {
        self.pending.push(at, what);
    }

    /// A uniform number in [0, 1), from the top 53 bits.
    fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// An exponential number with mean 1.
    fn exponential(&mut self) -> f64 {
        -libm::log(1.0 - self.uniform())
    }

    /// A magnitude from the truncated Gutenberg–Richter law.
    fn magnitude(&mut self) -> f64 {
        let u = self.uniform();
        self.params.min_mag - libm::log10(1.0 - u * self.kept) / self.params.b_value
    }

    /// Schedules the next aftershock of `parent` after the one whose `decay` is given, if
    /// there is one before the horizon.
    ///
    /// Aftershocks are a Poisson process of rate A·(t + c)^(−p), whose integral from s to t
    /// is A·((s + c)^(1−p) − (t + c)^(1−p))/(p − 1). Setting it to an exponential draw and
    /// solving for t gives the next one.
    fn schedule_aftershock(&mut self, parent: u64, parent_at: f64, productivity: f64, decay: f64) {
        let Params { c, p, .. } = self.params;
        let decay = decay - (p - 1.0) * self.exponential() / productivity;
        if decay > self.at_horizon {
            let offset = libm::pow(decay, 1.0 / (1.0 - p)) - c;
            let what = Trigger::Aftershock { parent, parent_at, productivity, decay };
            self.push(parent_at + offset, what);
        }
    }
}

impl Iterator for Simulation {
    type Item = Quake;

    fn next(&mut self) -> Option<Quake> {
        let (at, what) = self.pending.pop()?;
        let (mag, origin) = match what {
            Trigger::Background => {
                let next = at + self.exponential() / self.params.background_per_day;
                self.push(next, Trigger::Background);
                (self.magnitude(), Origin::Background)
            }
            Trigger::Planted(mag) => (mag, Origin::Planted),
            Trigger::Aftershock { parent, parent_at, productivity, decay } => {
                self.schedule_aftershock(parent, parent_at, productivity, decay);
                (self.magnitude(), Origin::Aftershock(parent))
            }
        };
        let id = self.next_id;
        self.next_id += 1;
        let Params { k, alpha, min_mag, .. } = self.params;
        if k > 0.0 {
            let productivity = k * libm::exp(std::f64::consts::LN_10 * alpha * (mag - min_mag));
            self.schedule_aftershock(id, at, productivity, self.at_parent);
        }
        // `at` lies within the simulated days, which lie within the years 0000 to 9999.
        #[allow(clippy::cast_possible_truncation)]
        let ms = self.start_ms + libm::floor(at * 86_400_000.0) as i64;
        let time = Timestamp::from_micros(ms * 1_000).expect("simulated times lie before the end");
        Some(Quake { id, time, mag, origin })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branching_ratio_is_the_mean_number_of_direct_aftershocks() {
        let p = params(1, 1);
        // With b = α the mean productivity is K·β·ΔM / (1 − e^(−βΔM)), β = b ln 10, and
        // the Omori–Utsu integral to the horizon is (c^(1−p) − (H + c)^(1−p)) / (p − 1):
        // 0.0038 × 10.3621 × 11.4449, by hand.
        assert!((p.branching_ratio() - 0.450_68).abs() < 1e-4, "{}", p.branching_ratio());
        // b below α is supercritical here: 7.73 direct aftershocks an event.
        let steep = Params { b_value: 0.5, ..p.clone() };
        assert!((steep.branching_ratio() - 7.7344).abs() < 1e-3);
        assert_eq!(steep.expected_events(), f64::INFINITY);
        // A stable model makes its background's events over 1 − n.
        let expected = p.background_per_day * 1.0 / (1.0 - p.branching_ratio());
        assert!((p.expected_events() - expected).abs() < 1e-9);
    }

    fn params(seed: u64, days: i64) -> Params {
        let start: Timestamp = crate::units::time::rfc3339("2015-01-01").unwrap();
        let end =
            Timestamp::from_micros(start.as_micros() + days * 86_400 * MICROS_PER_SEC).unwrap();
        Params::new(seed, start, end)
    }

    #[test]
    fn events_come_in_time_order_within_the_range() {
        let p = params(7, 365);
        let (start, end) = (p.start, p.end);
        let quakes: Vec<Quake> = Simulation::new(p).collect();
        assert!(quakes.windows(2).all(|w| w[0].time <= w[1].time));
        assert!(quakes.iter().all(|q| q.time >= start && q.time < end));
        assert!(quakes.iter().enumerate().all(|(i, q)| q.id == i as u64 + 1));
        assert!(quakes.iter().all(|q| (5.0..9.5).contains(&q.mag)));
    }

    #[test]
    fn the_same_seed_gives_the_same_events() {
        let a: Vec<Quake> = Simulation::new(params(3, 200)).collect();
        let b: Vec<Quake> = Simulation::new(params(3, 200)).collect();
        let c: Vec<Quake> = Simulation::new(params(4, 200)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn background_alone_is_poisson() {
        // Without aftershocks, the count over T days is Poisson with mean μT: over 10 000
        // days at 2.7 a day, 27 000 ± 164; four standard deviations either side.
        let mut p = params(11, 10_000);
        p.k = 0.0;
        let n = Simulation::new(p).count() as f64;
        assert!((27_000.0 - 4.0 * 164.3..=27_000.0 + 4.0 * 164.3).contains(&n), "{n}");
    }

    #[test]
    fn aftershocks_add_events_within_the_branching_bound() {
        // With branching ratio n, the expected count lies between the background's μT and
        // μT / (1 − n). Here n = K · ∫₀^horizon (t + c)^(−p) dt · E[10^(α(M − Mc))], and with
        // α = b, E[10^(α(M − Mc))] = ln 10 · (Mmax − Mc) / (1 − 10^(−(Mmax − Mc))).
        let p = params(5, 4_018);
        let omori =
            (libm::pow(p.c, 1.0 - p.p) - libm::pow(p.horizon + p.c, 1.0 - p.p)) / (p.p - 1.0);
        let spread = p.max_mag - p.min_mag;
        let n = p.k * omori * std::f64::consts::LN_10 * spread / (1.0 - libm::pow(10.0, -spread));
        assert!((0.3..0.6).contains(&n), "branching ratio {n}");
        let background = p.background_per_day * 4_018.0;
        let counts: Vec<f64> =
            (1..=4).map(|s| Simulation::new(params(s, 4_018)).count() as f64).collect();
        let mean = counts.iter().sum::<f64>() / 4.0;
        assert!(mean > background * 1.2 && mean < background / (1.0 - n), "{counts:?}, n = {n}");
    }

    #[test]
    fn aki_b_value_estimate_is_within_a_tenth_of_the_setting() {
        for b in [0.8, 1.0, 1.3] {
            let mut p = params(21, 20_000);
            p.b_value = b;
            p.k = 0.0;
            let mags: Vec<f64> = Simulation::new(p).map(|q| q.mag).collect();
            // Aki's maximum-likelihood estimate, on magnitudes rounded down to hundredths as
            // `synth` writes them: b = log10(e) / (mean − (Mc − Δm/2)), with Mc the lower
            // edge of the lowest bin, 5.00, and Δm = 0.01.
            let mean =
                mags.iter().map(|m| (m * 100.0).floor() / 100.0).sum::<f64>() / mags.len() as f64;
            let estimate = std::f64::consts::LOG10_E / (mean - (5.0 - 0.005));
            assert!(
                (estimate - b).abs() < 0.1,
                "b = {b}: estimated {estimate} from {}",
                mags.len()
            );
        }
    }

    #[test]
    fn a_planted_great_earthquake_yields_a_kamchatka_sized_sequence() {
        // Sequences vary, with a heavy tail (a large aftershock brings its own), so judge
        // the median 48-hour count over 21 seeds: 150–250, as Kamchatka's 195.
        let mut counts: Vec<usize> = (0..21)
            .map(|seed| {
                let mut p = params(seed, 2);
                p.background_per_day = 0.0;
                p.mainshocks = vec![(8.8, p.start)];
                Simulation::new(p).count() - 1
            })
            .collect();
        counts.sort();
        assert!((150..=250).contains(&counts[10]), "{counts:?}");
    }

    #[test]
    fn aftershocks_decay_as_omori_says() {
        // Counts of aftershocks (all generations) of a planted M9 in log-spaced bins from
        // 0.1 to 100 days: their density per day falls as t^(−p), roughly 1/t. Fit the slope
        // of log density against log time.
        let mut p = params(2, 101);
        p.background_per_day = 0.0;
        p.mainshocks = vec![(9.0, p.start)];
        let start = p.start;
        let days: Vec<f64> = Simulation::new(p)
            .filter(|q| q.origin != Origin::Planted)
            .map(|q| q.time.since(start) as f64 / MICROS_PER_DAY)
            .collect();
        let edges: Vec<f64> = (0..=6).map(|i| 0.1 * libm::pow(10.0, f64::from(i) * 0.5)).collect();
        let points: Vec<(f64, f64)> = edges
            .windows(2)
            .map(|w| {
                let count = days.iter().filter(|&&d| d >= w[0] && d < w[1]).count() as f64;
                (libm::log10((w[0] * w[1]).sqrt()), libm::log10(count / (w[1] - w[0])))
            })
            .collect();
        let n = points.len() as f64;
        let (mx, my) = points.iter().fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        let slope = sxy / sxx;
        assert!((-1.3..=-0.8).contains(&slope), "slope {slope} over {points:?}");
    }
}
