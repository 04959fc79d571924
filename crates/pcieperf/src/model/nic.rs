//! `pcieperf model nic`: NIC throughput over frame sizes against the Ethernet line rate.

use super::bw::{parse_eth, parse_size_list};
use super::link_args::LinkArgs;
use crate::error::CliError;
use crate::output::{check_files, json, write_file, Cell, Format, Table};
use clap::Args;
use pcie_model::{nic_sweep, Ethernet, LinkConfig, NicKind, NicSweep};
use pcie_report::{Axis, Chart, Point, Series};
use serde::Serialize;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct NicArgs {
    #[command(flatten)]
    link: LinkArgs,
    /// NIC models, comma-separated: simple, kernel (82599 + Linux ixgbe), dpdk (82599 + DPDK)
    #[arg(long, default_value = "simple,kernel,dpdk")]
    nic: String,
    /// Ethernet speed in Gb/s: 10, 25, 40, 100, 200, 400
    #[arg(long, default_value = "40", allow_negative_numbers = true)]
    eth: String,
    /// Frame sizes in bytes, FCS included (64-9216): lists and ranges, e.g. 64..1518
    #[arg(long, default_value = "64..1518", allow_negative_numbers = true)]
    sizes: String,
    /// Draw bidirectional NIC throughput and the line rate vs frame size to this SVG file
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    config: &'a LinkConfig,
    eth: Ethernet,
    nics: Vec<NicSweep>,
}

pub fn run(a: &NicArgs) -> Result<String, CliError> {
    check_files(&[("--plot", a.plot.as_deref())])?;
    let cfg = a.link.config()?;
    let eth = parse_eth(&a.eth)?.ok_or_else(|| {
        CliError::Usage("--eth none: model nic needs a line rate; use 10, 25, 40, 100, 200 or 400".into())
    })?;
    let kinds = a
        .nic
        .split(',')
        .map(|s| s.trim().parse::<NicKind>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut frames = parse_size_list(&a.sizes)?;
    frames.sort_unstable();
    frames.dedup();
    let nics = kinds
        .into_iter()
        .map(|nic| nic_sweep(&cfg, nic, eth, &frames))
        .collect::<Result<Vec<_>, _>>()?;
    let report = Report {
        config: &cfg,
        eth,
        nics,
    };
    if let Some(path) = &a.plot {
        write_file(path, &chart(&report).to_svg())?;
    }
    Ok(match a.format {
        Format::Json => json(&report),
        Format::Csv => table(&report).to_csv(),
        Format::Table => human(&report),
    })
}

fn table(r: &Report) -> Table {
    let mut t = Table::new(&[("frame", "Frame B"), ("line_gbps", "Line Gb/s")]);
    for s in &r.nics {
        let n = s.nic.name();
        t.add_column(&format!("{n}_bidir_gbps"), &format!("{n} bidir"));
        t.add_column(&format!("{n}_tx_gbps"), &format!("{n} TX"));
        t.add_column(&format!("{n}_rx_gbps"), &format!("{n} RX"));
    }
    let Some(first) = r.nics.first() else { return t };
    for (i, p) in first.points.iter().enumerate() {
        let mut cells = vec![Cell::Int(p.frame as u64), Cell::gbps(p.line.0)];
        for s in &r.nics {
            let q = &s.points[i];
            cells.extend([Cell::gbps(q.bidir.0), Cell::gbps(q.tx_only.0), Cell::gbps(q.rx_only.0)]);
        }
        t.push(cells);
    }
    t
}

fn human(r: &Report) -> String {
    let mut out = format!(
        "{}, {}GbE (FCS stripped), Gb/s of packet data per direction\n",
        r.config, r.eth.gbps
    );
    out.push_str(&table(r).to_human());
    out.push('\n');
    for s in &r.nics {
        let size = |f: Option<u32>| f.map_or("never in this sweep".to_string(), |f| format!("{f} B"));
        let _ = writeln!(
            out,
            "{:<6} keeps up with line rate in both directions from {} (first at {})",
            s.nic.name(),
            size(s.crossover.sustained),
            size(s.crossover.first)
        );
    }
    out
}

fn chart(r: &Report) -> Chart {
    let mut series: Vec<Series> = r
        .nics
        .iter()
        .map(|s| {
            let pts = s.points.iter().map(|p| Point::new(p.frame as f64, p.bidir.0)).collect();
            Series::line(format!("{} NIC, bidirectional", s.nic.name()), pts)
        })
        .collect();
    if let Some(s) = r.nics.first() {
        let pts = s.points.iter().map(|p| Point::new(p.frame as f64, p.line.0)).collect();
        series.push(Series::reference(format!("{}GbE line rate", r.eth.gbps), pts));
    }
    Chart {
        title: format!("NIC throughput: {}", r.config),
        x: Axis::linear("Frame size (B)").with_range(0.0, r.nics[0].points.last().map_or(1.0, |p| p.frame as f64)),
        y: Axis::linear("Packet data per direction (Gb/s)"),
        series,
    }
}
