//! Rendering: lays a [`Chart`] out on a fixed canvas and writes compact, deterministic SVG.
//!
//! Layout: title on top, the legend in a column right of the plot (so it never hides curves that
//! plateau at the top right), y tick labels sized to fit. Coordinates are written with at most two
//! decimals and long curves are simplified below a tenth of a pixel, so files stay small.
//!
//! Machine-readable hooks: each series is a `<g class="series" data-name="…">`, each legend entry a
//! `<g class="legend-entry" data-name="…">`, and the document has a `<title>`.

use std::fmt::Write;

use crate::canvas::{FONT, HEIGHT, LABEL_FONT, LEGEND_GAP, MUTED, PAD, TEXT, TITLE_FONT, WIDTH};
use crate::chart::Chart;
use crate::frame::Frame;
use crate::legend;
use crate::marks;
use crate::markup::{escape, num, text_width};
use crate::prepared::prepare;

impl Chart {
    /// Renders the chart as a standalone SVG document.
    ///
    /// Deterministic (same chart, same bytes) and total: odd data (NaN, ∞, ≤ 0 on a log axis, no
    /// points at all) is skipped or noted on the chart, never a panic and never `NaN` in the output.
    pub fn to_svg(&self) -> String {
        render(self)
    }
}

fn render(chart: &Chart) -> String {
    let prepared = prepare(chart);
    let frame = Frame::layout(chart, &prepared, legend::names_width(&prepared));
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
        marks::draw(&mut out, &frame, p);
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
    legend::draw(&mut out, &prepared, plot.x1 + LEGEND_GAP);
    out.push_str("\n</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use crate::canvas::{HEIGHT, PLOT_BOTTOM, PLOT_TOP, WIDTH};
    use crate::chart::{Axis, Chart, Point, Series};

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
    fn text_is_escaped_everywhere() {
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
