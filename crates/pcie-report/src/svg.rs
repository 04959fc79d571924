//! Rendering: lays a [`Chart`] out on a fixed canvas and writes compact, deterministic SVG.
//!
//! Layout: title on top, the legend in a column right of the plot (so it never hides curves that
//! plateau at the top right), y tick labels sized to fit. Coordinates are written with at most two
//! decimals and long curves are simplified below a tenth of a pixel, so files stay small.
//!
//! Machine-readable hooks: each series is a `<g class="series" data-name="…">`, each legend entry a
//! `<g class="legend-entry" data-name="…">`, and the document has a `<title>`.

use std::fmt::Write;

use crate::axis::{self, Fit, Ticked};
use crate::chart::{Chart, Point, Scale, Series, SeriesKind};
use crate::path::{self, Pt, Rect};
use crate::style::{self, Marker, Style};

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 520.0;
const PLOT_TOP: f64 = 48.0;
const PLOT_BOTTOM: f64 = HEIGHT - 62.0;
const PAD: f64 = 14.0;
const FONT: f64 = 12.0;
const LABEL_FONT: f64 = 13.0;
const TITLE_FONT: f64 = 16.0;
const TICK_LEN: f64 = 5.0;
const LEGEND_GAP: f64 = 18.0;
const LEGEND_SAMPLE: f64 = 30.0;
const LEGEND_ROW: f64 = 20.0;
const LEGEND_MIN_ROW: f64 = 13.0;
const LEGEND_MAX_CHARS: usize = 32;
const CAP_HALF: f64 = 3.5;
const MARKER_RADIUS: f64 = 3.5;
/// Curves are simplified to this many pixels; far below what the eye or a 2-decimal number resolves.
const SIMPLIFY_PX: f64 = 0.1;

const TEXT: &str = "#222222";
const MUTED: &str = "#555555";
const FRAME: &str = "#888888";
const GRID: &str = "#e3e3e3";
const GRID_MINOR: &str = "#f1f1f1";

/// A series reduced to what the axes can show: `None` marks a point that cannot be placed (a gap).
struct Prepared<'a> {
    series: &'a Series,
    points: Vec<Option<Point>>,
    style: Style,
}

pub(crate) fn render(chart: &Chart) -> String {
    let prepared = prepare(chart);
    let frame = Frame::layout(chart, &prepared);
    let plot = frame.plot;

    let mut out = String::with_capacity(16 * 1024);
    let title = escape(&chart.title);
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" font-size="{FONT}" role="img">"#,
        w = WIDTH,
        h = HEIGHT,
    );
    let _ = write!(out, "\n<title>{title}</title>");
    let _ = write!(out, "\n<rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"#ffffff\"/>");
    // Centred over the plot, but pushed back onto the canvas when long.
    let half = text_width(&chart.title, TITLE_FONT) / 2.0;
    let title_x = ((plot.x0 + plot.x1) / 2.0).min(WIDTH - PAD - half).max(PAD + half);
    let _ = write!(
        out,
        "\n<text class=\"chart-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{TITLE_FONT}\" font-weight=\"bold\" fill=\"{TEXT}\">{title}</text>",
        num(title_x),
        PAD + TITLE_FONT,
    );
    frame.grid(&mut out);
    for p in &prepared {
        frame.series(&mut out, p);
    }
    frame.axes(&mut out, &chart.x.label, &chart.y.label);
    if !prepared.iter().any(|p| p.points.iter().any(Option::is_some)) {
        let _ = write!(
            out,
            "\n<text class=\"no-data\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{LABEL_FONT}\" font-style=\"italic\" fill=\"{MUTED}\">no data</text>",
            num((plot.x0 + plot.x1) / 2.0),
            num((plot.y0 + plot.y1) / 2.0),
        );
    }
    legend(&mut out, &prepared, plot.x1 + LEGEND_GAP);
    out.push_str("\n</svg>\n");
    out
}

/// Styles each series and drops what its axes cannot place. Data and reference series are
/// numbered separately, so adding a reference curve does not restyle the data.
fn prepare(chart: &Chart) -> Vec<Prepared<'_>> {
    let (xs, ys) = (chart.x.scale, chart.y.scale);
    let mut data_index = 0;
    let mut reference_index = 0;
    chart
        .series
        .iter()
        .map(|series| {
            let counter = if series.kind == SeriesKind::Reference {
                &mut reference_index
            } else {
                &mut data_index
            };
            let style = style::style(series.kind, *counter, series.points.len());
            *counter += 1;
            let points = series.points.iter().map(|p| placeable(p, xs, ys)).collect();
            Prepared { series, points, style }
        })
        .collect()
}

/// Keeps the coordinates a scale can show; invalid error-bar ends are dropped, not the point.
fn placeable(p: &Point, xs: Scale, ys: Scale) -> Option<Point> {
    (xs.accepts(p.x) && ys.accepts(p.y)).then(|| Point {
        y_low: p.y_low.filter(|v| ys.accepts(*v)),
        y_high: p.y_high.filter(|v| ys.accepts(*v)),
        ..*p
    })
}

fn extent(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// The richest ticks (about `per_axis` intervals at most) whose neighbouring labels pass `fits`,
/// given as (axis fraction, label) pairs; a crowded axis retries with fewer ticks.
fn fit_ticks(scale: Scale, span: axis::Span, per_axis: f64, fits: impl Fn((f64, &str), (f64, &str)) -> bool) -> Ticked {
    let mut target = (per_axis as usize).max(2);
    loop {
        let t = axis::ticks(scale, span, target);
        let labels: Vec<(f64, &str)> = t.labels().filter_map(|(v, l)| Some((t.fraction(v)?, l))).collect();
        if target <= 2 || labels.windows(2).all(|w| fits(w[0], w[1])) {
            return t;
        }
        target -= 1;
    }
}

/// The plot rectangle and both ranged axes: maps data to pixels and draws the chart furniture.
struct Frame {
    plot: Rect,
    x: Ticked,
    y: Ticked,
}

impl Frame {
    /// Ranges both axes and places the plot: y ticks first, since their labels set the left
    /// margin and so the room for x ticks; the legend column takes what its names need.
    fn layout(chart: &Chart, prepared: &[Prepared]) -> Self {
        let placed = || prepared.iter().flat_map(|p| p.points.iter().flatten());
        let x_extent = extent(placed().map(|p| p.x));
        let y_extent = extent(placed().flat_map(|p| [Some(p.y), p.y_low, p.y_high].into_iter().flatten()));
        let pad = prepared.iter().any(|p| p.style.marker.is_some())
            || placed().any(|p| p.y_low.is_some() || p.y_high.is_some());

        let y_fit = Fit {
            zero_baseline: true,
            pad,
        };
        let y_span = axis::span(&chart.y, y_extent, y_fit);
        let plot_h = PLOT_BOTTOM - PLOT_TOP;
        let y = fit_ticks(chart.y.scale, y_span, plot_h / 40.0, |a, b| {
            (b.0 - a.0) * plot_h >= FONT + 6.0
        });
        let y_label_w = y.labels().map(|(_, l)| text_width(l, FONT)).fold(0.0, f64::max);
        let left = PAD + LABEL_FONT + 12.0 + y_label_w + TICK_LEN + 4.0;

        let legend_text_w = prepared
            .iter()
            .map(|p| text_width(&legend_name(&p.series.name), FONT))
            .fold(0.0, f64::max);
        let right = if prepared.is_empty() {
            WIDTH - PAD - 16.0
        } else {
            WIDTH - PAD - LEGEND_GAP - LEGEND_SAMPLE - 8.0 - legend_text_w
        };
        let plot_w = right - left;

        let x_fit = Fit {
            zero_baseline: false,
            pad,
        };
        let x_span = axis::span(&chart.x, x_extent, x_fit);
        // x labels are centred on their ticks: neighbours need half of each width plus a gap.
        let x = fit_ticks(chart.x.scale, x_span, plot_w / 60.0, |a, b| {
            let need = (text_width(a.1, FONT) + text_width(b.1, FONT)) / 2.0 + 12.0;
            (b.0 - a.0) * plot_w >= need
        });

        let plot = Rect {
            x0: left,
            y0: PLOT_TOP,
            x1: right,
            y1: PLOT_BOTTOM,
        };
        Frame { plot, x, y }
    }

    fn px(&self, v: f64) -> Option<f64> {
        let f = self.x.fraction(v)?;
        Some(self.plot.x0 + f * (self.plot.x1 - self.plot.x0))
    }

    fn py(&self, v: f64) -> Option<f64> {
        let f = self.y.fraction(v)?;
        Some(self.plot.y1 - f * (self.plot.y1 - self.plot.y0))
    }

    /// Pixel position of a data point, which may lie outside the plot (lines are clipped to it);
    /// `None` if the scales cannot place it or it is too far out to compute with.
    fn project(&self, x: f64, y: f64) -> Option<Pt> {
        let p = (self.px(x)?, self.py(y)?);
        (p.0.is_finite() && p.1.is_finite()).then_some(p)
    }

    fn grid(&self, out: &mut String) {
        let p = self.plot;
        let mut major = String::new();
        let mut minor = String::new();
        for t in &self.x.ticks {
            if let Some(x) = self.px(t.value).filter(|x| *x > p.x0 + 0.5 && *x < p.x1 - 0.5) {
                let d = if t.major || t.label.is_some() {
                    &mut major
                } else {
                    &mut minor
                };
                let _ = write!(d, "M{} {}V{}", num(x), num(p.y0), num(p.y1));
            }
        }
        for t in &self.y.ticks {
            if let Some(y) = self.py(t.value).filter(|y| *y > p.y0 + 0.5 && *y < p.y1 - 0.5) {
                let d = if t.major || t.label.is_some() {
                    &mut major
                } else {
                    &mut minor
                };
                let _ = write!(d, "M{} {}H{}", num(p.x0), num(y), num(p.x1));
            }
        }
        out.push_str("\n<g class=\"grid\" fill=\"none\" stroke-width=\"1\">");
        if !minor.is_empty() {
            let _ = write!(out, "<path stroke=\"{GRID_MINOR}\" d=\"{minor}\"/>");
        }
        if !major.is_empty() {
            let _ = write!(out, "<path stroke=\"{GRID}\" d=\"{major}\"/>");
        }
        out.push_str("</g>");
    }

    fn axes(&self, out: &mut String, x_label: &str, y_label: &str) {
        let p = self.plot;
        let mut marks = String::new();
        for t in &self.x.ticks {
            if let Some(x) = self.px(t.value) {
                let len = tick_len(t);
                let _ = write!(marks, "M{} {}v{}", num(x), num(p.y1), num(len));
            }
        }
        for t in &self.y.ticks {
            if let Some(y) = self.py(t.value) {
                let len = tick_len(t);
                let _ = write!(marks, "M{} {}h{}", num(p.x0), num(y), num(-len));
            }
        }
        let _ = write!(
            out,
            "\n<g class=\"axes\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{FRAME}\"/><path stroke=\"{FRAME}\" d=\"{marks}\"/>",
            num(p.x0),
            num(p.y0),
            num(p.x1 - p.x0),
            num(p.y1 - p.y0),
        );
        let _ = write!(out, "\n<g class=\"x-ticks\" text-anchor=\"middle\" fill=\"{MUTED}\">");
        for (v, l) in self.x.labels() {
            if let Some(x) = self.px(v) {
                let _ = write!(
                    out,
                    "<text x=\"{}\" y=\"{}\">{}</text>",
                    num(x),
                    num(p.y1 + TICK_LEN + FONT + 2.0),
                    escape(l)
                );
            }
        }
        let _ = write!(out, "</g>\n<g class=\"y-ticks\" text-anchor=\"end\" fill=\"{MUTED}\">");
        for (v, l) in self.y.labels() {
            if let Some(y) = self.py(v) {
                let _ = write!(
                    out,
                    "<text x=\"{}\" y=\"{}\" dy=\"0.35em\">{}</text>",
                    num(p.x0 - TICK_LEN - 4.0),
                    num(y),
                    escape(l)
                );
            }
        }
        let (cx, cy) = ((p.x0 + p.x1) / 2.0, (p.y0 + p.y1) / 2.0);
        let _ = write!(
            out,
            "</g>\n<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{LABEL_FONT}\" fill=\"{TEXT}\">{}</text>",
            num(cx),
            num(p.y1 + TICK_LEN + FONT + 8.0 + LABEL_FONT + 4.0),
            escape(x_label)
        );
        let ly = PAD + LABEL_FONT;
        let _ = write!(
            out,
            "\n<text class=\"y-label\" x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\" text-anchor=\"middle\" font-size=\"{LABEL_FONT}\" fill=\"{TEXT}\">{}</text></g>",
            num(ly),
            num(cy),
            num(ly),
            num(cy),
            escape(y_label)
        );
    }

    fn series(&self, out: &mut String, p: &Prepared) {
        let s = &p.style;
        let _ = write!(
            out,
            "\n<g class=\"series\" data-name=\"{}\" data-kind=\"{}\">",
            escape(&p.series.name),
            kind_name(p.series.kind)
        );
        if let Some(width) = s.width {
            let d = self.line_path(p);
            if !d.is_empty() {
                let _ = write!(out, "<path class=\"line\" fill=\"none\"");
                stroke_attrs(out, s, width);
                let _ = write!(out, " d=\"{d}\"/>");
            }
        }
        let bars = self.error_bars(&p.points);
        if !bars.is_empty() {
            let _ = write!(
                out,
                "<path class=\"error-bars\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.25\" d=\"{bars}\"/>",
                s.color
            );
        }
        if let Some(marker) = s.marker {
            let mut d = String::new();
            for pt in p.points.iter().flatten() {
                if let Some(c) = self.project(pt.x, pt.y).filter(|c| self.plot.contains(*c)) {
                    marker_path(&mut d, marker, c, MARKER_RADIUS);
                }
            }
            if !d.is_empty() {
                let _ = write!(out, "<path class=\"markers\"");
                marker_attrs(out, s);
                let _ = write!(out, " d=\"{d}\"/>");
            }
        }
        out.push_str("</g>");
    }

    /// The connecting line as one path: steps expanded, clipped, simplified.
    fn line_path(&self, p: &Prepared) -> String {
        let mut pts: Vec<Option<Pt>> = Vec::with_capacity(p.points.len() * 2);
        let mut prev: Option<Point> = None;
        for point in &p.points {
            if let (SeriesKind::Step, Some(a), Some(b)) = (p.series.kind, prev, point) {
                pts.push(self.project(b.x, a.y)); // hold y until the next x
            }
            pts.push(point.and_then(|pt| self.project(pt.x, pt.y)));
            prev = *point;
        }
        let mut d = String::new();
        for run in path::clip_polyline(&pts, &self.plot) {
            for (i, (x, y)) in path::simplify(&run, SIMPLIFY_PX).into_iter().enumerate() {
                let cmd = match i {
                    0 => "M",
                    1 => "L",
                    _ => " ",
                };
                let _ = write!(d, "{cmd}{} {}", num(x), num(y));
            }
        }
        d
    }

    /// Vertical bars with caps; a bar is clipped to the plot and an end outside it gets no cap.
    fn error_bars(&self, points: &[Option<Point>]) -> String {
        let mut d = String::new();
        for p in points.iter().flatten() {
            if p.y_low.is_none() && p.y_high.is_none() {
                continue;
            }
            let (lo, hi) = (p.y_low.unwrap_or(p.y), p.y_high.unwrap_or(p.y));
            let (Some(a), Some(b)) = (self.project(p.x, lo), self.project(p.x, hi)) else {
                continue;
            };
            let Some((a, b)) = path::clip_segment(a, b, &self.plot) else {
                continue;
            };
            let _ = write!(d, "M{} {}V{}", num(a.0), num(a.1), num(b.1));
            for (end, raw) in [(a, lo), (b, hi)] {
                let capped = raw != p.y && self.py(raw) == Some(end.1);
                if capped {
                    let _ = write!(d, "M{} {}h{}", num(end.0 - CAP_HALF), num(end.1), num(2.0 * CAP_HALF));
                }
            }
        }
        d
    }
}

/// Labelled and decade ticks are full length; unlabelled minor ticks are short.
fn tick_len(t: &axis::Tick) -> f64 {
    if t.major || t.label.is_some() {
        TICK_LEN
    } else {
        TICK_LEN * 0.6
    }
}

fn kind_name(kind: SeriesKind) -> &'static str {
    match kind {
        SeriesKind::Line => "line",
        SeriesKind::Step => "step",
        SeriesKind::Markers => "markers",
        SeriesKind::Reference => "reference",
    }
}

fn stroke_attrs(out: &mut String, s: &Style, width: f64) {
    let _ = write!(
        out,
        " stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"",
        s.color,
        num(width)
    );
    if !s.dash.is_empty() {
        let _ = write!(out, " stroke-dasharray=\"{}\"", s.dash);
    }
}

fn marker_attrs(out: &mut String, s: &Style) {
    if s.hollow {
        let _ = write!(out, " fill=\"#ffffff\" stroke=\"{}\" stroke-width=\"1.5\"", s.color);
    } else {
        let _ = write!(out, " fill=\"{}\"", s.color);
    }
}

/// Appends one closed marker outline centred on `c`.
fn marker_path(d: &mut String, marker: Marker, c: Pt, r: f64) {
    let (x, y) = c;
    let _ = match marker {
        Marker::Circle => write!(
            d,
            "M{} {}a{r} {r} 0 1 0 {} 0a{r} {r} 0 1 0 {} 0z",
            num(x - r),
            num(y),
            num(2.0 * r),
            num(-2.0 * r),
            r = num(r),
        ),
        Marker::Square => {
            let s = r * 0.9;
            write!(
                d,
                "M{} {}h{}v{}h{}z",
                num(x - s),
                num(y - s),
                num(2.0 * s),
                num(2.0 * s),
                num(-2.0 * s)
            )
        }
        Marker::Diamond => {
            let s = r * 1.3;
            write!(
                d,
                "M{} {}l{s} {s} {n} {s} {n} {n}z",
                num(x),
                num(y - s),
                s = num(s),
                n = num(-s),
            )
        }
        Marker::TriangleUp | Marker::TriangleDown => {
            let s = if marker == Marker::TriangleUp { 1.0 } else { -1.0 };
            let (h, w) = (r * 1.25, r * 1.15);
            write!(
                d,
                "M{} {}l{} {}h{}z",
                num(x),
                num(y - s * h),
                num(w),
                num(s * 2.0 * h * 0.85),
                num(-2.0 * w)
            )
        }
    };
}

/// The legend: a column right of the plot, one entry per series in drawing order.
fn legend(out: &mut String, prepared: &[Prepared], x0: f64) {
    if prepared.is_empty() {
        return;
    }
    // Rows tighten when many series would run off the canvas.
    let room = HEIGHT - PLOT_TOP - 16.0;
    let row = LEGEND_ROW.min(room / prepared.len() as f64).max(LEGEND_MIN_ROW);
    out.push_str("\n<g class=\"legend\">");
    for (i, p) in prepared.iter().enumerate() {
        let y = PLOT_TOP + 8.0 + i as f64 * row;
        let s = &p.style;
        let _ = write!(
            out,
            "\n<g class=\"legend-entry\" data-name=\"{}\" transform=\"translate({} {})\">",
            escape(&p.series.name),
            num(x0),
            num(y)
        );
        if let Some(width) = s.width {
            let _ = write!(out, "<path fill=\"none\"");
            stroke_attrs(out, s, width);
            let _ = write!(out, " d=\"M0 0h{LEGEND_SAMPLE}\"/>");
        }
        if let Some(marker) = s.marker {
            let mut d = String::new();
            marker_path(&mut d, marker, (LEGEND_SAMPLE / 2.0, 0.0), MARKER_RADIUS);
            let _ = write!(out, "<path");
            marker_attrs(out, s);
            let _ = write!(out, " d=\"{d}\"/>");
        }
        let _ = write!(
            out,
            "<text x=\"{}\" dy=\"0.35em\" fill=\"{TEXT}\">{}</text></g>",
            LEGEND_SAMPLE + 8.0,
            escape(&legend_name(&p.series.name))
        );
    }
    out.push_str("</g>");
}

/// Long names are shortened in the legend (the full name stays in `data-name`).
fn legend_name(name: &str) -> String {
    if name.chars().count() <= LEGEND_MAX_CHARS {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(LEGEND_MAX_CHARS - 1).collect();
        s.push('…');
        s
    }
}

/// A conservative estimate of rendered text width (no font metrics without dependencies).
fn text_width(s: &str, font: f64) -> f64 {
    s.chars().count() as f64 * font * 0.6
}

/// Escapes text for XML and HTML content and quoted attribute values (the inline SVGs of a
/// report page and the page itself share it); drops characters XML 1.0 forbids.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // `&#39;` rather than `&apos;`, which HTML 4 does not define.
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most two decimals and no trailing zeros (`12.5`, `-3`, `0.07`).
pub(crate) fn num(v: f64) -> String {
    debug_assert!(v.is_finite(), "non-finite coordinate");
    let hundredths = if v.is_finite() { (v * 100.0).round() as i64 } else { 0 };
    let (sign, n) = if hundredths < 0 {
        ("-", hundredths.unsigned_abs())
    } else {
        ("", hundredths.unsigned_abs())
    };
    let (int, frac) = (n / 100, n % 100);
    match frac {
        0 => format!("{sign}{int}"),
        f if f % 10 == 0 => format!("{sign}{int}.{}", f / 10),
        f => format!("{sign}{int}.{f:02}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Axis;

    fn chart(series: Vec<Series>) -> Chart {
        Chart {
            title: "Effective bandwidth".into(),
            x: Axis::linear("Transfer size (B)"),
            y: Axis::linear("Bandwidth (Gb/s)"),
            series,
        }
    }

    fn sawtooth(scale: f64) -> Vec<Point> {
        (1..=4096)
            .map(|s| {
                let s = f64::from(s);
                Point::new(s, scale * s / (s + 24.0 * (s / 256.0).ceil()))
            })
            .collect()
    }

    fn count(haystack: &str, needle: &str) -> usize {
        haystack.matches(needle).count()
    }

    #[test]
    fn numbers_are_compact() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.5), "12.5");
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(-1.23456), "-1.23");
        assert_eq!(num(0.07), "0.07");
        assert_eq!(num(-0.001), "0");
    }

    #[test]
    fn text_is_escaped_everywhere() {
        assert_eq!(escape(r#"a<b>&"c"'d'"#), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
        assert_eq!(escape("x\u{1}y\nz"), "xy z");
        let mut c = chart(vec![Series::line("rd <64B> & \"wr\"", sawtooth(57.0))]);
        c.title = "A & B <C>".into();
        c.x.label = "size <B>".into();
        c.y.label = "y & z".into();
        let svg = c.to_svg();
        assert!(svg.contains("<title>A &amp; B &lt;C&gt;</title>"));
        assert!(svg.contains("size &lt;B&gt;") && svg.contains("y &amp; z"));
        assert!(svg.contains(r#"data-name="rd &lt;64B&gt; &amp; &quot;wr&quot;""#));
        assert!(!svg.contains("<C>") && !svg.contains("& "));
    }

    #[test]
    fn every_series_and_legend_entry_is_marked() {
        let svg = chart(vec![
            Series::line("rd", sawtooth(57.0)),
            Series::line("wr", sawtooth(60.0)),
            Series::step("cdf", sawtooth(40.0)),
            Series::markers("lat", vec![Point::new(64.0, 10.0)]),
            Series::reference("40GbE", vec![Point::new(1.0, 40.0), Point::new(4096.0, 40.0)]),
        ])
        .to_svg();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert_eq!(count(&svg, "<title>"), 1);
        assert_eq!(count(&svg, "class=\"series\""), 5);
        assert_eq!(count(&svg, "class=\"legend-entry\""), 5);
        for name in ["rd", "wr", "cdf", "lat", "40GbE"] {
            assert_eq!(count(&svg, &format!("data-name=\"{name}\"")), 2, "{name}");
        }
        assert!(svg.contains("data-kind=\"reference\"") && svg.contains("stroke-dasharray"));
    }

    #[test]
    fn many_points_render_as_one_small_path_per_series() {
        let series = (0..4)
            .map(|i| Series::line(format!("s{i}"), sawtooth(57.0 - 5.0 * f64::from(i))))
            .collect();
        let svg = chart(series).to_svg();
        assert_eq!(count(&svg, "class=\"line\""), 4);
        assert_eq!(count(&svg, "<path class=\"line\""), 4);
        assert!(svg.len() < 300_000, "{} bytes", svg.len());
        // Each of the 16 saw-tooth drops survives simplification: a long fall between two points.
        let d = svg.split("class=\"line\"").nth(1).unwrap();
        let d = &d[d.find(" d=\"").unwrap() + 4..];
        let d = &d[..d.find('"').unwrap()];
        let ys: Vec<f64> = d
            .split(['M', 'L'])
            .flat_map(|seg| seg.split_whitespace())
            .skip(1)
            .step_by(2)
            .map(|v| v.parse().unwrap())
            .collect();
        // (y grows downwards; the last drop, at 3840 B, is about 2 px on this canvas)
        let drops = ys.windows(2).filter(|w| w[1] - w[0] > 1.0).count();
        assert_eq!(drops, 15, "drops after 256, 512, ..., 3840: {ys:?}");
    }

    #[test]
    fn log_axis_skips_non_positive_values() {
        let mut c = chart(vec![Series::markers(
            "lat",
            vec![
                Point::new(0.0, 5.0),
                Point::new(-4.0, 5.0),
                Point::new(64.0, 5.0),
                Point::new(128.0, 0.0),
                Point::new(256.0, 7.0),
            ],
        )]);
        c.x = Axis::log10("Transfer size (B)");
        c.y = Axis::log10("Latency (ns)");
        let svg = c.to_svg();
        let series = svg.split("class=\"series\"").nth(1).unwrap();
        let series = &series[..series.find("</g>").unwrap()];
        assert_eq!(count(series, "a3.5 3.5"), 4, "two circle markers, two arcs each");
        for bad in ["NaN", "inf"] {
            assert!(!svg.contains(bad));
        }
    }

    #[test]
    fn no_nan_or_inf_whatever_the_input() {
        let odd = vec![
            Point::new(f64::NAN, 1.0),
            Point::new(1.0, f64::INFINITY),
            Point::new(2.0, 3.0),
            Point::with_error(3.0, 4.0, f64::NEG_INFINITY, f64::NAN),
            Point::new(1e300, -1e300),
            Point::new(4.0, 5.0),
        ];
        for (xs, ys) in [
            (Axis::linear("x"), Axis::linear("y")),
            (Axis::log10("x"), Axis::log10("y")),
            (
                Axis::linear("x").with_range(2.5, 3.5),
                Axis::log10("y").with_range(1e-300, 1e300),
            ),
        ] {
            for kind in [Series::line, Series::step, Series::markers, Series::reference] {
                let c = Chart {
                    title: "odd".into(),
                    x: xs.clone(),
                    y: ys.clone(),
                    series: vec![kind("s", odd.clone())],
                };
                let svg = c.to_svg();
                for bad in ["NaN", "inf"] {
                    assert!(!svg.contains(bad), "{bad} in {svg}");
                }
            }
        }
    }

    #[test]
    fn output_is_deterministic() {
        let make = || {
            chart(vec![
                Series::line("rd", sawtooth(57.0)),
                Series::markers("lat", vec![Point::with_error(64.0, 10.0, 8.0, 14.0)]),
            ])
        };
        assert_eq!(make().to_svg(), make().to_svg());
    }

    #[test]
    fn error_bars_have_stems_and_caps() {
        let svg = chart(vec![Series::markers(
            "lat",
            vec![
                Point::with_error(64.0, 10.0, 8.0, 14.0),
                Point::with_error(128.0, 12.0, 9.0, 20.0),
                Point::new(256.0, 15.0),
            ],
        )])
        .to_svg();
        let bars = svg.split("class=\"error-bars\"").nth(1).expect("error bars");
        let d = &bars[bars.find(" d=\"").unwrap() + 4..];
        let d = &d[..d.find('"').unwrap()];
        assert_eq!(count(d, "V"), 2, "one stem per point with a bar: {d}");
        assert_eq!(count(d, "h7"), 4, "two caps per stem: {d}");
        // The range covers the bar ends, not just the points.
        assert!(svg.contains(">20<"), "y axis reaches p95 = 20");
    }

    #[test]
    fn empty_charts_render_axes_and_a_note() {
        for series in [vec![], vec![Series::line("rd", vec![])]] {
            let svg = chart(series.clone()).to_svg();
            assert!(svg.contains("no data"));
            assert!(svg.contains("class=\"axes\""));
            assert_eq!(count(&svg, "class=\"series\""), series.len());
            assert!(svg.ends_with("</svg>\n"));
        }
        let mut c = chart(vec![]);
        c.y = Axis::log10("y");
        assert!(c.to_svg().contains(">10<"));
    }

    /// All numbers in the `d` attributes of paths with class `class`.
    fn path_numbers(svg: &str, class: &str) -> Vec<f64> {
        let mut out = Vec::new();
        for part in svg.split(&format!("class=\"{class}\"")).skip(1) {
            let d = &part[part.find(" d=\"").unwrap() + 4..];
            let d = &d[..d.find('"').unwrap()];
            let d = d.replace(|c: char| c.is_ascii_alphabetic(), " ");
            out.extend(d.split_whitespace().map(|v| v.parse::<f64>().unwrap()));
        }
        out
    }

    #[test]
    fn data_beyond_a_pinned_range_is_clipped_to_the_plot() {
        let mut c = chart(vec![
            Series::line("rd", sawtooth(57.0)),
            Series::line("far", vec![Point::new(150.0, 48.0), Point::new(1e300, -1e300)]),
        ]);
        c.x = c.x.with_range(100.0, 600.0);
        c.y = c.y.with_range(46.0, 50.0); // cuts through the saw-tooth
        let svg = c.to_svg();
        let nums = path_numbers(&svg, "line");
        assert_eq!(count(&svg, "class=\"line\""), 2, "both series have a visible part");
        let xs: Vec<f64> = nums.iter().step_by(2).copied().collect();
        let ys: Vec<f64> = nums.iter().skip(1).step_by(2).copied().collect();
        let (x_min, x_max) = (
            xs.iter().copied().fold(f64::MAX, f64::min),
            xs.iter().copied().fold(f64::MIN, f64::max),
        );
        let (y_min, y_max) = (
            ys.iter().copied().fold(f64::MAX, f64::min),
            ys.iter().copied().fold(f64::MIN, f64::max),
        );
        assert!(x_min >= 0.0 && x_max <= WIDTH, "{x_min}..{x_max}");
        assert!(y_min >= PLOT_TOP && y_max <= PLOT_BOTTOM, "{y_min}..{y_max}");
    }

    #[test]
    fn a_crowded_legend_stays_on_the_canvas() {
        let series = (0..30)
            .map(|i| {
                Series::line(
                    format!("series {i}"),
                    vec![Point::new(1.0, f64::from(i)), Point::new(2.0, 1.0)],
                )
            })
            .collect();
        let svg = chart(series).to_svg();
        let last = svg.rsplit("class=\"legend-entry\"").next().unwrap();
        let y: f64 = last
            .split("translate(")
            .nth(1)
            .unwrap()
            .split([' ', ')'])
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(y < HEIGHT - 4.0, "last legend row at {y}");
    }

    #[test]
    fn bandwidth_axis_starts_at_zero() {
        let svg = chart(vec![Series::line("rd", sawtooth(57.0))]).to_svg();
        let y_ticks = svg.split("class=\"y-ticks\"").nth(1).unwrap();
        let y_ticks = &y_ticks[..y_ticks.find("</g>").unwrap()];
        assert!(y_ticks.contains(">0<") && y_ticks.contains(">60<"), "{y_ticks}");
    }
}
