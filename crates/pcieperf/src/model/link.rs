//! `pcieperf model link`: raw and TLP-layer bandwidth of every generation and width.

use super::link_args::{as_typed, parse_mode, whole};
use crate::error::CliError;
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_model::{link_table, FlitMode};

#[derive(Debug, Args)]
pub struct LinkTableArgs {
    /// Maximum Payload Size in bytes
    #[arg(long, default_value = "256", allow_negative_numbers = true)]
    mps: String,
    /// Maximum Read Request Size in bytes
    #[arg(long, default_value = "512", allow_negative_numbers = true)]
    mrrs: String,
    /// Flit mode: auto (on from Gen6), on (also Gen1-5), off (Gen1-5 only)
    #[arg(long, default_value = "auto")]
    flit: String,
    /// Reproduce another model exactly: pcie-model
    #[arg(long, value_name = "MODEL")]
    compat: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

pub fn run(a: &LinkTableArgs) -> Result<String, CliError> {
    let mode = parse_mode(a.compat.as_deref())?;
    let flit: FlitMode = a.flit.parse()?;
    let (mps, mrrs) = (whole(&a.mps), whole(&a.mrrs));
    let rows = link_table(flit, mps, mrrs, mode).map_err(|e| as_typed(e, &[("mps", &a.mps), ("mrrs", &a.mrrs)]))?;
    if a.format == Format::Json {
        return Ok(json(&rows));
    }
    let mut t = Table::new(&[
        ("gen", "Gen"),
        ("lanes", "Lanes"),
        ("gt_per_s", "GT/s"),
        ("encoding", "Encoding"),
        ("flit", "Flit"),
        ("raw_gbps", "Raw Gb/s"),
        ("raw_gbytes", "Raw GB/s"),
        ("tlp_gbps", "TLP Gb/s"),
        ("wr_4k_gbps", "4K write Gb/s"),
        ("rd_4k_gbps", "4K read Gb/s"),
    ]);
    for r in &rows {
        t.push(vec![
            Cell::Int(r.gen as u64),
            Cell::Int(r.lanes as u64),
            Cell::num(r.gt_per_s, 1),
            Cell::text(r.encoding),
            Cell::text(if r.flit { "on" } else { "off" }),
            Cell::gbps(r.raw_gbps),
            Cell::gbps(r.raw_gbps / 8.0),
            Cell::gbps(r.tlp_gbps),
            Cell::gbps(r.wr_4k_gbps),
            Cell::gbps(r.rd_4k_gbps),
        ]);
    }
    Ok(match a.format {
        Format::Csv => t.to_csv(),
        _ => format!("Per direction, MPS {mps}, MRRS {mrrs}:\n{}", t.to_human()),
    })
}
