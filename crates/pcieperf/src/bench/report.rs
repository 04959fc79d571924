//! `pcieperf bench report`: draw a run directory (ours or an original pcie-bench data
//! directory) as charts next to the model — one self-contained HTML page, SVG files on request,
//! or a short text summary — and, with `--compare`, overlay other runs and tabulate how far
//! each is from the first.

use super::compare::{compare, Comparison};
use crate::error::CliError;
use crate::output::{write_atomically, Format, Table};
use clap::Args;
use pcie_bench::{BandwidthRow, CacheState, CdfSection, LatencyRow, ResultData, RunData, RunInfo, TestKind};
use pcie_model::{
    read_bound, stream, CplSplit, Ethernet, FlitMode, Generation, LinkConfig, LinkParams, Mode, Op, Picos,
};
use pcie_report::{Axis, Chart, Point, Report, Scale, Section, Series, SeriesKind, TableSection};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directory, or an original pcie-bench data directory
    dir: PathBuf,
    /// Write a self-contained HTML report (inline SVG, no network) to this file
    #[arg(long)]
    html: Option<PathBuf>,
    /// Also write each chart as <name>.svg into this directory (created if missing)
    #[arg(long)]
    svg_dir: Option<PathBuf>,
    /// Overlay this run on DIR's charts and list its per-point differences from DIR (repeatable)
    #[arg(long, value_name = "DIR2")]
    compare: Vec<PathBuf>,
    /// Printed summary: table for people; csv (the point differences, needs --compare) or json
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

/// How many of the largest differences the text summary lists (the HTML and CSV list all).
const TEXT_DIFFERENCES: usize = 15;

/// The link pcie-bench's data was measured on when a directory does not say (no run.json).
const ASSUMED_LINK: &str = "Gen3 x8, MPS 256, MRRS 512";

/// The model's link for a run, and whether it was assumed rather than recorded.
struct ModelLink {
    cfg: LinkConfig,
    assumed: bool,
}

fn link_from_json(v: &serde_json::Value) -> Option<LinkConfig> {
    let num = |k: &str| v.get(k)?.as_u64().and_then(|n| u32::try_from(n).ok());
    let text = |k: &str| v.get(k)?.as_str();
    let mode = match text("mode")? {
        "spec" => Mode::Spec,
        "pcie-model" => Mode::PcieModel,
        _ => return None,
    };
    let p = LinkParams {
        gen: text("gen")?.parse::<Generation>().ok()?,
        lanes: num("lanes")?,
        flit: if v.get("flit")?.as_bool()? {
            FlitMode::On
        } else {
            FlitMode::Off
        },
        mps: num("mps")?,
        mrrs: num("mrrs")?,
        rcb: num("rcb")?,
        cpl_split: match text("cpl_split")? {
            "mps" => CplSplit::Mps,
            "rcb" => CplSplit::Rcb,
            _ => return None,
        },
        addr_bits: num("addr_bits")?,
        ecrc: v.get("ecrc")?.as_bool()?,
        tlp_align: if mode == Mode::Spec { num("tlp_align") } else { None },
        tag_bits: num("tag_bits")?,
        mode,
    };
    LinkConfig::new(&p).ok()
}

fn model_link(info: Option<&RunInfo>) -> ModelLink {
    if let Some(cfg) = info.and_then(|i| link_from_json(&i.link)) {
        return ModelLink { cfg, assumed: false };
    }
    ModelLink {
        cfg: LinkConfig::new(&LinkParams::default()).expect("pcie-bench's default link is valid"),
        assumed: true,
    }
}

/// One chart with its file name stem, heading and explain lines.
struct Drawn {
    /// Position in the report: size sweeps first (the paper's figure order), offsets last.
    rank: u8,
    name: String,
    heading: String,
    chart: Chart,
    notes: Vec<String>,
}

fn cache_name(c: CacheState) -> &'static str {
    c.csv_name()
}

/// Groups items by a label, keeping the order in which labels first appear.
fn group_by<T, F: Fn(&T) -> String>(items: &[T], label: F) -> Vec<(String, Vec<&T>)> {
    let mut groups: Vec<(String, Vec<&T>)> = Vec::new();
    for it in items {
        let l = label(it);
        match groups.iter_mut().find(|(g, _)| *g == l) {
            Some((_, v)) => v.push(it),
            None => groups.push((l, vec![it])),
        }
    }
    groups
}

fn sorted(mut pts: Vec<Point>) -> Vec<Point> {
    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    pts
}

/// "8 KB", "64 MB", "1.5 MB": a window size as people read it.
fn bytes_label(b: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")];
    for (scale, unit) in UNITS {
        if b >= scale {
            let v = b as f64 / scale as f64;
            return if v.fract() == 0.0 {
                format!("{v:.0} {unit}")
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{b} B")
}

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
fn size_sweep(base: &str, rows: &[BandwidthRow], latency: Option<&[LatencyRow]>, link: &ModelLink) -> Option<Drawn> {
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
            " (assumed: the directory records no link; pcie-bench's NFP-6000 runs used Gen3 x8, MPS 256, MRRS 512)"
        } else {
            " (from run.json)"
        }
    ));
    Some(Drawn {
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

fn latency_label(r: &LatencyRow, tests: usize) -> String {
    if tests > 1 {
        format!("{} {}", r.key.test.csv_name(), cache_name(r.key.cache))
    } else {
        cache_name(r.key.cache).to_string()
    }
}

/// Median latency vs transfer size with min and p95 as error bars (Figure 5).
fn latency_sizes(base: &str, rows: &[LatencyRow]) -> Option<Drawn> {
    let full = |r: &LatencyRow| {
        format!(
            "{} {} {}",
            r.key.test.csv_name(),
            cache_name(r.key.cache),
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
    Some(Drawn {
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

fn group_count<T, F: Fn(&T) -> String>(items: &[T], label: F) -> usize {
    group_by(items, label).len()
}

/// The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `v` (> 0).
fn nice_ceil(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|x| *x >= v)
        .unwrap_or(10.0 * p)
}

/// The first x at which a CDF reaches `q`.
fn quantile(points: &[(f64, f64)], q: f64) -> Option<f64> {
    points.iter().find(|p| p.1 >= q).or(points.last()).map(|p| p.0)
}

/// CDFs, one step series per section, named from the matching latency rows (Figure 6).
fn cdf_chart(base: &str, sections: &[CdfSection], rows: Option<&[LatencyRow]>) -> Option<Drawn> {
    if sections.is_empty() {
        return None;
    }
    let named = rows.filter(|r| r.len() == sections.len());
    let tests = named.map_or(0, |r| group_count(r, |x| x.key.test.csv_name().to_string()));
    let mut long_tail = false;
    let series = sections
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if let (Some(m), Some(t)) = (quantile(&s.points, 0.5), quantile(&s.points, 0.999)) {
                long_tail |= m > 0.0 && t / m > 3.0;
            }
            let name = match named {
                Some(r) => {
                    let r = &r[i];
                    format!(
                        "{} {} {} B",
                        latency_label(r, tests),
                        bytes_label(r.key.window),
                        r.key.size
                    )
                }
                None => format!("section {}", i + 1),
            };
            Series::step(name, s.points.iter().map(|&(x, y)| Point::new(x, y)).collect())
        })
        .collect();
    let label = "Latency (ns)";
    // On a linear axis, a few outliers far out would squash every curve to the left: end the
    // axis past the largest 99.9th percentile and say so.
    let p999 = sections
        .iter()
        .filter_map(|s| quantile(&s.points, 0.999))
        .fold(0.0_f64, f64::max);
    let largest = sections
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0_f64, f64::max);
    let cut = (!long_tail && p999 > 0.0 && largest > nice_ceil(p999 * 1.2)).then(|| nice_ceil(p999 * 1.2));
    let mut notes = Vec::new();
    if long_tail {
        notes.push("Log x axis: the 99.9th percentile is more than 3× the median.".to_string());
    }
    if let Some(end) = cut {
        notes.push(format!(
            "The x axis ends at {end} ns, past every 99.9th percentile; the slowest samples reach {largest:.0} ns."
        ));
    }
    Some(Drawn {
        rank: 2,
        name: base.to_string(),
        heading: "Latency CDF".into(),
        chart: Chart {
            title: format!("Latency CDF ({base})"),
            x: match (long_tail, cut) {
                (true, _) => Axis::log10(label),
                (false, Some(end)) => Axis::linear(label).with_range(0.0, end),
                (false, None) => Axis::linear(label),
            },
            y: Axis::linear("Cumulative fraction").with_range(0.0, 1.0),
            series,
        },
        notes,
    })
}

/// A value vs window (log x), one series per cache state (and size/test when they vary).
fn window_chart<T>(
    base: &str,
    rows: &[T],
    key: impl Fn(&T) -> &pcie_bench::RowKey,
    value: impl Fn(&T) -> f64,
    what: (&str, &str),
) -> Option<Drawn> {
    let tests = group_count(rows, |r| key(r).test.csv_name().to_string());
    let sizes = group_count(rows, |r| key(r).size.to_string());
    let series: Vec<Series> = group_by(rows, |r| {
        let k = key(r);
        let mut l = String::new();
        if tests > 1 {
            l.push_str(k.test.csv_name());
            l.push(' ');
        }
        l.push_str(cache_name(k.cache));
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
    Some(Drawn {
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
fn offset_charts<T>(
    base: &str,
    rows: &[T],
    key: impl Fn(&T) -> &pcie_bench::RowKey,
    value: impl Fn(&T) -> f64,
    what: (&str, &str),
) -> Vec<Drawn> {
    let (heading, y) = what;
    let tests = group_count(rows, |r| key(r).test.csv_name().to_string());
    let caches = group_count(rows, |r| cache_name(key(r).cache).to_string());
    let mut out = Vec::new();
    type Pick = fn(&pcie_bench::RowKey) -> (u32, u32);
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
                l.push_str(cache_name(k.cache));
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
        out.push(Drawn {
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

fn latency_rows<'a>(run: &'a RunData, base: &str) -> Option<&'a [LatencyRow]> {
    match run.get(base)? {
        ResultData::Latency(r) => Some(r),
        _ => None,
    }
}

/// Every chart the run's data supports, in file order; and the files nothing was drawn for.
fn charts(run: &RunData, link: &ModelLink) -> (Vec<Drawn>, Vec<String>) {
    const BW: (&str, &str) = ("Bandwidth", "Bandwidth (Gb/s)");
    const LAT: (&str, &str) = ("Median latency", "Median latency (ns)");
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for f in &run.files {
        let b = f.base.as_str();
        let before = out.len();
        match &f.data {
            ResultData::Bandwidth(rows) if b == "bw_dma_sz_sweep" => {
                out.extend(size_sweep(b, rows, latency_rows(run, "lat_dma_sizes"), link))
            }
            ResultData::Bandwidth(rows) if b.contains("_win_sweep") => {
                out.extend(window_chart(b, rows, |r| &r.key, |r| r.bw_gbps, BW))
            }
            ResultData::Bandwidth(rows) if b.contains("_off_") => {
                out.extend(offset_charts(b, rows, |r| &r.key, |r| r.bw_gbps, BW))
            }
            ResultData::Latency(rows) if b.contains("_sizes") => out.extend(latency_sizes(b, rows)),
            ResultData::Latency(rows) if b.contains("_sweep_") => {
                out.extend(window_chart(b, rows, |r| &r.key, |r| r.med_ns, LAT))
            }
            ResultData::Latency(rows) if b.contains("_off_") => {
                out.extend(offset_charts(b, rows, |r| &r.key, |r| r.med_ns, LAT))
            }
            ResultData::Cdf(sections) => {
                let rows = b.strip_suffix("_cdf").and_then(|l| latency_rows(run, l));
                out.extend(cdf_chart(b, sections, rows))
            }
            _ => {}
        }
        if out.len() == before {
            skipped.push(b.to_string());
        }
    }
    out.sort_by_key(|d| d.rank);
    (out, skipped)
}

fn dir_name(dir: &Path) -> String {
    dir.canonicalize()
        .ok()
        .as_deref()
        .and_then(Path::file_name)
        .or_else(|| dir.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

fn description(run: &RunData, link: &ModelLink) -> Vec<String> {
    match &run.info {
        Some(i) => {
            let mut d = vec![format!(
                "{} {} run of suite \"{}\" on backend {}, seed {}, started {}{}.",
                i.tool,
                i.version,
                i.suite,
                i.backend.name,
                i.seed,
                i.start_time,
                match &i.end_time {
                    Some(t) => format!(", finished {t}"),
                    None => " (interrupted: no end time)".into(),
                }
            )];
            if let Some(desc) = i.backend.description.as_object() {
                for (role, v) in desc {
                    if let Some(text) = v.get("description").and_then(|t| t.as_str()) {
                        d.push(format!("{role}: {text}"));
                    }
                }
            }
            d.push(format!(
                "Link: {}{}. NUMA {}, IOMMU {:?}. Started on {} ({}, {} CPUs, kernel {}).",
                link.cfg,
                match (link.assumed, i.link.is_null()) {
                    (false, _) => "",
                    (true, true) => " (assumed: run.json records no link)",
                    (true, false) => " (assumed: run.json's link not understood)",
                },
                i.numa,
                i.iommu,
                i.host.hostname,
                i.host.cpu_model,
                i.host.cpus,
                i.host.kernel
            ));
            d.push(format!("Command line: {}", i.command_line.join(" ")));
            d
        }
        None => vec![
            format!(
                "pcie-bench data directory {} (no run.json). The model curves assume the link of pcie-bench's NFP-6000 runs, {ASSUMED_LINK}: {}.",
                dir_name(&run.dir),
                link.cfg
            ),
        ],
    }
}

fn load(dir: &Path) -> Result<RunData, CliError> {
    if !dir.is_dir() {
        return Err(CliError::Usage(format!(
            "{}: not a directory (expected a run directory or a pcie-bench data directory)",
            dir.display()
        )));
    }
    let data = RunData::load(dir).map_err(|e| CliError::Usage(e.to_string()))?;
    if data.info.is_none() && data.files.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: not a run directory or pcie-bench data directory (no run.json and no result CSV files)",
            dir.display()
        )));
    }
    Ok(data)
}

/// Runs are named A, B, C, ... in legends; the description says which directory each is.
fn run_letter(i: usize) -> String {
    char::from(b'A' + (i % 26) as u8).to_string()
}

/// Adds the compared runs' measured series to the first run's charts of the same name, each
/// series prefixed with its run's letter; model and line-rate curves stay the first run's.
fn overlay(drawn: &mut [Drawn], others: &[Vec<Drawn>]) {
    let measured = |s: &Series| s.kind != SeriesKind::Reference;
    for d in drawn.iter_mut() {
        let matches: Vec<(usize, &Drawn)> = others
            .iter()
            .enumerate()
            .filter_map(|(i, o)| {
                o.iter()
                    .find(|x| x.name == d.name && x.heading == d.heading)
                    .map(|x| (i, x))
            })
            .collect();
        if matches.is_empty() {
            continue;
        }
        let (mine, refs): (Vec<Series>, Vec<Series>) =
            std::mem::take(&mut d.chart.series).into_iter().partition(measured);
        let tag = |letter: &str, s: &Series| Series {
            name: format!("{letter}: {}", s.name),
            ..s.clone()
        };
        d.chart.series = mine.iter().map(|s| tag("A", s)).collect();
        for (i, o) in matches {
            let letter = run_letter(i + 1);
            d.chart
                .series
                .extend(o.chart.series.iter().filter(|s| measured(s)).map(|s| tag(&letter, s)));
            // A run with a longer tail (a log axis, or a later end) widens the shared axis, and
            // its notes say why.
            if wider(&o.chart.x, &d.chart.x) {
                d.chart.x = o.chart.x.clone();
                d.notes = o.notes.iter().map(|n| format!("{letter}: {n}")).collect();
            }
        }
        d.chart.series.extend(refs);
    }
}

/// True when axis `a` shows more than `b`: logarithmic against linear, or a linear one that
/// ends later (or not at all).
fn wider(a: &Axis, b: &Axis) -> bool {
    match (a.scale, b.scale) {
        (Scale::Log10, Scale::Linear) => true,
        (Scale::Linear, Scale::Linear) => match (a.max, b.max) {
            (None, Some(_)) => true,
            (Some(x), Some(y)) => x > y,
            _ => false,
        },
        _ => false,
    }
}

fn html_table(id: String, heading: String, notes: Vec<String>, t: &Table) -> TableSection {
    let (columns, rows) = t.human_cells();
    TableSection {
        id,
        heading,
        columns,
        rows,
        notes,
    }
}

fn comparison_tables(c: &Comparison, letter: &str) -> Vec<TableSection> {
    let mut out = vec![html_table(
        format!("compare-{letter}-summary"),
        format!("{letter} vs A: mean absolute difference per file, test and cache state"),
        vec![format!(
            "{} compared with {}: differences are ({letter} − A) / A. {} points matched, {} without a counterpart.",
            c.other,
            c.first,
            c.differences.len(),
            c.unmatched
        )],
        &c.summary_table(),
    )];
    if !c.cdfs.is_empty() {
        out.push(html_table(
            format!("compare-{letter}-cdf"),
            format!("{letter} vs A: latency CDFs (Kolmogorov–Smirnov distance)"),
            vec![],
            &c.cdf_table(),
        ));
    }
    out.push(html_table(
        format!("compare-{letter}-points"),
        format!("{letter} vs A: every point, largest difference first"),
        vec![],
        &c.difference_table(None),
    ));
    out
}

fn comparison_text(c: &Comparison, letter: &str) -> String {
    let mut text = format!(
        "\nCompared: {letter} = {} against A = {}; differences are ({letter} − A) / A. {} points matched, {} without a counterpart.\n\n",
        c.other,
        c.first,
        c.differences.len(),
        c.unmatched
    );
    text.push_str(&c.summary_table().to_human());
    if !c.cdfs.is_empty() {
        text.push('\n');
        text.push_str(&c.cdf_table().to_human());
    }
    if !c.differences.is_empty() {
        text.push_str(&format!(
            "\nLargest differences ({} of {}; --html or --format csv lists all):\n",
            TEXT_DIFFERENCES.min(c.differences.len()),
            c.differences.len()
        ));
        text.push_str(&c.difference_table(Some(TEXT_DIFFERENCES)).to_human());
    }
    text
}

/// A chart as `--format json` lists it.
#[derive(serde::Serialize)]
struct ChartSummary<'a> {
    name: &'a str,
    heading: &'a str,
    series: Vec<&'a str>,
    notes: &'a [String],
}

pub fn run(a: &ReportArgs) -> Result<String, CliError> {
    if a.format == Format::Csv && a.compare.is_empty() {
        return Err(CliError::Usage(
            "--format csv lists the point differences between runs: it needs --compare DIR2".into(),
        ));
    }
    let dir = &a.dir;
    let data = load(dir)?;
    let others = a.compare.iter().map(|d| load(d)).collect::<Result<Vec<_>, _>>()?;
    let link = model_link(data.info.as_ref());
    let (mut drawn, skipped) = charts(&data, &link);
    let mut description = description(&data, &link);
    let first_name = dir_name(dir);
    let comparisons: Vec<Comparison> = others
        .iter()
        .map(|o| compare(&data, o, (&first_name, &dir_name(&o.dir))))
        .collect();
    if !others.is_empty() {
        let other_charts: Vec<Vec<Drawn>> = others
            .iter()
            .map(|o| charts(o, &model_link(o.info.as_ref())).0)
            .collect();
        overlay(&mut drawn, &other_charts);
        let mut runs = vec![format!("A = {first_name} (the reference for differences)")];
        runs.extend(
            comparisons
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{} = {}", run_letter(i + 1), c.other)),
        );
        description.insert(0, format!("Runs compared: {}.", runs.join("; ")));
    }

    if let Some(svg_dir) = &a.svg_dir {
        std::fs::create_dir_all(svg_dir)
            .map_err(|e| CliError::Runtime(format!("cannot create {}: {e}", svg_dir.display())))?;
        for d in &drawn {
            write_atomically(&svg_dir.join(format!("{}.svg", d.name)), &d.chart.to_svg())?;
        }
    }
    let mut text = String::new();
    if let Some(path) = &a.html {
        let title = match a.compare.len() {
            0 => format!("pcieperf bench report: {first_name}"),
            n => format!("pcieperf bench report: {first_name} compared with {n} run(s)"),
        };
        let report = Report {
            title,
            description: description.clone(),
            tables: comparisons
                .iter()
                .enumerate()
                .flat_map(|(i, c)| comparison_tables(c, &run_letter(i + 1)))
                .collect(),
            sections: drawn
                .iter()
                .map(|d| Section {
                    id: d.name.clone(),
                    heading: format!("{} ({})", d.heading, d.name),
                    chart: d.chart.clone(),
                    notes: d.notes.clone(),
                })
                .collect(),
        };
        write_atomically(path, &report.to_html())?;
        if a.format == Format::Table {
            text.push_str(&format!("Wrote {} ({} charts)\n", path.display(), drawn.len()));
        }
    }
    match a.format {
        Format::Csv => {
            // One table of every run's differences from the first.
            let mut all = String::new();
            for (i, c) in comparisons.iter().enumerate() {
                let csv = c.difference_table(None).to_csv();
                let body = if i == 0 {
                    csv.as_str()
                } else {
                    csv.split_once('\n').map_or("", |x| x.1)
                };
                all.push_str(body);
            }
            return Ok(all);
        }
        Format::Json => {
            let charts: Vec<ChartSummary> = drawn
                .iter()
                .map(|d| ChartSummary {
                    name: &d.name,
                    heading: &d.heading,
                    series: d.chart.series.iter().map(|s| s.name.as_str()).collect(),
                    notes: &d.notes,
                })
                .collect();
            return Ok(crate::output::json(&serde_json::json!({
                "dir": dir,
                "description": description,
                "charts": charts,
                "not_drawn": skipped,
                "comparisons": comparisons,
            })));
        }
        Format::Table => {}
    }
    if a.html.is_none() {
        text.push_str(&format!("Report of {}\n", dir.display()));
        for d in &description {
            text.push_str(&format!("  {d}\n"));
        }
        text.push_str(&format!("\nCharts ({}):\n", drawn.len()));
        let width = drawn.iter().map(|d| d.name.len()).max().unwrap_or(0);
        for d in &drawn {
            text.push_str(&format!(
                "  {:width$}  {} ({} series)\n",
                d.name,
                d.heading,
                d.chart.series.len()
            ));
            for n in d.notes.iter().filter(|n| n.starts_with("Explain")) {
                text.push_str(&format!("  {:width$}    {n}\n", ""));
            }
        }
        if !skipped.is_empty() {
            text.push_str(&format!("\nNot drawn: {}\n", skipped.join(", ")));
        }
    }
    for (i, c) in comparisons.iter().enumerate() {
        text.push_str(&comparison_text(c, &run_letter(i + 1)));
    }
    if a.html.is_none() {
        text.push_str("\nUse --html FILE for the report, --svg-dir DIR for the charts as SVG files.\n");
    }
    if let Some(svg_dir) = &a.svg_dir {
        text.push_str(&format!("Wrote {} SVG files to {}\n", drawn.len(), svg_dir.display()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_round_trips_through_run_json() {
        let p = LinkParams {
            gen: Generation::Gen4,
            lanes: 16,
            mps: 512,
            ..LinkParams::default()
        };
        let cfg = LinkConfig::new(&p).unwrap();
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(link_from_json(&json), Some(cfg));
        assert_eq!(link_from_json(&serde_json::json!({"gen": "Gen3"})), None);
        assert!(model_link(None).assumed);
    }

    #[test]
    fn labels_and_nice_numbers() {
        assert_eq!(bytes_label(8192), "8 KB");
        assert_eq!(bytes_label(1_572_864), "1.5 MB");
        assert_eq!(bytes_label(64), "64 B");
        assert_eq!(nice_ceil(1416.0), 2000.0);
        assert_eq!(nice_ceil(2100.0), 2500.0);
        assert_eq!(nice_ceil(100.0), 100.0);
        let cdf = [(1.0, 0.0), (2.0, 0.5), (3.0, 0.999), (9.0, 1.0)];
        assert_eq!(quantile(&cdf, 0.5), Some(2.0));
        assert_eq!(quantile(&cdf, 0.999), Some(3.0));
    }
}
