//! The burst–rate curve drawn as an SVG: burst against rate, both on log axes.

use crate::render::svg::{Svg, Value};
use crate::sizing::curve::Curve;

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 620.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 90.0;
const BOTTOM: f64 = 60.0;
const SAMPLES: usize = 800;

/// Draws `curve`, made from `events` events of `input`.
pub fn draw(curve: &Curve, input: &str, events: usize) -> String {
    let title = format!("{input}: the burst a lossless token bucket needs, at each rate");
    let subtitle = format!(
        "{events} events; the curve has {} pieces, and a dot marks each breakpoint",
        curve.lines.len()
    );
    let mut svg = Svg::page(WIDTH, HEIGHT, &title, &subtitle);
    if curve.lines.is_empty() {
        return svg.finish();
    }
    // Rates per hour, from a quarter of the first breakpoint to four times the last.
    let breaks: Vec<f64> = curve.starts.iter().skip(1).map(|r| r.per_hour()).collect();
    let (lo, hi) = match (breaks.first(), breaks.last()) {
        (Some(&first), Some(&last)) => (first / 4.0, last * 4.0),
        _ => (0.01, 100.0),
    };
    let need = |per_hour: f64| {
        let per_micro = per_hour / 3.6e9;
        curve
            .lines
            .iter()
            .map(|l| l.units as f64 - per_micro * l.span as f64)
            .fold(f64::MIN, f64::max)
    };
    let (x_lo, x_hi) = (lo.log10().floor(), hi.log10().ceil());
    let y_hi = need(10f64.powf(x_lo)).max(2.0).log10().ceil();
    let x =
        |per_hour: f64| LEFT + (per_hour.log10() - x_lo) / (x_hi - x_lo) * (WIDTH - LEFT - RIGHT);
    let y = |burst: f64| HEIGHT - BOTTOM - burst.max(1.0).log10() / y_hi * (HEIGHT - TOP - BOTTOM);
    axes(&mut svg, x_lo, x_hi, y_hi, &x, &y);

    let rates: Vec<f64> = (0..SAMPLES)
        .map(|k| 10f64.powf(x_lo + (x_hi - x_lo) * k as f64 / (SAMPLES - 1) as f64))
        .collect();
    let mut exact = String::new();
    let mut steps = String::new();
    for (k, &rate) in rates.iter().enumerate() {
        let b = need(rate);
        let whole = (b - 1e-9).ceil().max(1.0);
        let (px, py, sy) = (Value::Num(x(rate)), Value::Num(y(b)), Value::Num(y(whole)));
        if k == 0 {
            exact += &format!("M{px} {py}");
            steps += &format!("M{px} {sy}");
        } else {
            exact += &format!(" L{px} {py}");
            steps += &format!(" H{px} V{sy}");
        }
    }
    svg.stroke(&steps, "#E69F00", 1.5);
    svg.stroke(&exact, "#0072B2", 2.0);
    svg.start("g", &[("class", "breakpoints".into()), ("fill", "#0072B2".into())]);
    for &rate in &breaks {
        svg.empty(
            "circle",
            &[("cx", x(rate).into()), ("cy", y(need(rate)).into()), ("r", 2.5.into())],
        );
    }
    svg.end();
    legend(&mut svg);
    svg.finish()
}

fn axes(
    svg: &mut Svg,
    x_lo: f64,
    x_hi: f64,
    y_hi: f64,
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    svg.start(
        "g",
        &[("class", "axes".into()), ("font-size", 11.0.into()), ("fill", "#444".into())],
    );
    let (left, right, top, bottom) = (LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM);
    // Decades of finite positive floats lie from −324 to 308.
    #[allow(clippy::cast_possible_truncation)]
    let (x_lo, x_hi, y_hi) = (x_lo as i32, x_hi as i32, y_hi as i32);
    for decade in x_lo..=x_hi {
        let rate = 10f64.powi(decade);
        let px = x(rate);
        svg.empty(
            "line",
            &[
                ("x1", px.into()),
                ("x2", px.into()),
                ("y1", top.into()),
                ("y2", bottom.into()),
                ("stroke", "#e4e4e4".into()),
            ],
        );
        let label = format!("{}/h", trim(rate));
        svg.text(
            "text",
            &[("x", px.into()), ("y", (bottom + 18.0).into()), ("text-anchor", "middle".into())],
            &label,
        );
    }
    for decade in 0..=y_hi {
        let burst = 10f64.powi(decade);
        let py = y(burst);
        svg.empty(
            "line",
            &[
                ("x1", left.into()),
                ("x2", right.into()),
                ("y1", py.into()),
                ("y2", py.into()),
                ("stroke", "#e4e4e4".into()),
            ],
        );
        svg.text(
            "text",
            &[("x", (left - 8.0).into()), ("y", (py + 4.0).into()), ("text-anchor", "end".into())],
            &trim(burst),
        );
    }
    svg.text(
        "text",
        &[
            ("x", ((left + right) / 2.0).into()),
            ("y", (bottom + 44.0).into()),
            ("text-anchor", "middle".into()),
            ("font-size", 13.0.into()),
        ],
        "rate r (events per hour, log scale)",
    );
    let (cx, cy) = (22.0, (top + bottom) / 2.0);
    let rotate = format!("rotate(-90 {cx} {cy})");
    svg.text(
        "text",
        &[
            ("x", cx.into()),
            ("y", cy.into()),
            ("transform", (&rotate).into()),
            ("text-anchor", "middle".into()),
            ("font-size", 13.0.into()),
        ],
        "burst b (log scale)",
    );
    svg.end();
}

fn legend(svg: &mut Svg) {
    let y = 74.0;
    svg.start("g", &[("class", "legend".into()), ("font-size", 12.0.into())]);
    for (k, (color, text)) in [
        ("#0072B2", "b(r) = max over stretches of events − r·span, exact"),
        ("#E69F00", "the smallest whole burst, ⌈b(r)⌉"),
    ]
    .iter()
    .enumerate()
    {
        let x = 20.0 + k as f64 * 430.0;
        svg.empty(
            "line",
            &[
                ("x1", x.into()),
                ("x2", (x + 24.0).into()),
                ("y1", (y - 4.0).into()),
                ("y2", (y - 4.0).into()),
                ("stroke", (*color).into()),
                ("stroke-width", 2.0.into()),
            ],
        );
        svg.text("text", &[("x", (x + 30.0).into()), ("y", y.into())], text);
    }
    svg.end();
}

/// Writes a power of ten without needless digits: 0.01, 1, 1000.
fn trim(value: f64) -> String {
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
