//! Charts (SVG) and self-contained HTML reports shared by model, bench and pmu output.
//!
//! Callers describe a chart as plain data ([`Chart`], [`Axis`], [`Series`], [`Point`]) and call
//! [`Chart::to_svg`]; layout, ticks, styles and escaping are this crate's business, so every
//! pcieperf chart looks the same and stays readable in greyscale. A [`Report`] puts charts and
//! tables ([`Section`], [`TableSection`]) on one HTML page.
//!
//! Inside, rendering goes one way: the chart data (`chart`) is styled and filtered
//! (`prepared`, `style`), ranged into a plot frame (`axis`, `frame`, on the fixed `canvas`),
//! drawn as marks, legend and furniture (`marks`, `legend`, `path`), and written as text
//! (`markup`), all assembled by `svg`.
//!
//! ```
//! use pcie_report::{Axis, Chart, Point, Series};
//!
//! let chart = Chart {
//!     title: "Effective PCIe bandwidth".into(),
//!     x: Axis::linear("Transfer size (B)").with_range(0.0, 4096.0),
//!     y: Axis::linear("Bandwidth (Gb/s)"),
//!     series: vec![
//!         Series::line("read", vec![Point::new(64.0, 30.1), Point::new(4096.0, 50.2)]),
//!         Series::reference("40GbE", vec![Point::new(0.0, 40.0), Point::new(4096.0, 40.0)]),
//!     ],
//! };
//! let svg = chart.to_svg();
//! assert!(svg.contains(r#"class="series" data-name="read""#));
//! ```

mod axis;
mod canvas;
mod chart;
mod frame;
mod html;
mod legend;
mod marks;
mod markup;
mod path;
mod prepared;
mod style;
mod svg;

pub use chart::{Axis, Chart, Point, Scale, Series, SeriesKind};
pub use html::{Report, Section, TableSection};
pub use markup::escape;
