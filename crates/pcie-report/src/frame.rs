//! The plot frame: ranges both axes, places the plot rectangle on the canvas, maps data to pixels,
//! and draws the grid, the axes with their ticks and labels.

use std::fmt::Write;

use crate::axis::{self, Fit, Ticked};
use crate::canvas::{
    FONT, FRAME, GRID, GRID_MINOR, LABEL_FONT, LEGEND_GAP, LEGEND_SAMPLE, MUTED, PAD, PLOT_BOTTOM, PLOT_TOP, TEXT,
    TICK_LEN, WIDTH,
};
use crate::chart::{Chart, Scale};
use crate::markup::{escape, num, text_width};
use crate::path::{Pt, Rect};
use crate::prepared::Prepared;

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
pub(crate) struct Frame {
    pub(crate) plot: Rect,
    x: Ticked,
    y: Ticked,
}

impl Frame {
    /// Ranges both axes and places the plot: y ticks first, since their labels set the left
    /// margin and so the room for x ticks; the legend column takes what its names need
    /// (`legend_text_w`, the widest).
    pub(crate) fn layout(chart: &Chart, prepared: &[Prepared], legend_text_w: f64) -> Self {
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

    pub(crate) fn px(&self, v: f64) -> Option<f64> {
        let f = self.x.fraction(v)?;
        Some(self.plot.x0 + f * (self.plot.x1 - self.plot.x0))
    }

    pub(crate) fn py(&self, v: f64) -> Option<f64> {
        let f = self.y.fraction(v)?;
        Some(self.plot.y1 - f * (self.plot.y1 - self.plot.y0))
    }

    /// Pixel position of a data point, which may lie outside the plot (lines are clipped to it);
    /// `None` if the scales cannot place it or it is too far out to compute with.
    pub(crate) fn project(&self, x: f64, y: f64) -> Option<Pt> {
        let p = (self.px(x)?, self.py(y)?);
        (p.0.is_finite() && p.1.is_finite()).then_some(p)
    }

    pub(crate) fn grid(&self, out: &mut String) {
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

    pub(crate) fn axes(&self, out: &mut String, x_label: &str, y_label: &str) {
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
}

/// Labelled and decade ticks are full length; unlabelled minor ticks are short.
fn tick_len(t: &axis::Tick) -> f64 {
    if t.major || t.label.is_some() {
        TICK_LEN
    } else {
        TICK_LEN * 0.6
    }
}
