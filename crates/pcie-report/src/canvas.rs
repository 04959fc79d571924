//! The fixed canvas every chart is drawn on: its size, the plot's top and bottom, margins, font
//! sizes, legend geometry and the colours of text and chart furniture (series colours are
//! [`crate::style`]'s).

pub(crate) const WIDTH: f64 = 900.0;
pub(crate) const HEIGHT: f64 = 520.0;
pub(crate) const PLOT_TOP: f64 = 48.0;
pub(crate) const PLOT_BOTTOM: f64 = HEIGHT - 62.0;
pub(crate) const PAD: f64 = 14.0;
pub(crate) const FONT: f64 = 12.0;
pub(crate) const LABEL_FONT: f64 = 13.0;
pub(crate) const TITLE_FONT: f64 = 16.0;
pub(crate) const TICK_LEN: f64 = 5.0;
pub(crate) const LEGEND_GAP: f64 = 18.0;
pub(crate) const LEGEND_SAMPLE: f64 = 30.0;
pub(crate) const LEGEND_ROW: f64 = 20.0;
pub(crate) const LEGEND_MIN_ROW: f64 = 13.0;
pub(crate) const LEGEND_MAX_CHARS: usize = 32;
pub(crate) const CAP_HALF: f64 = 3.5;
pub(crate) const MARKER_RADIUS: f64 = 3.5;
/// Curves are simplified to this many pixels; far below what the eye or a 2-decimal number resolves.
pub(crate) const SIMPLIFY_PX: f64 = 0.1;

pub(crate) const TEXT: &str = "#222222";
pub(crate) const MUTED: &str = "#555555";
pub(crate) const FRAME: &str = "#888888";
pub(crate) const GRID: &str = "#e3e3e3";
pub(crate) const GRID_MINOR: &str = "#f1f1f1";
