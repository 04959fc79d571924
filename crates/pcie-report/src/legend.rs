//! The legend: a column right of the plot (so it never hides curves that plateau at the top
//! right), one entry per series with a sample of its line and marker, long names shortened.

use std::fmt::Write;

use crate::canvas::{
    FONT, HEIGHT, LEGEND_MAX_CHARS, LEGEND_MIN_ROW, LEGEND_ROW, LEGEND_SAMPLE, MARKER_RADIUS, PLOT_TOP, TEXT,
};
use crate::marks::{marker_attrs, marker_path, stroke_attrs};
use crate::markup::{escape, num, text_width};
use crate::prepared::Prepared;

/// The legend: a column right of the plot, one entry per series in drawing order.
pub(crate) fn draw(out: &mut String, prepared: &[Prepared], x0: f64) {
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

/// The widest name the legend shows, which sets the legend column's width.
pub(crate) fn names_width(prepared: &[Prepared]) -> f64 {
    prepared
        .iter()
        .map(|p| text_width(&legend_name(&p.series.name), FONT))
        .fold(0.0, f64::max)
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
