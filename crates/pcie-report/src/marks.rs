//! A series' marks inside the plot: its line (steps expanded, clipped, simplified), error bars
//! and markers, and the stroke and marker drawing the legend's samples share.

use std::fmt::Write;

use crate::canvas::{CAP_HALF, MARKER_RADIUS, SIMPLIFY_PX};
use crate::chart::{Point, SeriesKind};
use crate::frame::Frame;
use crate::markup::{escape, num};
use crate::path::{self, Pt};
use crate::prepared::Prepared;
use crate::style::{Marker, Style};

pub(crate) fn draw(out: &mut String, frame: &Frame, p: &Prepared) {
    let s = &p.style;
    let _ = write!(
        out,
        "\n<g class=\"series\" data-name=\"{}\" data-kind=\"{}\">",
        escape(&p.series.name),
        kind_name(p.series.kind)
    );
    if let Some(width) = s.width {
        let d = line_path(frame, p);
        if !d.is_empty() {
            let _ = write!(out, "<path class=\"line\" fill=\"none\"");
            stroke_attrs(out, s, width);
            let _ = write!(out, " d=\"{d}\"/>");
        }
    }
    let bars = error_bars(frame, &p.points);
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
            if let Some(c) = frame.project(pt.x, pt.y).filter(|c| frame.plot.contains(*c)) {
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
fn line_path(frame: &Frame, p: &Prepared) -> String {
    let mut pts: Vec<Option<Pt>> = Vec::with_capacity(p.points.len() * 2);
    let mut prev: Option<Point> = None;
    for point in &p.points {
        if let (SeriesKind::Step, Some(a), Some(b)) = (p.series.kind, prev, point) {
            pts.push(frame.project(b.x, a.y)); // hold y until the next x
        }
        pts.push(point.and_then(|pt| frame.project(pt.x, pt.y)));
        prev = *point;
    }
    let mut d = String::new();
    for run in path::clip_polyline(&pts, &frame.plot) {
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
fn error_bars(frame: &Frame, points: &[Option<Point>]) -> String {
    let mut d = String::new();
    for p in points.iter().flatten() {
        if p.y_low.is_none() && p.y_high.is_none() {
            continue;
        }
        let (lo, hi) = (p.y_low.unwrap_or(p.y), p.y_high.unwrap_or(p.y));
        let (Some(a), Some(b)) = (frame.project(p.x, lo), frame.project(p.x, hi)) else {
            continue;
        };
        let Some((a, b)) = path::clip_segment(a, b, &frame.plot) else {
            continue;
        };
        let _ = write!(d, "M{} {}V{}", num(a.0), num(a.1), num(b.1));
        for (end, raw) in [(a, lo), (b, hi)] {
            let capped = raw != p.y && frame.py(raw) == Some(end.1);
            if capped {
                let _ = write!(d, "M{} {}h{}", num(end.0 - CAP_HALF), num(end.1), num(2.0 * CAP_HALF));
            }
        }
    }
    d
}

fn kind_name(kind: SeriesKind) -> &'static str {
    match kind {
        SeriesKind::Line => "line",
        SeriesKind::Step => "step",
        SeriesKind::Markers => "markers",
        SeriesKind::Reference => "reference",
    }
}

pub(crate) fn stroke_attrs(out: &mut String, s: &Style, width: f64) {
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

pub(crate) fn marker_attrs(out: &mut String, s: &Style) {
    if s.hollow {
        let _ = write!(out, " fill=\"#ffffff\" stroke=\"{}\" stroke-width=\"1.5\"", s.color);
    } else {
        let _ = write!(out, " fill=\"{}\"", s.color);
    }
}

/// Appends one closed marker outline centred on `c`.
pub(crate) fn marker_path(d: &mut String, marker: Marker, c: Pt, r: f64) {
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
