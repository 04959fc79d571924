//! `pcieperf model link`: raw and TLP-layer bandwidth of every generation and width.

use super::link_args::{as_typed, parse_mode, whole};
use crate::error::CliError;
use crate::output::{json, Cell, Format, Table};
use clap::Args;
use pcie_model::{raw, stream, tlp_layer, Encoding, FlitMode, Generation, LinkConfig, LinkParams, Op, WIDTHS};
use serde::Serialize;

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

/// One line of the table.
#[derive(Debug, Serialize)]
struct LinkRow {
    gen: u8,
    lanes: u32,
    gt_per_s: f64,
    encoding: &'static str,
    flit: bool,
    raw_gbps: f64,
    tlp_gbps: f64,
    /// Effective bandwidth of 4 KB DMA writes and reads: the practical ceiling.
    wr_4k_gbps: f64,
    rd_4k_gbps: f64,
}

fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::B8b10b => "8b/10b",
        Encoding::B128b130b => "128b/130b",
        Encoding::B1b1b => "1b/1b",
    }
}

pub fn run(a: &LinkTableArgs) -> Result<String, CliError> {
    let mode = parse_mode(a.compat.as_deref())?;
    let flit: FlitMode = a.flit.parse()?;
    let (mps, mrrs) = (whole(&a.mps), whole(&a.mrrs));
    let mut rows = Vec::new();
    for gen in Generation::ALL {
        if flit == FlitMode::Off && gen.requires_flit() {
            continue; // no non-flit mode exists at 64 GT/s and above
        }
        for lanes in WIDTHS {
            let cfg = LinkConfig::new(&LinkParams {
                gen,
                lanes,
                flit,
                mps,
                mrrs,
                mode,
                ..LinkParams::default()
            })
            .map_err(|e| as_typed(e, &[("mps", &a.mps), ("mrrs", &a.mrrs)]))?;
            rows.push(LinkRow {
                gen: gen.number(),
                lanes,
                gt_per_s: gen.gt_per_s(),
                encoding: encoding_name(gen.encoding()),
                flit: cfg.flit,
                raw_gbps: raw(&cfg).0,
                tlp_gbps: tlp_layer(&cfg).0,
                wr_4k_gbps: stream(&cfg, Op::Wr, 4096, 0)?.payload.0,
                rd_4k_gbps: stream(&cfg, Op::Rd, 4096, 0)?.payload.0,
            });
        }
    }
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
