//! A synthetic request log: many clients of heavy-tailed activity, and a few that misbehave.
//!
//! Clients are ranked by activity: a session belongs to client k with probability
//! proportional to 1/k^s (Zipf, s = 1 by default), so a few clients make many sessions
//! and most clients make one or two. Sessions start as a Poisson process; each is a burst of
//! requests, their number geometric (mean 10) and the pauses between them exponential (mean
//! 3 s), as a person clicking through pages makes them. A few bots each run scripts: at
//! Poisson times, about once a day, a run of ten minutes at 300 requests a minute, one every
//! 0.2 s (each configurable). Every draw comes from one seeded generator, in one fixed
//! order, so the same parameters give the same log byte for byte; an LLM call's tokens come
//! from a second generator of the same seed, so that adding them changes no request. Requests come out in time order from a heap
//! of pending sessions and runs: memory follows what is active at once, not the log's
//! length or the number of clients.

use std::io::{self, Write};

use rand_distr::{Distribution, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use super::schedule::Schedule;
use crate::units::time::{MICROS_PER_SEC, Subsecond, Timestamp};

/// The request log's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestParams {
    /// The seed of the random numbers.
    pub seed: u64,
    /// The first instant of the log.
    pub start: Timestamp,
    /// The instant the log stops, exclusive.
    pub end: Timestamp,
    /// How many clients there are, ranked by activity.
    pub clients: u64,
    /// How many requests the people (not the bots) make, on average, over the whole log.
    pub requests: u64,
    /// The Zipf exponent of client activity.
    pub zipf: f64,
    /// The mean number of requests in a session.
    pub session_mean: f64,
    /// The mean pause between a session's requests, in seconds.
    pub pause_mean_s: f64,
    /// How many bots there are.
    pub bots: u64,
    /// How many script runs a bot starts a day, on average.
    pub bot_runs_per_day: f64,
    /// How many requests a run sends, one every `bot_step_s` seconds.
    pub bot_run_requests: u64,
    /// The time between a run's requests, in seconds.
    pub bot_step_s: f64,
    /// Whether each request is an LLM call with token counts (see [`Tokens`]).
    pub tokens: bool,
}

impl RequestParams {
    /// Returns the default model for a log from `start` to `end`: `clients` clients making
    /// `requests` requests in all, and three bots.
    pub fn new(seed: u64, start: Timestamp, end: Timestamp, clients: u64, requests: u64) -> Self {
        RequestParams {
            seed,
            start,
            end,
            clients,
            requests,
            zipf: 1.0,
            session_mean: 10.0,
            pause_mean_s: 3.0,
            bots: 3,
            bot_runs_per_day: 1.0,
            bot_run_requests: 3_000,
            bot_step_s: 0.2,
            tokens: false,
        }
    }

    /// Returns how many requests the log holds on average: the people's, and each bot's
    /// runs over the log's days.
    pub fn expected(&self) -> f64 {
        // Counts and a span far below 2^53 µs: each is exact as a double.
        #[allow(clippy::cast_precision_loss)]
        let days = self.end.since(self.start) as f64 / 86_400e6;
        #[allow(clippy::cast_precision_loss)]
        let bots = self.bots as f64 * self.bot_runs_per_day * days * self.bot_run_requests as f64;
        #[allow(clippy::cast_precision_loss)]
        let people = self.requests as f64;
        people + bots
    }
}

/// One request of the log.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    /// When it came, to the millisecond.
    pub time: Timestamp,
    /// Who sent it: a client's rank (from 1, the most active), or a bot.
    pub client: Client,
    /// Which of [`ROUTES`] it asked for.
    pub route: usize,
    /// The HTTP status it got.
    pub status: u16,
    /// As an LLM call, its tokens, if the log has them.
    pub tokens: Option<Tokens>,
}

/// An LLM call's tokens: the prompt's, heavy-tailed (Pareto, α = 1.5, from 50, at most
/// 100,000); the most the reply may take (`max_tokens`: 256, 512, 1,024 or 4,096); the
/// reply's, uniform up to that many; in all, the prompt's and the reply's; and how long
/// the call took, from both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tokens {
    /// The prompt's tokens.
    pub prompt: u64,
    /// The most the reply may take.
    pub max: u64,
    /// The reply's tokens.
    pub reply: u64,
    /// The prompt's and the reply's.
    pub total: u64,
    /// How long the call took, in milliseconds: 300 to start, a millisecond for each 10
    /// tokens of prompt read, and 15 for each token of reply written. It takes the
    /// prompt's heavy tail, and draws nothing more, so that the other columns are what
    /// they were before it was written.
    pub duration_ms: u64,
}

/// Who sent a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// A person's client, by rank of activity, from 1.
    Person(u64),
    /// A bot, numbered from 1.
    Bot(u64),
}

/// The requests people's sessions make: method, path, and how often, out of 100.
pub const ROUTES: [(&str, &str, u32); 6] = [
    ("GET", "/", 15),
    ("GET", "/api/items", 40),
    ("GET", "/api/items/42", 20),
    ("POST", "/api/orders", 8),
    ("GET", "/static/app.js", 12),
    ("POST", "/api/login", 5),
];

/// What a bot's script asks for.
const BOT_ROUTE: usize = 1;

#[derive(Clone, Copy, Debug)]
enum Next {
    /// The next session starts.
    Session,
    /// A session's next request, with how many are left after it.
    Click { client: u64, left: u64 },
    /// A bot starts its next run.
    Run { bot: u64 },
    /// A run's next request.
    Script { bot: u64, left: u64 },
}

/// The requests of a log, in time order.
pub struct RequestLog {
    params: RequestParams,
    rng: Xoshiro256PlusPlus,
    /// The tokens' own draws: with or without them, the requests are the same.
    tokens_rng: Xoshiro256PlusPlus,
    zipf: Zipf<f64>,
    pending: Schedule<Next>,
    /// Sessions a second.
    session_rate: f64,
}

/// What the tokens' generator's seed differs from the requests' by ("tokens" in ASCII).
const TOKENS_STREAM: u64 = 0x746F_6B65_6E73;

/// A uniform draw in [0, 1) from `rng`'s top 53 bits.
fn uniform(rng: &mut Xoshiro256PlusPlus) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let top = (rng.next_u64() >> 11) as f64;
    top * (1.0 / (1u64 << 53) as f64)
}

impl RequestLog {
    /// Starts a log. It needs at least one client and a positive Zipf exponent.
    pub fn new(params: RequestParams) -> Option<RequestLog> {
        // The clients' number only shapes the distribution: a float is exact up to 2^53.
        #[allow(clippy::cast_precision_loss)]
        let zipf = Zipf::new(params.clients as f64, params.zipf).ok()?;
        #[allow(clippy::cast_precision_loss)]
        let seconds = params.end.since(params.start) as f64 / MICROS_PER_SEC as f64;
        #[allow(clippy::cast_precision_loss)]
        let session_rate = params.requests as f64 / params.session_mean / seconds.max(1e-9);
        let mut log = RequestLog {
            rng: Xoshiro256PlusPlus::seed_from_u64(params.seed),
            tokens_rng: Xoshiro256PlusPlus::seed_from_u64(params.seed ^ TOKENS_STREAM),
            zipf,
            pending: Schedule::new(seconds),
            session_rate,
            params,
        };
        if log.session_rate > 0.0 {
            let first = log.exponential() / log.session_rate;
            log.push(first, Next::Session);
        }
        for bot in 1..=log.params.bots {
            log.schedule_run(0.0, bot);
        }
        Some(log)
    }

    fn push(&mut self, at: f64, next: Next) {
        self.pending.push(at, next);
    }

    fn uniform(&mut self) -> f64 {
        uniform(&mut self.rng)
    }

    fn exponential(&mut self) -> f64 {
        -libm::log(1.0 - self.uniform())
    }

    fn schedule_run(&mut self, after: f64, bot: u64) {
        let wait = self.exponential() * 86_400.0 / self.params.bot_runs_per_day;
        self.push(after + wait, Next::Run { bot });
    }

    /// A session's length: 1 plus a geometric number, so that the mean is `session_mean`.
    fn session_length(&mut self) -> u64 {
        let p = 1.0 / self.params.session_mean;
        let extra = libm::floor(libm::log(1.0 - self.uniform()) / libm::log(1.0 - p));
        // A geometric draw with p ≥ 1/mean is small; saturate rather than wrap.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let extra = extra.clamp(0.0, 1e9) as u64;
        1 + extra
    }

    fn route(&mut self) -> usize {
        let total: u32 = ROUTES.iter().map(|r| r.2).sum();
        // A draw below `total`, a few dozen.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let mut pick = (self.uniform() * f64::from(total)) as u32;
        for (n, route) in ROUTES.iter().enumerate() {
            if pick < route.2 {
                return n;
            }
            pick -= route.2;
        }
        0
    }

    fn status(&mut self) -> u16 {
        match self.uniform() {
            u if u < 0.03 => 404,
            u if u < 0.035 => 500,
            _ => 200,
        }
    }
}

impl Iterator for RequestLog {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        loop {
            let (at, next) = self.pending.pop()?;
            let request = match next {
                Next::Session => {
                    let after = at + self.exponential() / self.session_rate;
                    self.push(after, Next::Session);
                    // Zipf draws whole ranks from 1 to the number of clients.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let client = self.zipf.sample(&mut self.rng) as u64;
                    let left = self.session_length() - 1;
                    self.click(at, client, left)
                }
                Next::Click { client, left } => self.click(at, client, left),
                Next::Run { bot } => {
                    let left = self.params.bot_run_requests.saturating_sub(1);
                    self.script(at, bot, left)
                }
                Next::Script { bot, left } => self.script(at, bot, left),
            };
            if let Some(request) = request {
                return Some(request);
            }
        }
    }
}

impl RequestLog {
    /// A person's request at `at`, scheduling the session's next one.
    fn click(&mut self, at: f64, client: u64, left: u64) -> Option<Request> {
        if left > 0 {
            let pause = self.exponential() * self.params.pause_mean_s;
            self.push(at + pause, Next::Click { client, left: left - 1 });
        }
        let (route, status) = (self.route(), self.status());
        let tokens = self.tokens();
        Some(Request { time: self.time(at), client: Client::Person(client), route, status, tokens })
    }

    /// A bot's request at `at`, scheduling its run's next one, or its next run.
    fn script(&mut self, at: f64, bot: u64, left: u64) -> Option<Request> {
        if left > 0 {
            self.push(at + self.params.bot_step_s, Next::Script { bot, left: left - 1 });
        } else {
            self.schedule_run(at, bot);
        }
        let status = if self.uniform() < 0.5 { 200 } else { 429 };
        let (time, client, tokens) = (self.time(at), Client::Bot(bot), self.tokens());
        Some(Request { time, client, route: BOT_ROUTE, status, tokens })
    }

    /// Draws a call's tokens, if the log has them; a log without draws nothing, so that it
    /// is the same byte for byte as before tokens were drawn.
    fn tokens(&mut self) -> Option<Tokens> {
        if !self.params.tokens {
            return None;
        }
        let rng = &mut self.tokens_rng;
        // Pareto by inversion: 50·(1 − u)^(−1/1.5), a count of tokens, capped.
        let prompt = 50.0 * libm::pow(1.0 - uniform(rng), -1.0 / 1.5);
        // At least 50 and capped at 100,000: a whole count that fits a u64. No user value
        // reaches it; --tokens only turns the draw on.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let prompt = libm::floor(prompt.min(100_000.0)) as u64;
        // The top two bits pick one of four; a uniform fraction of it is the reply.
        let max = [256, 512, 1_024, 4_096][usize::try_from(rng.next_u64() >> 62).unwrap_or(0)];
        // From 0 to `max` (at most 4,096, exact in a double): a whole count.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let reply = libm::floor(uniform(rng) * (max as f64 + 1.0)).min(max as f64) as u64;
        let duration_ms = 300 + prompt / 10 + 15 * reply;
        Some(Tokens { prompt, max, reply, total: prompt + reply, duration_ms })
    }

    fn time(&self, at: f64) -> Timestamp {
        // `at` lies before the end, which lies within the years 0000 to 9999.
        #[allow(clippy::cast_possible_truncation)]
        let ms = libm::floor(at * 1_000.0) as i64;
        let micros = self.params.start.as_micros().div_euclid(1_000) * 1_000 + ms * 1_000;
        Timestamp::from_micros(micros).unwrap_or(self.params.start)
    }
}

/// The request log's CSV header, and the columns a log with tokens adds.
const HEADER: &[u8] = b"time,client,method,path,status\n";
const TOKENS_HEADER: &[u8] = b"time,client,method,path,status,prompt_tokens,max_tokens,\
total_tokens,completion_tokens,duration_ms\n";

/// Writes requests as CSV with a header, streaming.
/// With `tokens`, each row ends with its call's tokens.
pub fn write_log(
    requests: impl IntoIterator<Item = Request>,
    tokens: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut numbers = itoa::Buffer::new();
    let header = if tokens { TOKENS_HEADER } else { HEADER };
    super::write_rows(out, header, requests, |row, request| {
        request.time.write_rfc3339(row, Subsecond::Millis);
        row.push(b',');
        let (prefix, id) = match request.client {
            Client::Person(rank) => (&b"c"[..], rank),
            Client::Bot(n) => (&b"bot"[..], n),
        };
        row.extend_from_slice(prefix);
        row.extend_from_slice(numbers.format(id).as_bytes());
        let (method, path, _) = ROUTES[request.route];
        for field in [method.as_bytes(), path.as_bytes(), numbers.format(request.status).as_bytes()]
        {
            row.push(b',');
            row.extend_from_slice(field);
        }
        if let Some(Tokens { prompt, max, reply, total, duration_ms }) =
            request.tokens.filter(|_| tokens)
        {
            for count in [prompt, max, total, reply, duration_ms] {
                row.push(b',');
                row.extend_from_slice(numbers.format(count).as_bytes());
            }
        }
        row.push(b'\n');
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(seed: u64, days: i64, clients: u64, requests: u64) -> Vec<Request> {
        let start = Timestamp::from_micros(1_750_000_000_000_000).unwrap();
        let end = Timestamp::from_micros(start.as_micros() + days * 86_400_000_000).unwrap();
        let mut params = RequestParams::new(seed, start, end, clients, requests);
        params.bots = 2;
        RequestLog::new(params).unwrap().collect()
    }

    #[test]
    fn in_time_order_and_near_the_asked_count() {
        let requests = log(1, 1, 10_000, 100_000);
        assert!(requests.windows(2).all(|w| w[0].time <= w[1].time));
        let people = requests.iter().filter(|r| matches!(r.client, Client::Person(_))).count();
        // Poisson sessions of mean 10: the count lies within a few percent of 100 000.
        assert!((95_000..105_000).contains(&people), "{people}");
    }

    #[test]
    fn activity_is_heavy_tailed() {
        let requests = log(2, 1, 100_000, 200_000);
        let mut counts = std::collections::HashMap::new();
        for r in &requests {
            if let Client::Person(c) = r.client {
                *counts.entry(c).or_insert(0u64) += 1;
            }
        }
        // The most active client (rank 1) makes far more than the median one.
        let mut sorted: Vec<u64> = counts.values().copied().collect();
        sorted.sort_unstable();
        let median = sorted[sorted.len() / 2];
        assert!(counts[&1] > 100 * median, "rank 1: {}, median {median}", counts[&1]);
        // A bot's run sends one request every 0.2 s, 300 a minute, 3 000 in all.
        let bot: Vec<i64> = requests
            .iter()
            .filter(|r| r.client == Client::Bot(1))
            .map(|r| r.time.as_micros() / 1_000)
            .collect();
        assert!(bot.len() >= 3_000, "{} bot requests in a day", bot.len());
        assert!(bot[..3_000].windows(2).all(|w| (199..=201).contains(&(w[1] - w[0]))));
    }

    #[test]
    fn the_same_seed_gives_the_same_log() {
        assert_eq!(log(7, 1, 1_000, 5_000), log(7, 1, 1_000, 5_000));
        assert_ne!(log(7, 1, 1_000, 5_000), log(8, 1, 1_000, 5_000));
    }
}
