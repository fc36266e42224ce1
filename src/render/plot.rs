//! The scene: a replay drawn as an SVG timeline, one lane per limiter on a shared time axis.

use chrono::{DateTime, Datelike, NaiveDate, Utc};

use crate::limiter::Algorithm;
use crate::render::svg::{Svg, Value};
use crate::report;
use crate::units::time::{MICROS_PER_SEC, Timestamp, human_duration};

/// The drawing's width in pixels.
pub const WIDTH: f64 = 1200.0;
const LEFT: f64 = 190.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 104.0;
const BRACKET: f64 = 24.0;
const BARS: f64 = 56.0;
const GAP: f64 = 14.0;
const AXIS: f64 = 46.0;
/// How tall one event stands at most; busier columns share the lane's height.
const TICK: f64 = 14.0;
/// How wide a column is, in pixels.
const COLUMN: f64 = 2.0;
const DROPPED: &str = "#b8b8b8";

/// The number of columns events are binned into.
// A few hundred: the plot's width in pixels over a column's.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub const COLUMNS: usize = ((WIDTH - LEFT - RIGHT) / COLUMN) as usize;

/// One limiter's lane: its report and its events, binned by column.
#[derive(Clone, Debug)]
pub struct LanePlot {
    /// What the replay found.
    pub report: report::LimiterReport,
    /// Passed and dropped events in each column.
    pub bins: Vec<(u32, u32)>,
}

/// Everything the picture shows.
#[derive(Clone, Debug)]
pub struct Scene {
    /// What the title names the input.
    pub input: String,
    /// The start of the time axis.
    pub start: Timestamp,
    /// The end of the time axis; later than the start.
    pub end: Timestamp,
    /// The lanes, top to bottom.
    pub lanes: Vec<LanePlot>,
}

impl Scene {
    /// Returns the column of an instant within [start, end].
    pub fn column(start: Timestamp, end: Timestamp, time: Timestamp) -> usize {
        let span = i128::from(end.since(start).max(1));
        let offset = i128::from(time.since(start).max(0));
        let last = COLUMNS - 1;
        // Widening: COLUMNS is a few hundred.
        usize::try_from(offset * COLUMNS as i128 / span).map_or(last, |column| column.min(last))
    }

    fn x(&self, time: Timestamp) -> f64 {
        let span = self.end.since(self.start).max(1) as f64;
        LEFT + time.since(self.start) as f64 / span * (COLUMNS as f64 * COLUMN)
    }

    /// Draws the scene.
    pub fn draw(&self) -> String {
        let height = TOP + self.lanes.len() as f64 * (BRACKET + BARS + GAP) + AXIS;
        let (title, subtitle) = self.titles();
        let mut svg = Svg::page(WIDTH, height, &title, &subtitle);
        self.legend(&mut svg);
        self.grid(&mut svg, height);
        // One height scale for every lane: a column's total is the same in each.
        let most = self.lanes.iter().flat_map(|l| &l.bins).map(|(p, d)| p + d).max().unwrap_or(0);
        let unit = (BARS / f64::from(most.max(1))).min(TICK);
        for (i, lane) in self.lanes.iter().enumerate() {
            let top = TOP + i as f64 * (BRACKET + BARS + GAP);
            self.lane(&mut svg, lane, top, unit);
        }
        svg.finish()
    }

    fn titles(&self) -> (String, String) {
        let first = &self.lanes[0].report;
        let burst = self.lanes.iter().find_map(|l| l.report.burst);
        let burst = burst.map_or(String::new(), |b| format!(", burst {b}"));
        let title = format!("{} at {}{burst}", self.input, first.rate);
        // People read a column's width to the second.
        // COLUMNS is a few hundred.
        #[allow(clippy::cast_possible_wrap)]
        let column = self.end.since(self.start) / COLUMNS as i64;
        let column =
            human_duration((column + MICROS_PER_SEC / 2) / MICROS_PER_SEC * MICROS_PER_SEC);
        let subtitle = format!(
            "{} events from {} to {} (UTC); each column is {column}",
            first.events, self.start, self.end
        );
        (title, subtitle)
    }

    fn legend(&self, svg: &mut Svg) {
        let first = &self.lanes[0].report;
        // The legend; text is placed by an estimate of its width at 12 px.
        let y = 80.0;
        let width = |text: &str| text.chars().count() as f64 * 6.8;
        let mut x = 20.0;
        svg.start("g", &[("class", "legend".into()), ("font-size", 12.0.into())]);
        for (color, label) in [("#0072B2", "passed, in the lane's color"), (DROPPED, "dropped")] {
            let swatch = [
                ("x", x.into()),
                ("y", (y - 11.0).into()),
                ("width", 3.0.into()),
                ("height", 12.0.into()),
                ("fill", color.into()),
            ];
            svg.empty("rect", &swatch);
            svg.text("text", &[("x", (x + 8.0).into()), ("y", y.into())], label);
            x += 8.0 + width(label) + 24.0;
        }
        let path = format!(
            "M{} {} V{} H{} V{}",
            Value::Num(x),
            y + 1.0,
            y - 8.0,
            Value::Num(x + 26.0),
            y + 1.0
        );
        svg.stroke(&path, "#333", 1.0);
        let length = first.busiest_window.length_s;
        let text = format!("busiest {length} of passed events, with its count");
        svg.text("text", &[("x", (x + 34.0).into()), ("y", y.into())], &text);
        x += 34.0 + width(&text) + 24.0;
        svg.text(
            "text",
            &[("x", x.into()), ("y", y.into()), ("fill", "#555".into())],
            "bar height: events in the column",
        );
        svg.end();
    }

    fn grid(&self, svg: &mut Svg, height: f64) {
        let bottom = height - AXIS;
        svg.start(
            "g",
            &[("class", "axis".into()), ("font-size", 11.0.into()), ("fill", "#444".into())],
        );
        for (time, label) in axis_ticks(self.start, self.end) {
            let x = self.x(time);
            svg.empty(
                "line",
                &[
                    ("x1", x.into()),
                    ("x2", x.into()),
                    ("y1", TOP.into()),
                    ("y2", (bottom + 4.0).into()),
                    ("stroke", "#e4e4e4".into()),
                ],
            );
            for (k, line) in label.lines().enumerate() {
                let y = bottom + 18.0 + k as f64 * 14.0;
                svg.text(
                    "text",
                    &[("x", x.into()), ("y", y.into()), ("text-anchor", "middle".into())],
                    line,
                );
            }
        }
        svg.end();
    }

    fn lane(&self, svg: &mut Svg, lane: &LanePlot, top: f64, unit: f64) {
        let r = &lane.report;
        let color = color(r.algorithm);
        let base = top + BRACKET + BARS;
        svg.start(
            "g",
            &[
                ("class", "lane".into()),
                ("data-algorithm", r.algorithm.name().into()),
                ("data-passed", r.passed.into()),
                ("data-dropped", r.dropped.into()),
            ],
        );
        let name_y = top + BRACKET + BARS / 2.0;
        svg.text(
            "text",
            &[
                ("x", (LEFT - 14.0).into()),
                ("y", name_y.into()),
                ("text-anchor", "end".into()),
                ("font-size", 14.0.into()),
                ("font-weight", "bold".into()),
                ("fill", color.into()),
            ],
            r.algorithm.name(),
        );
        let counts = format!("{} passed, {} dropped", r.passed, r.dropped);
        svg.text(
            "text",
            &[
                ("x", (LEFT - 14.0).into()),
                ("y", (name_y + 16.0).into()),
                ("text-anchor", "end".into()),
                ("font-size", 11.0.into()),
                ("fill", "#555".into()),
            ],
            &counts,
        );
        svg.empty(
            "line",
            &[
                ("x1", LEFT.into()),
                ("x2", (WIDTH - RIGHT).into()),
                ("y1", (base + 0.5).into()),
                ("y2", (base + 0.5).into()),
                ("stroke", "#999".into()),
            ],
        );
        for (i, &(passed, dropped)) in lane.bins.iter().enumerate() {
            let x = LEFT + i as f64 * COLUMN;
            let passed_h = f64::from(passed) * unit;
            let dropped_h = f64::from(dropped) * unit;
            for (class, n, y, h, fill) in [
                ("p", passed, base - passed_h, passed_h, color),
                ("d", dropped, base - passed_h - dropped_h, dropped_h, DROPPED),
            ] {
                if n > 0 {
                    svg.empty(
                        "rect",
                        &[
                            ("class", class.into()),
                            ("data-n", u64::from(n).into()),
                            ("x", x.into()),
                            ("y", y.into()),
                            ("width", (COLUMN - 0.2).into()),
                            ("height", h.max(1.0).into()),
                            ("fill", fill.into()),
                        ],
                    );
                }
            }
        }
        if let Some(start) = r.busiest_window.start {
            self.bracket(svg, r, start, top + BRACKET - 4.0);
        }
        svg.end();
    }

    fn bracket(&self, svg: &mut Svg, r: &report::LimiterReport, start: Timestamp, y: f64) {
        let window = r.busiest_window;
        let end = start.checked_add(window.length_s).unwrap_or(start);
        let x1 = self.x(start).min(WIDTH - RIGHT - 4.0);
        let x2 = self.x(end).clamp(x1 + 4.0, WIDTH - RIGHT);
        svg.start("g", &[("class", "busiest".into()), ("data-count", window.count.into())]);
        let path = format!(
            "M{} {} V{} H{} V{}",
            Value::Num(x1),
            Value::Num(y + 6.0),
            Value::Num(y),
            Value::Num(x2),
            Value::Num(y + 6.0)
        );
        svg.stroke(&path, "#333", 1.5);
        let label = format!("busiest {}: {}", window.length_s, window.count);
        let (x, anchor) = if x1 > WIDTH - RIGHT - 140.0 { (x2, "end") } else { (x1, "start") };
        svg.text(
            "text",
            &[
                ("x", x.into()),
                ("y", (y - 4.0).into()),
                ("font-size", 11.0.into()),
                ("text-anchor", anchor.into()),
            ],
            &label,
        );
        svg.end();
    }
}

/// The Okabe–Ito palette, which color-blind readers can tell apart, in the order limiters
/// take it.
const PALETTE: [&str; 8] =
    ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#CC79A7", "#D55E00", "#F0E442", "#000000"];

/// Each limiter's color: the palette's, in the order limiters are listed.
fn color(algorithm: Algorithm) -> &'static str {
    let index = Algorithm::ALL.iter().position(|&a| a == algorithm).unwrap_or(0);
    PALETTE[index % PALETTE.len()]
}

/// Returns the axis labels: at most about ten, at a round step for the span (hours for two
/// days, months for years), each with its time.
pub fn axis_ticks(start: Timestamp, end: Timestamp) -> Vec<(Timestamp, String)> {
    const MAX: i64 = 10;
    let span = end.since(start).max(1);
    let minute = 60 * MICROS_PER_SEC;
    let fixed = [1, 5, 15, 30, 60, 120, 180, 360, 720, 1_440, 2_880, 10_080, 20_160];
    if let Some(step) = fixed.iter().map(|m| m * minute).find(|step| span / step <= MAX) {
        let first = start.as_micros() + (step - start.as_micros().rem_euclid(step)) % step;
        return (0..)
            .map(|k| first + k * step)
            .take_while(|&t| t <= end.as_micros())
            .filter_map(Timestamp::from_micros)
            .map(|t| (t, label(t, step)))
            .collect();
    }
    let months = [1, 2, 3, 6, 12, 24, 60, 120, 240, 600, 1_200];
    let span_months = span / (30 * 1_440 * minute);
    let step = months.iter().copied().find(|m| span_months / m < MAX).unwrap_or(1_200);
    let first = date(start);
    let mut month = i64::from(first.year()) * 12 + i64::from(first.month0());
    month += (step - month.rem_euclid(step)) % step;
    let mut ticks = Vec::new();
    loop {
        let (y, m) = (month.div_euclid(12), month.rem_euclid(12) + 1);
        let (Ok(y), Ok(m)) = (i32::try_from(y), u32::try_from(m)) else { break };
        let Some(day) = NaiveDate::from_ymd_opt(y, m, 1) else { break };
        let micros =
            day.and_hms_opt(0, 0, 0).expect("midnight").and_utc().timestamp() * MICROS_PER_SEC;
        let Some(t) = Timestamp::from_micros(micros) else { break };
        if t > end {
            break;
        }
        if t >= start {
            ticks.push((
                t,
                if step % 12 == 0 { format!("{y}") } else { day.format("%b\n%Y").to_string() },
            ));
        }
        month += step;
    }
    ticks
}

fn date(time: Timestamp) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_micros(time.as_micros()).expect("in range").date_naive()
}

/// A label for a tick at `time` with steps of `step` µs: the time of day, and the date
/// where a day begins.
fn label(time: Timestamp, step: i64) -> String {
    let at = DateTime::<Utc>::from_timestamp_micros(time.as_micros()).expect("in range");
    let day = 1_440 * 60 * MICROS_PER_SEC;
    if step >= day {
        at.format("%b %-d\n%Y").to_string()
    } else if time.as_micros().rem_euclid(day) < step {
        at.format("%H:%M\n%b %-d").to_string()
    } else {
        at.format("%H:%M").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(start: &str, end: &str) -> Vec<String> {
        axis_ticks(
            crate::units::time::rfc3339(start).unwrap(),
            crate::units::time::rfc3339(end).unwrap(),
        )
        .into_iter()
        .map(|(_, l)| l.replace('\n', " "))
        .collect()
    }

    #[test]
    fn two_days_get_hours() {
        let labels = ticks("2025-07-29T23:24:00Z", "2025-07-31T23:24:00Z");
        assert_eq!(labels[0], "00:00 Jul 30");
        assert_eq!(labels[1], "06:00");
        assert!(labels.len() <= 10, "{labels:?}");
    }

    #[test]
    fn eleven_years_get_years_and_months_get_months() {
        let labels = ticks("2015-01-01T08:49:53Z", "2025-12-30T20:26:04Z");
        assert_eq!(labels, ["2016", "2018", "2020", "2022", "2024"]);
        let labels = ticks("2022-04-01T00:00:00Z", "2024-12-31T00:00:00Z");
        assert_eq!(labels[..3], ["Jul 2022", "Jan 2023", "Jul 2023"]);
        let labels = ticks("2025-01-01T00:00:00Z", "2025-07-01T00:00:00Z");
        assert_eq!(labels[0], "Jan 2025");
        assert!(labels.len() <= 10, "{labels:?}");
    }

    #[test]
    fn columns_cover_the_range() {
        let (start, end) = (
            crate::units::time::rfc3339("2025-01-01").unwrap(),
            crate::units::time::rfc3339("2025-01-02").unwrap(),
        );
        assert_eq!(Scene::column(start, end, start), 0);
        assert_eq!(Scene::column(start, end, end), COLUMNS - 1);
    }
}
