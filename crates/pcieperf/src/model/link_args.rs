//! The link options every `model` command shares.

use crate::error::CliError;
use clap::Args;
use pcie_model::{ConfigError, CplSplit, FlitMode, Generation, LinkConfig, LinkParams, Mode};

#[derive(Debug, Clone, Args)]
pub struct LinkArgs {
    /// PCIe generation, 1-7 (also "gen3")
    #[arg(long, default_value = "3", allow_negative_numbers = true)]
    pub gen: String,
    /// Link width: 1, 2, 4, 8, 16 or 32 (also "x8")
    #[arg(long, default_value = "8", allow_negative_numbers = true)]
    pub lanes: String,
    /// Flit mode: auto (on from Gen6), on, off
    #[arg(long, default_value = "auto")]
    pub flit: String,
    /// Maximum Payload Size in bytes
    #[arg(long, default_value = "256", allow_negative_numbers = true)]
    pub mps: String,
    /// Maximum Read Request Size in bytes
    #[arg(long, default_value = "512", allow_negative_numbers = true)]
    pub mrrs: String,
    /// Read Completion Boundary in bytes (64 or 128)
    #[arg(long, default_value = "64", allow_negative_numbers = true)]
    pub rcb: String,
    /// Where completers cut read completions: mps (largest allowed) or rcb (every RCB)
    #[arg(long, default_value = "mps")]
    pub cpl_split: String,
    /// Address width of DMA requests: 32 or 64 bits
    #[arg(long, default_value = "64", allow_negative_numbers = true)]
    pub addr: String,
    /// End-to-end CRC (TLP digest) on every TLP
    #[arg(long)]
    pub ecrc: bool,
    /// Non-flit TLPs occupy the link in multiples of this many bytes (4 = dense packing) [default: 16]
    #[arg(long, allow_negative_numbers = true)]
    pub tlp_align: Option<String>,
    /// Tag field size: 5, 8, 10 or 14 bits (limits outstanding reads)
    #[arg(long, default_value = "8", allow_negative_numbers = true)]
    pub tag_bits: String,
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

/// Whole-number options are taken as text, so that whatever is typed (`-1`, `1e300`, `nan`,
/// nothing) is refused in the model's words, with the values it allows: text that is not a
/// `u32` reaches the model as `u32::MAX`, which no such option allows, and [`as_typed`] puts the
/// text back into the message.
pub fn whole(text: &str) -> u32 {
    text.parse().unwrap_or(u32::MAX)
}

/// A model error, quoting the value as typed when it is about one of `typed` (option, text).
pub fn as_typed(mut e: ConfigError, typed: &[(&str, &str)]) -> CliError {
    if let Some((_, text)) = typed.iter().find(|(param, _)| *param == e.param) {
        e.value = text.to_string();
    }
    e.into()
}

impl LinkArgs {
    pub fn config(&self) -> Result<LinkConfig, CliError> {
        let tlp_align = self.tlp_align.as_deref();
        let params = LinkParams {
            gen: self.gen.parse::<Generation>()?,
            lanes: whole(self.lanes.strip_prefix('x').unwrap_or(&self.lanes)),
            flit: self.flit.parse::<FlitMode>()?,
            mps: whole(&self.mps),
            mrrs: whole(&self.mrrs),
            rcb: whole(&self.rcb),
            cpl_split: self.cpl_split.parse::<CplSplit>()?,
            addr_bits: whole(&self.addr),
            ecrc: self.ecrc,
            tlp_align: tlp_align.map(whole),
            tag_bits: whole(&self.tag_bits),
            mode: parse_mode(self.compat.as_deref())?,
        };
        LinkConfig::new(&params).map_err(|e| {
            let typed = [
                ("lanes", self.lanes.as_str()), // as spelled, e.g. "x3"
                ("mps", &self.mps),
                ("mrrs", &self.mrrs),
                ("rcb", &self.rcb),
                ("addr", &self.addr),
                ("tlp-align", tlp_align.unwrap_or_default()),
                ("tag-bits", &self.tag_bits),
            ];
            as_typed(e, &typed)
        })
    }
}
