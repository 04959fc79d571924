//! The link options every `model` command shares.

use crate::error::CliError;
use clap::Args;
use pcie_model::{CplSplit, FlitMode, Generation, LinkConfig, LinkParams, Mode};

#[derive(Debug, Clone, Args)]
pub struct LinkArgs {
    /// PCIe generation, 1-7 (also "gen3")
    #[arg(long, default_value = "3")]
    pub gen: String,
    /// Link width: 1, 2, 4, 8, 16 or 32 (also "x8")
    #[arg(long, default_value = "8")]
    pub lanes: String,
    /// Flit mode: auto (on from Gen6), on, off
    #[arg(long, default_value = "auto")]
    pub flit: String,
    /// Maximum Payload Size in bytes
    #[arg(long, default_value_t = 256)]
    pub mps: u32,
    /// Maximum Read Request Size in bytes
    #[arg(long, default_value_t = 512)]
    pub mrrs: u32,
    /// Read Completion Boundary in bytes (64 or 128)
    #[arg(long, default_value_t = 64)]
    pub rcb: u32,
    /// Where completers cut read completions: mps (largest allowed) or rcb (every RCB)
    #[arg(long, default_value = "mps")]
    pub cpl_split: String,
    /// Address width of DMA requests: 32 or 64 bits
    #[arg(long, default_value_t = 64)]
    pub addr: u32,
    /// End-to-end CRC (TLP digest) on every TLP
    #[arg(long)]
    pub ecrc: bool,
    /// Non-flit TLPs occupy the link in multiples of this many bytes (4 = dense packing) [default: 16]
    #[arg(long)]
    pub tlp_align: Option<u32>,
    /// Tag field size: 5, 8, 10 or 14 bits (limits outstanding reads)
    #[arg(long, default_value_t = 8)]
    pub tag_bits: u32,
    /// Reproduce another model exactly: pcie-model (pcie-bench's Python model, flaws included)
    #[arg(long, value_name = "MODEL")]
    pub compat: Option<String>,
}

/// `--compat MODEL`: absent means the spec.
pub fn parse_mode(compat: Option<&str>) -> Result<Mode, CliError> {
    match compat {
        None => Ok(Mode::Spec),
        Some("pcie-model") => Ok(Mode::PcieModel),
        Some(other) => Err(CliError::Usage(format!("--compat {other}: must be pcie-model"))),
    }
}

impl LinkArgs {
    pub fn config(&self) -> Result<LinkConfig, CliError> {
        let lanes_text = self.lanes.strip_prefix('x').unwrap_or(&self.lanes);
        let lanes = lanes_text
            .parse()
            .map_err(|_| CliError::Usage(format!("--lanes {}: must be one of 1, 2, 4, 8, 16, 32", self.lanes)))?;
        let params = LinkParams {
            gen: self.gen.parse::<Generation>()?,
            lanes,
            flit: self.flit.parse::<FlitMode>()?,
            mps: self.mps,
            mrrs: self.mrrs,
            rcb: self.rcb,
            cpl_split: self.cpl_split.parse::<CplSplit>()?,
            addr_bits: self.addr,
            ecrc: self.ecrc,
            tlp_align: self.tlp_align,
            tag_bits: self.tag_bits,
            mode: parse_mode(self.compat.as_deref())?,
        };
        LinkConfig::new(&params).map_err(|mut e| {
            if e.param == "lanes" {
                e.value.clone_from(&self.lanes); // as the user spelled it, e.g. "x3"
            }
            e.into()
        })
    }
}
