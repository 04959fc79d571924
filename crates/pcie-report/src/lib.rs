//! Charts (SVG) shared by model, bench and pmu output.
//!
//! Callers describe a chart as plain data ([`Chart`], [`Axis`], [`Series`], [`Point`]) and call
//! [`Chart::to_svg`]; layout, ticks, styles and escaping are this crate's business, so every
//! pcieperf chart looks the same and stays readable in greyscale.
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
mod chart;
mod html;
mod path;
mod style;
mod svg;

pub use chart::{Axis, Chart, Point, Scale, Series, SeriesKind};
pub use html::{Report, Section, TableSection};
pub use svg::escape;
