//! Series made ready to draw: each styled by its kind and rank, its points reduced to those the
//! axes' scales can place.

use crate::chart::Series;
use crate::chart::{Chart, Point, Scale, SeriesKind};
use crate::style::{self, Style};

/// A series reduced to what the axes can show: `None` marks a point that cannot be placed (a gap).
pub(crate) struct Prepared<'a> {
    pub(crate) series: &'a Series,
    pub(crate) points: Vec<Option<Point>>,
    pub(crate) style: Style,
}

/// Styles each series and drops what its axes cannot place. Data and reference series are
/// numbered separately, so adding a reference curve does not restyle the data.
pub(crate) fn prepare(chart: &Chart) -> Vec<Prepared<'_>> {
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
