//! Series styles: colour-blind-safe colours (Okabe–Ito) plus dash, width and marker variation so
//! series stay distinguishable in greyscale print.

use crate::chart::SeriesKind;

/// Okabe–Ito colours in an order that keeps neighbours far apart; yellow is left out (unreadable on
/// white).
const COLORS: [&str; 7] = [
    "#0072B2", // blue
    "#D55E00", // vermillion
    "#009E73", // bluish green
    "#CC79A7", // reddish purple
    "#E69F00", // orange
    "#56B4E9", // sky blue
    "#000000", // black
];

/// Dash pattern and width go together: dotted lines need more weight to read as a line.
const STROKES: [(&str, f64); 5] = [
    ("", 2.25),
    ("7 3", 2.0),
    ("1.5 2.5", 2.5),
    ("9 3 2 3", 1.75),
    ("4 2", 2.0),
];

const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
];

/// Long sparse dashes, unlike any data-series pattern, in greys lighter than the data.
const REFERENCES: [(&str, &str); 3] = [("#777777", "10 5"), ("#999999", "2 4"), ("#555555", "12 4 2 4")];

/// A line series with at most this many points also gets markers (more would blur into a band).
const MAX_POINTS_WITH_MARKERS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
}

/// How one series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Style {
    pub color: &'static str,
    /// Stroke width of the connecting line; `None` draws no line.
    pub width: Option<f64>,
    /// SVG `stroke-dasharray`, empty for solid.
    pub dash: &'static str,
    pub marker: Option<Marker>,
    /// Markers drawn as outlines (the second round through the shapes).
    pub hollow: bool,
}

/// The style of a series; `index` counts data series (line, step, markers) and reference series
/// separately, so adding a reference curve does not restyle the data.
pub(crate) fn style(kind: SeriesKind, index: usize, points: usize) -> Style {
    if kind == SeriesKind::Reference {
        let (color, dash) = REFERENCES[index % REFERENCES.len()];
        return Style {
            color,
            width: Some(1.25),
            dash,
            marker: None,
            hollow: false,
        };
    }
    let (dash, width) = STROKES[index % STROKES.len()];
    let marker = MARKERS[index % MARKERS.len()];
    let hollow = (index / MARKERS.len()) % 2 == 1;
    let color = COLORS[index % COLORS.len()];
    match kind {
        SeriesKind::Markers => Style {
            color,
            width: None,
            dash: "",
            marker: Some(marker),
            hollow,
        },
        _ => Style {
            color,
            width: Some(width),
            dash,
            marker: (kind == SeriesKind::Line && points <= MAX_POINTS_WITH_MARKERS).then_some(marker),
            hollow,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_series_differ_in_more_than_colour() {
        let styles: Vec<Style> = (0..5).map(|i| style(SeriesKind::Line, i, 10)).collect();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert_ne!(a.color, b.color);
                assert_ne!(a.dash, b.dash);
                assert_ne!(a.marker, b.marker);
            }
        }
    }

    #[test]
    fn dense_lines_have_no_markers_and_references_are_thin_dashed_grey() {
        assert_eq!(style(SeriesKind::Line, 0, 4096).marker, None);
        assert_eq!(style(SeriesKind::Step, 0, 10).marker, None);
        assert!(style(SeriesKind::Markers, 0, 4096).marker.is_some());
        let r = style(SeriesKind::Reference, 0, 2);
        assert!(r.width.unwrap() < style(SeriesKind::Line, 0, 2).width.unwrap());
        assert!(!r.dash.is_empty() && r.color.starts_with("#777"));
    }
}
