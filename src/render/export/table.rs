//! The table exporter: aligned text for people, each table a view of a result.

use std::io::{self, Write};

use super::{Exporter, Report};
use crate::report;
use crate::units::time::human_duration;

/// Writes a result's table: aligned text for people.
pub struct Table(pub Style);

impl Exporter for Table {
    fn export<R: Report>(&self, out: &mut dyn Write, result: &R) -> io::Result<()> {
        result.table(out, self.0)
    }
}

/// Whether a table may use color.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Returns a style that colors only if `color` is true.
    pub fn new(color: bool) -> Style {
        Style { color }
    }

    fn paint(self, style: anstyle::Style, text: &str) -> String {
        if self.color {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_owned()
        }
    }

    fn bold(self, text: &str) -> String {
        self.paint(anstyle::Style::new().bold(), text)
    }

    pub(super) fn dim(self, text: &str) -> String {
        self.paint(anstyle::Style::new().dimmed(), text)
    }

    pub(super) fn warn(self, text: &str) -> String {
        self.paint(anstyle::AnsiColor::Yellow.on_default(), text)
    }

    pub(super) fn good(self, text: &str) -> String {
        self.paint(anstyle::AnsiColor::Green.on_default(), text)
    }
}

/// Writes rows under a header, each column as wide as its widest cell; columns of
/// numbers are aligned to the right.
pub fn table(
    out: &mut dyn Write,
    header: &[&str],
    rows: &[Vec<String>],
    style: Style,
) -> io::Result<()> {
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).chain([header[c].len()]).max();
    let widths: Vec<usize> = (0..header.len()).map(|c| width(c).unwrap_or(0)).collect();
    let numeric: Vec<bool> = (0..header.len())
        .map(|c| {
            rows.iter().all(|r| matches!(r[c].as_str(), "" | "-") || r[c].parse::<f64>().is_ok())
        })
        .collect();
    let line = |cells: &[&str], paint: &dyn Fn(&str) -> String| {
        let mut text = String::new();
        for (c, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[c] - cell.chars().count());
            let sep = if c == 0 { "" } else { "  " };
            let (left, right) =
                if numeric[c] { (pad, String::new()) } else { (String::new(), pad) };
            text += &format!("{sep}{left}{}{right}", paint(cell));
        }
        text.trim_end().to_owned()
    };
    writeln!(out, "{}", line(header, &|h| style.dim(h)))?;
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells, &|c| c.to_owned()))?;
    }
    Ok(())
}

/// Writes a replay report as labeled lines.
pub fn replay_table(
    out: &mut dyn Write,
    r: &report::LimiterReport,
    style: Style,
) -> io::Result<()> {
    let digits = r.events.to_string().len();
    let count = |n: u64| format!("{n:>digits$}{}", percent(n, r.events));
    let window = |w: &report::Window, what: &str| {
        let units = w.units.map_or(String::new(), |units| format!(" ({units} units)"));
        match w.start {
            Some(start) => format!("{} {what}{units}, from {start}", w.count),
            None => format!("0 {what}"),
        }
    };
    let mut limiter = match r.burst {
        Some(burst) => format!("{} at {}, burst {burst}", r.algorithm.name(), r.rate),
        None => format!("{} at {}", r.algorithm.name(), r.rate),
    };
    if let Some(delay) = &r.delay {
        limiter += &format!(", {delay}");
    }
    let length = r.busiest_window.length_s;
    let dropped = count(r.dropped);
    let mut lines = vec![("input".to_owned(), r.input.clone()), ("limiter".to_owned(), limiter)];
    if let Some(fleet) = &r.fleet {
        lines.push(("fleet".to_owned(), fleet_text(fleet, r.algorithm)));
    }
    lines.extend([
        ("events".to_owned(), r.events.to_string()),
        ("passed".to_owned(), count(r.passed)),
        ("dropped".to_owned(), if r.dropped > 0 { style.warn(&dropped) } else { dropped }),
    ]);
    if let Some(uncounted) = r.not_accounted.filter(|&n| n > 0) {
        let text = format!(
            "{uncounted} of those passed: an empty key, let through uncounted as {} does",
            r.algorithm.name()
        );
        lines.push(("not accounted".to_owned(), text));
    }
    if let Some(units) = &r.units {
        let text =
            format!("{} in all: {} passed, {} dropped", units.events, units.passed, units.dropped);
        lines.push(("units".to_owned(), text));
    }
    if let Some(too_big) = &r.too_big {
        let report::Heavy { time, cost } = too_big.first;
        let text = format!(
            "{} events cost more than the limiter ever holds, and never pass; the first, at {time}, costs {cost}",
            too_big.events
        );
        lines.push(("too big".to_owned(), style.warn(&text)));
    }
    lines.extend([
        (format!("busiest {length}"), window(&r.busiest_window, "passed")),
        (format!("demand {length}"), window(&r.demand_busiest_window, "events")),
        ("min bucket".to_owned(), min_bucket_text(r)),
    ]);
    if let Some(fleet) = &r.fleet {
        let over = fleet
            .over_admission
            .map_or(String::new(), |x| format!(": the fleet passed {x:.3}× as many"));
        let text = format!(
            "{} passed by one {} seeing every event{over}",
            fleet.alone_passed,
            r.algorithm.name()
        );
        lines.push(("one limiter".to_owned(), text));
    }
    if let Some(q) = &r.queue {
        lines.push(("delayed".to_owned(), count(q.delayed)));
        lines.push(("longest wait".to_owned(), human_ms(q.max_wait_s)));
        lines.push(("mean wait".to_owned(), human_ms(q.mean_wait_s)));
    }
    let verdict = if r.promise.held { style.good("held") } else { style.warn("BROKEN") };
    lines.push(("promise".to_owned(), format!("{} ({verdict})", r.promise.text)));
    lines.extend(spread_lines(r.by_key.as_ref()));
    labeled(out, &lines, style)?;
    if let Some(fleet) = &r.fleet {
        servers_table(out, fleet, style)?;
    }
    replay_keys_table(out, r, style)
}

/// The most servers a table lists one by one; the JSON lists all.
const LISTED_SERVERS: usize = 32;

/// Says how a fleet shared its limit, and what each server ran.
fn fleet_text(fleet: &report::FleetReport, algorithm: crate::limiter::Algorithm) -> String {
    let route = match fleet.seed {
        Some(seed) => format!("{} (seed {seed})", fleet.route),
        None => fleet.route.clone(),
    };
    let burst = fleet.server_burst.map_or(String::new(), |b| format!(", burst {b}"));
    format!(
        "{} servers, {route}, {}: each runs {} at {}{burst}",
        fleet.servers,
        share_text(fleet),
        algorithm.name(),
        fleet.server_rate
    )
}

/// Names a fleet's share mode, with its sync period.
fn share_text(fleet: &report::FleetReport) -> String {
    match fleet.sync_s {
        Some(every) => format!("{} every {every}", fleet.share),
        None => fleet.share.to_owned(),
    }
}

/// Writes each server's events, passed and dropped, for a fleet of a few servers.
fn servers_table(out: &mut dyn Write, fleet: &report::FleetReport, style: Style) -> io::Result<()> {
    writeln!(out)?;
    if fleet.by_server.len() > LISTED_SERVERS {
        let n = fleet.by_server.len();
        return writeln!(out, "{n} servers: each server's counts are in --format json");
    }
    let rows: Vec<Vec<String>> = (1..)
        .zip(&fleet.by_server)
        .map(|(n, s): (u32, _)| {
            vec![n.to_string(), s.events.to_string(), s.passed.to_string(), s.dropped.to_string()]
        })
        .collect();
    table(out, &["server", "events", "passed", "dropped"], &rows, style)
}

/// The lines that say how figures spread across keys, by nearest rank.
fn spread_lines<T>(list: Option<&report::KeyList<T>>) -> Vec<(String, String)> {
    let Some(q) = list.and_then(|l| l.quantiles) else { return Vec::new() };
    let mut lines = vec![("min bucket by key".to_owned(), q.min_bucket.to_string())];
    if let Some(dropped) = q.dropped {
        lines.push(("dropped by key".to_owned(), dropped.to_string()));
    }
    lines
}

/// Writes `label  value` lines, the values aligned.
pub(super) fn labeled(
    out: &mut dyn Write,
    lines: &[(String, String)],
    style: Style,
) -> io::Result<()> {
    let width = lines.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
    for (label, value) in lines {
        let pad = " ".repeat(width - label.len());
        writeln!(out, "{}{pad}  {value}", style.bold(label))?;
    }
    Ok(())
}

/// The lines both `replay` and `compare` tables start with: what all events showed.
fn demand_lines(r: &report::LimiterReport) -> [(String, String); 2] {
    let length = r.busiest_window.length_s;
    let demand = &r.demand_busiest_window;
    let busiest = match demand.start {
        Some(start) => format!("{} events, from {start}", demand.count),
        None => "0 events".to_owned(),
    };
    [(format!("demand {length}"), busiest), ("min bucket".to_owned(), min_bucket_text(r))]
}

/// The smallest lossless bucket, for every key with keys, and nginx's own `burst=` when
/// the report has it.
fn min_bucket_text(r: &report::LimiterReport) -> String {
    let per_key = if r.by_key.is_some() { " for every key" } else { "" };
    let own = r.system_size.as_ref().map_or(String::new(), |own| {
        format!("; {}'s own: {}={}", own.system, own.setting, own.value)
    });
    format!("{} (the smallest lossless token bucket{per_key} at {}){own}", r.min_bucket, r.rate)
}

/// People read waits to the millisecond.
pub(super) fn human_ms(micros: impl Into<i128>) -> String {
    human_duration((micros.into() + 500) / 1_000 * 1_000)
}

/// Writes limiters side by side: what all events showed, then one row per limiter.
pub fn compare_table(
    out: &mut dyn Write,
    reports: &[report::LimiterReport],
    across: &[report::KeyDrops],
    style: Style,
) -> io::Result<()> {
    let Some(first) = reports.first() else { return Ok(()) };
    let length = first.busiest_window.length_s;
    let burst =
        reports.iter().find_map(|r| r.burst).map_or(String::new(), |b| format!(", burst {b}"));
    let mut lines = vec![
        ("input".to_owned(), first.input.clone()),
        ("rate".to_owned(), format!("{}{burst}", first.rate)),
    ];
    if let Some(fleet) = &first.fleet {
        let route = match fleet.seed {
            Some(seed) => format!("{} (seed {seed})", fleet.route),
            None => fleet.route.clone(),
        };
        lines.push(("fleet".to_owned(), format!("{} servers, {route}", fleet.servers)));
    }
    lines.push(("events".to_owned(), first.events.to_string()));
    // The keys' buckets are the same for every limiter that accounts every key (one that
    // lets the empty key through needs none for it); their drops are in the JSON.
    let every = reports.iter().find(|r| r.not_accounted.is_none()).unwrap_or(first);
    lines.extend(demand_lines(every));
    let spread = spread_lines(every.by_key.as_ref());
    lines.extend(spread.into_iter().take(1));
    labeled(out, &lines, style)?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let verdict = if r.promise.held { "held" } else { "BROKEN" };
            let mut row = vec![
                r.algorithm.name().to_owned(),
                r.burst.map_or("-".to_owned(), |b| b.to_string()),
                r.passed.to_string(),
                r.dropped.to_string(),
                r.busiest_window.count.to_string(),
                r.busiest_window.start.map_or("-".to_owned(), |s| s.to_string()),
                format!("{verdict}: {}", r.promise.text),
            ];
            if let Some(fleet) = &r.fleet {
                let over = fleet.over_admission.map_or("-".to_owned(), |x| format!("{x:.3}"));
                row.splice(1..1, [share_text(fleet), fleet.alone_passed.to_string(), over]);
            }
            row
        })
        .collect();
    let busiest = format!("busiest {length}");
    let mut header = vec!["limiter", "burst", "passed", "dropped", &busiest, "from", "promise"];
    if first.fleet.is_some() {
        header.splice(1..1, ["share", "alone", "over"]);
    }
    table(out, &header, &rows, style)?;
    for r in reports {
        if let Some(q) = &r.queue {
            writeln!(
                out,
                "\n{}: {} delayed, longest wait {}, mean wait {}",
                r.algorithm.name(),
                q.delayed,
                human_ms(q.max_wait_s),
                human_ms(q.mean_wait_s)
            )?;
        }
    }
    if reports.iter().any(|r| r.by_key.is_some()) {
        compare_keys_table(out, reports, across, style)?;
    }
    Ok(())
}

/// Writes the minimum buckets as a table.
pub fn min_bucket_table(
    out: &mut dyn Write,
    found: &[report::MinBucket],
    style: Style,
) -> io::Result<()> {
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|m| {
            let need = m.need;
            let [events, start, end] = stretch_cells(need.span);
            let mut row = vec![m.rate.to_string(), need.min_bucket.to_string(), events, start, end];
            if m.by_key.is_some() {
                row.insert(2, key_label(m.worst_key.as_ref().map(|w| w.key.as_str())));
            }
            row
        })
        .collect();
    let mut header = vec!["rate", "min_bucket", "span_events", "span_start", "span_end"];
    if found.iter().any(|m| m.by_key.is_some()) {
        header.insert(2, "key");
    }
    table(out, &header, &rows, style)?;
    for m in found {
        if let Some(c) = &m.cover {
            cover_lines(out, m.rate, c)?;
        }
    }
    for (n, m) in found.iter().filter(|m| m.system_size.is_some()).enumerate() {
        let Some(own) = &m.system_size else { continue };
        let system = own.system.parse::<crate::limiter::Algorithm>().ok();
        let Some(written) = system.and_then(|a| a.own_size()) else { continue };
        let key = own.key.as_ref().map_or(String::new(), |k| format!(", the worst key {k}"));
        let gap = if n == 0 { "\n" } else { "" };
        writeln!(out, "{gap}{}: {}{key}", own.system, (written.line)(m.rate, own.value))?;
    }
    for m in found {
        let Some(list) = &m.by_key else { continue };
        let (keys, count) = (&list.top, list.count);
        let order = format!("at {}, the largest bucket first", m.rate);
        writeln!(out, "{}", keys_heading(&list.column, keys.len(), count, &order))?;
        if let Some(q) = list.quantiles {
            writeln!(out, "min bucket by key: {}", q.min_bucket)?;
        }
        let rows: Vec<Vec<String>> = keys
            .iter()
            .map(|k| {
                let need = k.need;
                let [events, start, end] = stretch_cells(need.span);
                vec![key_label(k.key.as_deref()), need.min_bucket.to_string(), events, start, end]
            })
            .collect();
        table(out, &["key", "min_bucket", "span_events", "span_start", "span_end"], &rows, style)?;
    }
    Ok(())
}

/// Writes what a cover keeps whole and what it leaves out.
fn cover_lines(
    out: &mut dyn Write,
    rate: crate::units::rate::Rate,
    c: &report::Cover,
) -> io::Result<()> {
    let all = c.keys_covered + c.left_out.count;
    let events = match c.events {
        0 => String::new(),
        total => {
            // A percentage for people, to two decimals; the exact counts are in the JSON.
            let share = c.events_covered as f64 * 100.0 / total as f64;
            format!(", with {share:.2}% of the events,")
        }
    };
    writeln!(
        out,
        "\ncover {} at {rate}: a burst of {} keeps {} of {all} keys{events} whole; {} left out",
        c.share, c.min_bucket, c.keys_covered, c.left_out.count
    )?;
    for k in &c.left_out.top {
        let key = key_label(Some(&k.key));
        writeln!(out, "  left out: {key}, needs {}, {} events", k.min_bucket, k.events)?;
    }
    Ok(())
}

/// The cells of a stretch: its events, start and end, or dashes.
pub(super) fn stretch_cells(stretch: Option<crate::sizing::min_bucket::Stretch>) -> [String; 3] {
    match stretch {
        Some(s) => [s.events.to_string(), s.start.to_string(), s.end.to_string()],
        None => ["-".into(), "-".into(), "-".into()],
    }
}

/// How a key is shown in a table: its value, or `(empty)`.
fn key_label(key: Option<&str>) -> String {
    match key {
        Some("") => "(empty)".to_owned(),
        Some(key) => key.to_owned(),
        None => "-".to_owned(),
    }
}

/// The line that introduces a table of keys.
fn keys_heading(column: &str, shown: usize, count: usize, order: &str) -> String {
    let keys = if count == 1 { "key" } else { "keys" };
    if shown < count {
        format!("\nThe top {shown} of {count} {keys} by `{column}`, {order}:")
    } else {
        format!("\nThe {count} {keys} by `{column}`, {order}:")
    }
}

/// Writes that no key dropped an event, if none of `dropped` did, and says whether it did.
fn none_dropped(
    out: &mut dyn Write,
    column: &str,
    mut dropped: impl Iterator<Item = u64>,
) -> io::Result<bool> {
    if dropped.any(|d| d > 0) {
        return Ok(false);
    }
    writeln!(out, "\nNo key by `{column}` dropped an event.")?;
    Ok(true)
}

/// Writes a keyed replay's keys, most dropped first: those that dropped any, never padded
/// with keys that dropped nothing.
fn replay_keys_table(
    out: &mut dyn Write,
    r: &report::LimiterReport,
    style: Style,
) -> io::Result<()> {
    let Some(list) = &r.by_key else { return Ok(()) };
    if none_dropped(out, &list.column, list.top.iter().map(|k| k.dropped))? {
        return Ok(());
    }
    let keys: Vec<&report::LimiterReport> = list.top.iter().filter(|k| k.dropped > 0).collect();
    let order = match keys.len() < list.top.len() {
        true => "most dropped first (the others dropped nothing)",
        false => "most dropped first",
    };
    writeln!(out, "{}", keys_heading(&list.column, keys.len(), list.count, order))?;
    let length = r.busiest_window.length_s;
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            vec![
                key_label(k.key.as_deref()),
                k.events.to_string(),
                k.passed.to_string(),
                k.dropped.to_string(),
                k.busiest_window.count.to_string(),
                k.min_bucket.to_string(),
                (if k.promise.held { "held" } else { "BROKEN" }).to_owned(),
            ]
        })
        .collect();
    let busiest = format!("busiest {length}");
    let header = ["key", "events", "passed", "dropped", &busiest, "min_bucket", "promise"];
    table(out, &header, &rows, style)
}

/// Writes, for a keyed compare, the keys with the most drops over all limiters, with
/// each limiter's drops.
fn compare_keys_table(
    out: &mut dyn Write,
    reports: &[report::LimiterReport],
    across: &[report::KeyDrops],
    style: Style,
) -> io::Result<()> {
    let Some(list) = reports.iter().find_map(|r| r.by_key.as_ref()) else { return Ok(()) };
    let total = |k: &report::KeyDrops| k.dropped.iter().sum::<u64>();
    if none_dropped(out, &list.column, across.iter().map(total))? {
        return Ok(());
    }
    let shown: Vec<&report::KeyDrops> = across.iter().filter(|k| total(k) > 0).collect();
    let order = match shown.len() < across.len() {
        true => {
            "most dropped over all limiters first (the others dropped nothing); dropped by each"
        }
        false => "most dropped over all limiters first; dropped by each",
    };
    let across = shown;
    writeln!(out, "{}", keys_heading(&list.column, across.len(), list.count, order))?;
    let rows: Vec<Vec<String>> = across
        .iter()
        .map(|k| {
            let mut row = vec![key_label(Some(&k.key)), k.events.to_string()];
            row.extend(k.dropped.iter().map(u64::to_string));
            row
        })
        .collect();
    let mut header = vec!["key", "events"];
    header.extend(reports.iter().map(|r| r.algorithm.name()));
    table(out, &header, &rows, style)
}

/// Returns `n` as a share of `all`, as the tables write it after a count: `  12.5%`;
/// nothing when `all` is 0. For people, so a float's rounding is no harm.
pub(super) fn percent(n: u64, all: u64) -> String {
    match all {
        0 => String::new(),
        all => format!("  {:5.1}%", n as f64 * 100.0 / all as f64),
    }
}
