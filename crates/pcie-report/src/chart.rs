//! The chart data model: plain data that model, bench and pmu code fill in ([`Chart::to_svg`]
//! renders it, in the svg module).

/// A 2-D chart: a title, two axes and any number of series drawn in order (later on top).
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

/// One axis. `min`/`max` pin the shown range; `None` lets the data choose it (rounded outward to
/// nice numbers, so tick labels land on the ends).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// What is measured, with its unit, e.g. "Transfer size (B)".
    pub label: String,
    pub scale: Scale,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl Axis {
    /// A linear axis with an automatic range.
    pub fn linear(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            scale: Scale::Linear,
            min: None,
            max: None,
        }
    }

    /// A base-10 logarithmic axis with an automatic range; values ≤ 0 cannot be shown and are skipped.
    pub fn log10(label: impl Into<String>) -> Self {
        Self {
            scale: Scale::Log10,
            ..Self::linear(label)
        }
    }

    /// Pins both ends, e.g. `0..4096` B so the 256 B saw-tooth lines up with the sweep.
    pub fn with_range(self, min: f64, max: f64) -> Self {
        Self {
            min: Some(min),
            max: Some(max),
            ..self
        }
    }
}

/// How values map to positions along an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Decades are equally spaced; for sizes, latencies and CDF tails spanning orders of magnitude.
    Log10,
}

/// A named sequence of points drawn in one style.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
    pub kind: SeriesKind,
}

impl Series {
    /// A measured or modelled curve.
    pub fn line(name: impl Into<String>, points: Vec<Point>) -> Self {
        Self::new(name, points, SeriesKind::Line)
    }

    /// A step curve (holds each y until the next x), for CDFs.
    pub fn step(name: impl Into<String>, points: Vec<Point>) -> Self {
        Self::new(name, points, SeriesKind::Step)
    }

    /// Unconnected points, e.g. latency per size with error bars.
    pub fn markers(name: impl Into<String>, points: Vec<Point>) -> Self {
        Self::new(name, points, SeriesKind::Markers)
    }

    /// A thin dashed grey curve to compare against, such as a line rate or a model.
    pub fn reference(name: impl Into<String>, points: Vec<Point>) -> Self {
        Self::new(name, points, SeriesKind::Reference)
    }

    fn new(name: impl Into<String>, points: Vec<Point>, kind: SeriesKind) -> Self {
        Self {
            name: name.into(),
            points,
            kind,
        }
    }
}

/// One data point. `y_low`/`y_high` (either or both) draw an error bar, e.g. min and p95 latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub y_low: Option<f64>,
    pub y_high: Option<f64>,
}

impl Point {
    /// A point without an error bar.
    pub fn new(x: f64, y: f64) -> Self {
        Self {
            x,
            y,
            y_low: None,
            y_high: None,
        }
    }

    /// A point with an error bar from `y_low` to `y_high`.
    pub fn with_error(x: f64, y: f64, y_low: f64, y_high: f64) -> Self {
        Self {
            x,
            y,
            y_low: Some(y_low),
            y_high: Some(y_high),
        }
    }
}

/// How a series is drawn; styles also vary by dash, width and marker so charts survive greyscale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// Connected points (with markers when there are few enough to tell apart).
    Line,
    /// Connected with horizontal-then-vertical steps, for CDFs.
    Step,
    /// Points only.
    Markers,
    /// Thin, dashed, grey: context such as a line rate or a model, not a measurement.
    Reference,
}
