//! Every generation and width side by side, as `pcieperf model link` prints them: signalling,
//! raw and TLP-layer bandwidth and the practical ceiling of 4 KB DMA.

use crate::config::{FlitMode, LinkConfig, LinkParams, Mode, WIDTHS};
use crate::error::ConfigError;
use crate::generation::Generation;
use crate::phy::raw;
use crate::stream::{stream, Op};
use crate::throughput::tlp_layer;
use serde::Serialize;

/// One generation at one width, per direction.
#[derive(Debug, Serialize)]
pub struct LinkRow {
    pub gen: u8,
    pub lanes: u32,
    pub gt_per_s: f64,
    pub encoding: &'static str,
    pub flit: bool,
    pub raw_gbps: f64,
    pub tlp_gbps: f64,
    /// Effective bandwidth of 4 KB DMA writes and reads: the practical ceiling.
    pub wr_4k_gbps: f64,
    pub rd_4k_gbps: f64,
}

/// Every generation (those that need flit mode left out with `flit` off) at every width.
pub fn link_table(flit: FlitMode, mps: u32, mrrs: u32, mode: Mode) -> Result<Vec<LinkRow>, ConfigError> {
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
            })?;
            rows.push(LinkRow {
                gen: gen.number(),
                lanes,
                gt_per_s: gen.gt_per_s(),
                encoding: gen.encoding().name(),
                flit: cfg.flit,
                raw_gbps: raw(&cfg).0,
                tlp_gbps: tlp_layer(&cfg).0,
                wr_4k_gbps: stream(&cfg, Op::Wr, 4096, 0)?.payload.0,
                rd_4k_gbps: stream(&cfg, Op::Rd, 4096, 0)?.payload.0,
            });
        }
    }
    Ok(rows)
}
