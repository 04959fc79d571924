//! Charts over one swept parameter: bandwidth and latency vs transfer size (the paper's
//! Figures 4 and 5, with the model's curves), vs window, and vs host or device offset.

use super::labels::{bytes_label, group_by, group_count, sorted};
use super::{ModelLink, RunChart, ASSUMED_LINK};
use crate::params::TestKind;
use crate::results::{BandwidthRow, LatencyRow, RowKey};
use pcie_model::{read_bound, stream, Ethernet, LinkConfig, Mode, Op, Picos};
use pcie_report::{Axis, Chart, Point, Series};

fn op_of(test: TestKind) -> Option<(Op, &'static str)> {
    match test {
        TestKind::BwRd => Some((Op::Rd, "model read")),
        TestKind::BwWr => Some((Op::Wr, "model write")),
        TestKind::BwRdWr => Some((Op::RdWr, "model read/write")),
        _ => None,
    }
}

fn model_gbps(link: &LinkConfig, op: Op, size: u32) -> Option<f64> {
    stream(link, op, size, 0)
        .ok()
        .map(|t| t.payload.0)
        .filter(|v| v.is_finite())
}

/// Bandwidth vs transfer size, the model's curves and the 40GbE line rate (the paper's Figure 4).
pub(super) fn size_sweep(
    base: &str,
    rows: &[BandwidthRow],
    latency: Option<&[LatencyRow]>,
    link: &ModelLink,
) -> Option<RunChart> {
    let order = [TestKind::BwRd, TestKind::BwWr, TestKind::BwRdWr];
    let mut series = Vec::new();
    let mut models = Vec::new();
    let mut explain = Vec::new();
    let mut sizes: Vec<u32> = rows.iter().map(|r| r.key.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for test in order {
        let mine: Vec<&BandwidthRow> = rows.iter().filter(|r| r.key.test == test).collect();
        if mine.is_empty() {
            continue;
        }
        let pts = sorted(mine.iter().map(|r| Point::new(r.key.size as f64, r.bw_gbps)).collect());
        series.push(Series::line(test.csv_name(), pts));
        let Some((op, model_name)) = op_of(test) else { continue };
        let curve: Vec<Point> = sizes
            .iter()
            .filter_map(|&s| model_gbps(&link.cfg, op, s).map(|v| Point::new(s as f64, v)))
            .collect();
        models.push(Series::reference(model_name, curve));
        if let Some(largest) = mine.iter().max_by_key(|r| r.key.size) {
            if let Some(m) = model_gbps(&link.cfg, op, largest.key.size).filter(|m| *m > 0.0) {
                explain.push(format!(
                    "{} {:.0}% ({:.1} of {:.1} Gb/s at {} B)",
                    test.csv_name(),
                    100.0 * largest.bw_gbps / m,
                    largest.bw_gbps,
                    m,
                    largest.key.size
                ));
            }
        }
    }
    if series.is_empty() {
        return None;
    }
    let eth = Ethernet { gbps: 40 };
    let eth_pts: Vec<Point> = sizes
        .iter()
        .filter_map(|&s| eth.line_for_transfer(Mode::Spec, s).map(|g| Point::new(s as f64, g.0)))
        .collect();
    series.extend(models);
    series.push(Series::reference("40GbE line rate", eth_pts));
    let mut notes = Vec::new();
    if !explain.is_empty() {
        notes.push(format!(
            "Explain: fraction of the model reached: {}.",
            explain.join(", ")
        ));
    }
    notes.extend(littles_law(rows, latency, &link.cfg));
    notes.push(format!(
        "Model: {}{}.",
        link.cfg,
        if link.assumed {
            format!(
                " (assumed: the directory records no link; {} used {ASSUMED_LINK})",
                link.whose
            )
        } else {
            " (from run.json)".into()
        }
    ));
    Some(RunChart {
        rank: 0,
        name: base.to_string(),
        heading: "Bandwidth vs transfer size".into(),
        chart: Chart {
            title: format!("DMA bandwidth vs transfer size ({base})"),
            x: Axis::linear("Transfer size (B)"),
            y: Axis::linear("Bandwidth (Gb/s)"),
            series,
        },
        notes,
    })
}

/// Little's law for reads at the largest size: how many read requests must be in flight, at the
/// measured median read latency of that size, for the link to reach the model.
fn littles_law(rows: &[BandwidthRow], latency: Option<&[LatencyRow]>, link: &LinkConfig) -> Option<String> {
    let bw = rows
        .iter()
        .filter(|r| r.key.test == TestKind::BwRd)
        .max_by_key(|r| r.key.size)?;
    let size = bw.key.size;
    let lat = latency?
        .iter()
        .find(|r| r.key.test == TestKind::LatRd && r.key.size == size)?;
    let b = read_bound(link, size, 0, Picos::from_nanos(lat.med_ns), None).ok()?;
    if !(b.link.0 > 0.0 && b.outstanding_needed.is_finite()) {
        return None;
    }
    Some(format!(
        "Explain (Little's law): LAT_DMA_RD's median at {size} B is {:.0} ns; reaching the model's {:.1} Gb/s needs {:.1} read requests in flight ({} per transfer), the measured {:.1} Gb/s implies {:.1}; the link's tags allow {}.",
        lat.med_ns,
        b.link.0,
        b.outstanding_needed,
        b.requests_per_transfer,
        bw.bw_gbps,
        b.outstanding_needed * bw.bw_gbps / b.link.0,
        b.outstanding
    ))
}

/// Median latency vs transfer size with min and p95 as error bars (Figure 5).
pub(super) fn latency_sizes(base: &str, rows: &[LatencyRow]) -> Option<RunChart> {
    let full = |r: &LatencyRow| {
        format!(
            "{} {} {}",
            r.key.test.csv_name(),
            r.key.cache.csv_name(),
            bytes_label(r.key.window)
        )
    };
    // Name series by test alone when each test has one cache state and window.
    let by_test = group_count(rows, |r| r.key.test.csv_name().to_string()) == group_count(rows, full);
    let series: Vec<Series> = group_by(rows, full)
        .into_iter()
        .map(|(label, rs)| {
            let label = if by_test {
                rs[0].key.test.csv_name().to_string()
            } else {
                label
            };
            let pts = rs
                .iter()
                .map(|r| Point::with_error(r.key.size as f64, r.med_ns, r.min_ns, r.p95_ns))
                .collect();
            Series::markers(label, sorted(pts))
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(RunChart {
        rank: 1,
        name: base.to_string(),
        heading: "Latency vs transfer size".into(),
        chart: Chart {
            title: format!("Latency vs transfer size ({base}): median, bars min to p95"),
            x: Axis::linear("Transfer size (B)"),
            y: Axis::linear("Latency (ns)"),
            series,
        },
        notes: vec![],
    })
}

/// A value vs window (log x), one series per cache state (and size/test when they vary).
pub(super) fn window_chart<T>(
    base: &str,
    rows: &[T],
    key: impl Fn(&T) -> &RowKey,
    value: impl Fn(&T) -> f64,
    what: (&str, &str),
) -> Option<RunChart> {
    let tests = group_count(rows, |r| key(r).test.csv_name().to_string());
    let sizes = group_count(rows, |r| key(r).size.to_string());
    let series: Vec<Series> = group_by(rows, |r| {
        let k = key(r);
        let mut l = String::new();
        if tests > 1 {
            l.push_str(k.test.csv_name());
            l.push(' ');
        }
        l.push_str(k.cache.csv_name());
        if sizes > 1 {
            l.push_str(&format!(" {} B", k.size));
        }
        l
    })
    .into_iter()
    .map(|(label, rs)| {
        Series::line(
            label,
            sorted(rs.iter().map(|r| Point::new(key(r).window as f64, value(r))).collect()),
        )
    })
    .collect();
    if series.is_empty() {
        return None;
    }
    let (heading, y) = what;
    Some(RunChart {
        rank: 3,
        name: base.to_string(),
        heading: format!("{heading} vs window"),
        chart: Chart {
            title: format!("{heading} vs window ({base})"),
            x: Axis::log10("Window (B)"),
            y: Axis::linear(y),
            series,
        },
        notes: vec![],
    })
}

/// Value vs host offset (device offset 0) and vs device offset (host offset 0), one series per
/// size: two charts.
pub(super) fn offset_charts<T>(
    base: &str,
    rows: &[T],
    key: impl Fn(&T) -> &RowKey,
    value: impl Fn(&T) -> f64,
    what: (&str, &str),
) -> Vec<RunChart> {
    let (heading, y) = what;
    let tests = group_count(rows, |r| key(r).test.csv_name().to_string());
    let caches = group_count(rows, |r| key(r).cache.csv_name().to_string());
    let mut out = Vec::new();
    type Pick = fn(&RowKey) -> (u32, u32);
    let sides: [(&str, &str, Pick); 2] = [
        ("host", "Host offset (B)", |k| (k.host_offset, k.device_offset)),
        ("device", "Device offset (B)", |k| (k.device_offset, k.host_offset)),
    ];
    for (side, x_label, pick) in sides {
        let mine: Vec<&T> = rows.iter().filter(|r| pick(key(r)).1 == 0).collect();
        // Only a sweep when this side's offset varies.
        if mine.iter().all(|r| pick(key(r)).0 == 0) {
            continue;
        }
        let series: Vec<Series> = group_by(&mine, |r| {
            let k = key(r);
            let mut l = String::new();
            if tests > 1 {
                l.push_str(k.test.csv_name());
                l.push(' ');
            }
            if caches > 1 {
                l.push_str(k.cache.csv_name());
                l.push(' ');
            }
            l.push_str(&format!("{} B", k.size));
            l
        })
        .into_iter()
        .map(|(label, rs)| {
            let mut pts: Vec<Point> = rs.iter().map(|r| Point::new(pick(key(r)).0 as f64, value(r))).collect();
            pts = sorted(pts);
            // (0, 0) is in both sweeps; keep one point per offset.
            pts.dedup_by(|a, b| a.x == b.x);
            Series::line(label, pts)
        })
        .collect();
        out.push(RunChart {
            rank: 4,
            name: format!("{base}_{side}"),
            heading: format!("{heading} vs {side} offset"),
            chart: Chart {
                title: format!("{heading} vs {side} offset ({base})"),
                x: Axis::linear(x_label),
                y: Axis::linear(y),
                series,
            },
            notes: vec![],
        });
    }
    out
}
