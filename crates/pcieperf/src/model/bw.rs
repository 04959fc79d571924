//! `pcieperf model bw`: effective bandwidth of streaming DMA vs transfer size.

use super::link_args::{as_typed, whole, LinkArgs};
use crate::error::CliError;
use crate::output::{check_files, json, write_file, Cell, Format, Table};
use clap::Args;
use pcie_model::{parse_sizes, raw, sweep, tlp_layer, ConfigError, Ethernet, Gbps, LinkConfig, Op, Picos, SizePoint};
use pcie_report::{Axis, Chart, Point, Series};
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

const DEFAULT_SIZES: &str = "64,128,256,512,1024,1500,2048,4096";
const DEFAULT_PLOT_SIZES: &str = "1..4096";

#[derive(Debug, Args)]
pub struct BwArgs {
    #[command(flatten)]
    link: LinkArgs,
    /// Transfer sizes in bytes: lists and inclusive ranges, e.g. 64,128 or 1..4096 or 64..2048:64
    /// [default: 64,128,256,512,1024,1500,2048,4096; 1..4096 with --plot]
    #[arg(long, allow_negative_numbers = true)]
    sizes: Option<String>,
    /// Operations, comma-separated: wr (device writes host memory), rd (device reads), rdwr (both)
    #[arg(long, default_value = "wr,rd,rdwr")]
    op: String,
    /// Start of each transfer, in bytes past a 4 KB boundary (0-4095)
    #[arg(long, default_value = "0", allow_negative_numbers = true)]
    offset: String,
    /// Ethernet speed for the line-rate column (10, 25, 40, 100, 200, 400) or none
    #[arg(long, default_value = "40", allow_negative_numbers = true)]
    eth: String,
    /// Read round trip in ns (0.001 to 1e9): adds the Little's-law bound on reads
    #[arg(long, value_name = "NS", allow_negative_numbers = true)]
    latency: Option<String>,
    /// Read requests in flight for the latency bound, up to all tags --tag-bits allows [default: all]
    #[arg(long, requires = "latency", allow_negative_numbers = true)]
    tags: Option<String>,
    /// Draw effective bandwidth vs transfer size to this SVG file
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Show the TLPs and DLLPs behind every number
    #[arg(long)]
    explain: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    config: &'a LinkConfig,
    offset: u32,
    raw_gbps: Gbps,
    tlp_gbps: Gbps,
    eth: Option<Ethernet>,
    latency_ns: Option<f64>,
    rows: Vec<SizePoint>,
}

pub fn parse_eth(text: &str) -> Result<Option<Ethernet>, CliError> {
    match text {
        "none" => Ok(None),
        t => Ok(Some(t.parse()?)),
    }
}

/// `--sizes TEXT`, refused with the list as the user typed it.
pub fn parse_size_list(text: &str) -> Result<Vec<u32>, CliError> {
    parse_sizes(text).map_err(|e| CliError::Usage(format!("--sizes {text}: {e}")))
}

fn parse_ops(text: &str) -> Result<Vec<Op>, CliError> {
    let ops = text
        .split(',')
        .map(|s| s.trim().parse::<Op>())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ops)
}

/// Round trips from 1 ps (the model's time unit) to 1 s.
const LATENCY_NS: std::ops::RangeInclusive<f64> = 0.001..=1e9;

fn parse_latency(text: Option<&str>) -> Result<Option<f64>, CliError> {
    let Some(text) = text else { return Ok(None) };
    match text.parse::<f64>() {
        Ok(ns) if LATENCY_NS.contains(&ns) => Ok(Some(ns)),
        _ => Err(CliError::Usage(format!(
            "--latency {text}: must be a number of nanoseconds from {} to {:e}",
            LATENCY_NS.start(),
            LATENCY_NS.end()
        ))),
    }
}

impl BwArgs {
    /// A model error, quoting `--offset` and `--tags` as typed.
    fn refused(&self, e: ConfigError) -> CliError {
        as_typed(
            e,
            &[
                ("offset", &self.offset),
                ("tags", self.tags.as_deref().unwrap_or_default()),
            ],
        )
    }
}

/// The sweep, with `--offset` and `--tags` quoted as typed when the model refuses them.
fn evaluate(
    a: &BwArgs,
    cfg: &LinkConfig,
    sizes: &[u32],
    ops: &[Op],
    eth: Option<Ethernet>,
    rtt: Option<Picos>,
) -> Result<Vec<SizePoint>, CliError> {
    let tags = a.tags.as_deref().map(whole);
    sweep(cfg, sizes, ops, whole(&a.offset), eth, rtt, tags).map_err(|e| a.refused(e))
}

pub fn run(a: &BwArgs) -> Result<String, CliError> {
    check_files(&[("--plot", a.plot.as_deref())])?;
    let cfg = a.link.config()?;
    let ops = parse_ops(&a.op)?;
    let eth = parse_eth(&a.eth)?;
    let latency_ns = parse_latency(a.latency.as_deref())?;
    let rtt = latency_ns.map(Picos::from_nanos);
    let sizes = parse_size_list(a.sizes.as_deref().unwrap_or(DEFAULT_SIZES))?;
    let rows = evaluate(a, &cfg, &sizes, &ops, eth, rtt)?;
    if let Some(path) = &a.plot {
        let plot_rows = match &a.sizes {
            Some(_) => None,
            None => Some(evaluate(
                a,
                &cfg,
                &parse_size_list(DEFAULT_PLOT_SIZES)?,
                &ops,
                eth,
                rtt,
            )?),
        };
        write_file(path, &chart(&cfg, plot_rows.as_ref().unwrap_or(&rows), eth).to_svg())?;
    }
    let report = Report {
        config: &cfg,
        offset: whole(&a.offset),
        raw_gbps: raw(&cfg),
        tlp_gbps: tlp_layer(&cfg),
        eth,
        latency_ns,
        rows,
    };
    Ok(match a.format {
        Format::Json => json(&report),
        Format::Csv => table(&report, true).to_csv(),
        Format::Table => human(&report, a.explain),
    })
}

fn table(r: &Report, with_config: bool) -> Table {
    let mut t = Table::new(&[("size", "Size B")]);
    let ops: Vec<Op> = r
        .rows
        .first()
        .map(|row| row.results.iter().map(|o| o.op).collect())
        .unwrap_or_default();
    for op in &ops {
        let (name, human) = (op.name(), op.title());
        t.add_column(&format!("{name}_gbps"), &format!("{human} Gb/s"));
    }
    for op in &ops {
        t.add_column(&format!("{}_tps", op.name()), &format!("{} M/s", op.title()));
    }
    t.add_column("tlp_gbps", "TLP Gb/s");
    t.add_column("raw_gbps", "Raw Gb/s");
    if let Some(e) = r.eth {
        t.add_column("eth_gbps", &format!("{}GbE Gb/s", e.gbps));
    }
    let bound = r.latency_ns.is_some();
    if bound {
        for (c, h) in [
            ("rd_lat_gbps", "Rd lat-bound"),
            ("rd_bound_gbps", "Rd bound"),
            ("rd_limit", "Limit"),
            ("rd_tags_needed", "Tags needed"),
        ] {
            t.add_column(c, h);
        }
    }
    let config = config_cells(r);
    if with_config {
        for (c, _) in &config {
            t.add_column(c, c);
        }
    }
    for row in &r.rows {
        let mut cells = vec![Cell::Int(row.size as u64)];
        cells.extend(row.results.iter().map(|o| Cell::gbps(o.throughput.payload.0)));
        cells.extend(row.results.iter().map(|o| Cell::per_sec(o.throughput.units_per_sec)));
        cells.push(Cell::gbps(r.tlp_gbps.0));
        cells.push(Cell::gbps(r.raw_gbps.0));
        if r.eth.is_some() {
            cells.push(row.eth_gbps.map_or(Cell::Empty, |g| Cell::gbps(g.0)));
        }
        if let Some(b) = &row.read_bound {
            cells.extend([
                Cell::gbps(b.latency.0),
                Cell::gbps(b.bound.0),
                Cell::text(serde_json::to_value(b.limit).unwrap().as_str().unwrap_or_default()),
                Cell::num(b.outstanding_needed, 1),
            ]);
        }
        if with_config {
            cells.extend(config.iter().map(|(_, v)| Cell::text(v.clone())));
        }
        t.push(cells);
    }
    t
}

/// The configuration as CSV columns, so every row says what produced it.
fn config_cells(r: &Report) -> Vec<(&'static str, String)> {
    let c = r.config;
    let v = serde_json::to_value(c).unwrap();
    let word = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    vec![
        ("gen", c.gen.to_string()),
        ("lanes", c.lanes.to_string()),
        ("flit", c.flit.to_string()),
        ("mps", c.mps.to_string()),
        ("mrrs", c.mrrs.to_string()),
        ("rcb", c.rcb.to_string()),
        ("cpl_split", word("cpl_split")),
        ("addr", c.addr_bits.to_string()),
        ("ecrc", c.ecrc.to_string()),
        ("tlp_align", c.tlp_align.to_string()),
        ("offset", r.offset.to_string()),
        ("mode", word("mode")),
    ]
}

fn human(r: &Report, explain: bool) -> String {
    let mut out = format!(
        "{}: raw {:.2} Gb/s, TLP layer {:.2} Gb/s per direction\n",
        r.config, r.raw_gbps.0, r.tlp_gbps.0
    );
    if r.offset != 0 {
        let _ = writeln!(out, "transfers start {} B past a 4 KB boundary", r.offset);
    }
    out.push_str(&table(r, false).to_human());
    if explain {
        for row in &r.rows {
            for o in &row.results {
                out.push_str(&o.explain(row.size));
            }
        }
    }
    out
}

fn chart(cfg: &LinkConfig, rows: &[SizePoint], eth: Option<Ethernet>) -> Chart {
    let ops: Vec<Op> = rows
        .first()
        .map(|r| r.results.iter().map(|o| o.op).collect())
        .unwrap_or_default();
    let mut series: Vec<Series> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let pts = rows
                .iter()
                .map(|r| Point::new(r.size as f64, r.results[i].throughput.payload.0))
                .collect();
            Series::line(op.title(), pts)
        })
        .collect();
    if rows.iter().any(|r| r.read_bound.is_some()) {
        let pts = rows
            .iter()
            .filter_map(|r| r.read_bound.as_ref().map(|b| Point::new(r.size as f64, b.bound.0)))
            .collect();
        series.push(Series::line("Read (latency bound)", pts));
    }
    if let Some(e) = eth {
        let pts = rows
            .iter()
            .filter_map(|r| r.eth_gbps.map(|g| Point::new(r.size as f64, g.0)))
            .collect();
        series.push(Series::reference(format!("{}GbE line rate", e.gbps), pts));
    }
    Chart {
        title: format!("PCIe effective bandwidth: {cfg}"),
        x: Axis::linear("Transfer size (B)").with_range(0.0, rows.last().map_or(1.0, |r| r.size as f64)),
        y: Axis::linear("Effective bandwidth (Gb/s)"),
        series,
    }
}
