//! Link configuration: what the user asks for (`LinkParams`) and what the model runs on
//! (`LinkConfig`, validated, with flit mode resolved).

use crate::error::ConfigError;
use crate::generation::Generation;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

pub const WIDTHS: [u32; 6] = [1, 2, 4, 8, 16, 32];
pub const PAYLOAD_SIZES: [u32; 6] = [128, 256, 512, 1024, 2048, 4096];
/// RCB values the spec defines (64 B is only a root-port option).
pub const SPEC_RCBS: [u32; 2] = [64, 128];
/// pcie-model accepts these too.
pub const COMPAT_RCBS: [u32; 4] = [64, 128, 256, 512];
pub const TAG_BITS: [u32; 4] = [5, 8, 10, 14];
pub const TLP_ALIGNS: [u32; 5] = [4, 8, 16, 32, 64];
/// Default transmit-datapath granularity (see `docs/model.md`, "TLP start alignment").
pub const DEFAULT_TLP_ALIGN: u32 = 16;

/// Which rules the model follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The PCIe specification (our default).
    Spec,
    /// Bit-for-bit what pcie-bench's pcie-model computes, flaws included.
    PcieModel,
}

/// Flit mode as requested: `Auto` means on from Gen6, where it is the only mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlitMode {
    Auto,
    On,
    Off,
}

/// Where a completer cuts read completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CplSplit {
    /// As large as MPS allows, ending on RCB boundaries (what most completers do).
    Mps,
    /// At every RCB boundary (seen on some older chipsets).
    Rcb,
}

/// Parameters as a user gives them. `LinkConfig::new` validates them.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkParams {
    pub gen: Generation,
    pub lanes: u32,
    pub flit: FlitMode,
    pub mps: u32,
    pub mrrs: u32,
    pub rcb: u32,
    pub cpl_split: CplSplit,
    pub addr_bits: u32,
    pub ecrc: bool,
    /// `None`: the mode's default.
    pub tlp_align: Option<u32>,
    pub tag_bits: u32,
    pub mode: Mode,
}

impl Default for LinkParams {
    /// pcie-bench's defaults: Gen3 x8, MPS 256, MRRS 512, RCB 64, 64-bit addresses, no ECRC.
    fn default() -> Self {
        LinkParams {
            gen: Generation::Gen3,
            lanes: 8,
            flit: FlitMode::Auto,
            mps: 256,
            mrrs: 512,
            rcb: 64,
            cpl_split: CplSplit::Mps,
            addr_bits: 64,
            ecrc: false,
            tlp_align: None,
            tag_bits: 8,
            mode: Mode::Spec,
        }
    }
}

/// A validated link configuration. It reads back from the JSON it writes (`run.json`'s
/// `link`) through the same checks as [`LinkConfig::new`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LinkRecord")]
pub struct LinkConfig {
    pub mode: Mode,
    pub gen: Generation,
    pub lanes: u32,
    /// Flit mode in effect (resolved from `FlitMode`).
    pub flit: bool,
    pub mps: u32,
    pub mrrs: u32,
    pub rcb: u32,
    pub cpl_split: CplSplit,
    pub addr_bits: u32,
    pub ecrc: bool,
    /// A non-flit TLP occupies the link in multiples of this many bytes.
    pub tlp_align: u32,
    pub tag_bits: u32,
}

/// `LinkConfig` as written: enum fields as text, so a bad value names its key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkRecord {
    mode: String,
    gen: String,
    lanes: u32,
    flit: bool,
    mps: u32,
    mrrs: u32,
    rcb: u32,
    cpl_split: String,
    addr_bits: u32,
    ecrc: bool,
    tlp_align: u32,
    tag_bits: u32,
}

impl TryFrom<LinkRecord> for LinkConfig {
    type Error = String;

    fn try_from(r: LinkRecord) -> Result<LinkConfig, String> {
        let link = |e: ConfigError| format!("link.{e}");
        let mode = match r.mode.as_str() {
            "spec" => Mode::Spec,
            "pcie-model" => Mode::PcieModel,
            _ => return Err(link(ConfigError::one_of("mode", &r.mode, &["spec", "pcie-model"]))),
        };
        let cpl_split = match r.cpl_split.as_str() {
            "mps" => CplSplit::Mps,
            "rcb" => CplSplit::Rcb,
            _ => return Err(link(ConfigError::one_of("cpl_split", &r.cpl_split, &["mps", "rcb"]))),
        };
        let cfg = LinkConfig::new(&LinkParams {
            gen: r.gen.parse().map_err(link)?,
            lanes: r.lanes,
            flit: if r.flit { FlitMode::On } else { FlitMode::Off },
            mps: r.mps,
            mrrs: r.mrrs,
            rcb: r.rcb,
            cpl_split,
            addr_bits: r.addr_bits,
            ecrc: r.ecrc,
            tlp_align: (mode == Mode::Spec).then_some(r.tlp_align),
            tag_bits: r.tag_bits,
            mode,
        })
        .map_err(link)?;
        if cfg.tlp_align != r.tlp_align {
            return Err(link(ConfigError::new(
                "tlp_align",
                r.tlp_align,
                format!("pcie-model mode packs TLPs densely: must be {}", cfg.tlp_align),
            )));
        }
        Ok(cfg)
    }
}

fn check_in(param: &'static str, value: u32, allowed: &[u32]) -> Result<u32, ConfigError> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::one_of(param, value, allowed))
    }
}

impl LinkConfig {
    pub fn new(p: &LinkParams) -> Result<LinkConfig, ConfigError> {
        let compat = p.mode == Mode::PcieModel;
        let lanes = check_in("lanes", p.lanes, &WIDTHS)?;
        let mps = check_in("mps", p.mps, &PAYLOAD_SIZES)?;
        let mrrs = check_in("mrrs", p.mrrs, &PAYLOAD_SIZES)?;
        let rcb = check_in("rcb", p.rcb, if compat { &COMPAT_RCBS } else { &SPEC_RCBS })?;
        let addr_bits = check_in("addr", p.addr_bits, &[32, 64])?;
        let tag_bits = check_in("tag-bits", p.tag_bits, &TAG_BITS)?;
        let flit = match (p.flit, compat) {
            (FlitMode::On, true) => {
                return Err(ConfigError::new(
                    "flit",
                    "on",
                    "pcie-model has no flit mode; use auto or off with --compat pcie-model",
                ))
            }
            (_, true) => false,
            (FlitMode::Off, false) if p.gen.requires_flit() => {
                return Err(ConfigError::new(
                    "flit",
                    "off",
                    format!("Gen{} links always run in flit mode; use on or auto", p.gen),
                ))
            }
            (FlitMode::Auto, false) => p.gen.requires_flit(),
            (FlitMode::On, false) => true,
            (FlitMode::Off, false) => false,
        };
        if tag_bits == 14 && !flit {
            return Err(ConfigError::new(
                "tag-bits",
                14,
                "14-bit tags exist only in flit mode (Gen6+ or --flit on)",
            ));
        }
        let tlp_align = match (p.tlp_align, compat) {
            (Some(a), true) => {
                return Err(ConfigError::new(
                    "tlp-align",
                    a,
                    "pcie-model packs TLPs densely; --tlp-align cannot be combined with --compat pcie-model",
                ))
            }
            (Some(a), false) => check_in("tlp-align", a, &TLP_ALIGNS)?,
            (None, true) => 4,
            (None, false) => DEFAULT_TLP_ALIGN,
        };
        Ok(LinkConfig {
            mode: p.mode,
            gen: p.gen,
            lanes,
            flit,
            mps,
            mrrs,
            rcb,
            cpl_split: p.cpl_split,
            addr_bits,
            ecrc: p.ecrc,
            tlp_align,
            tag_bits,
        })
    }

    /// Outstanding non-posted requests the tag field allows.
    pub fn max_tags(&self) -> u32 {
        match self.tag_bits {
            5 => 32,
            8 => 256,
            // 10-bit tags with Tag[9:8] = 00b are not used, so they do not alias 8-bit tags.
            10 => 768,
            _ => 16384,
        }
    }
}

impl fmt::Display for LinkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Gen{} x{}{}, MPS {}, MRRS {}, RCB {}{}, {}-bit addresses{}",
            self.gen,
            self.lanes,
            if self.flit { " flit" } else { "" },
            self.mps,
            self.mrrs,
            self.rcb,
            match self.cpl_split {
                CplSplit::Mps => "",
                CplSplit::Rcb => " (completions cut at RCB)",
            },
            self.addr_bits,
            if self.ecrc { ", ECRC" } else { "" },
        )?;
        if self.mode == Mode::PcieModel {
            write!(f, " [pcie-model compatible]")
        } else {
            Ok(())
        }
    }
}

macro_rules! keyword_from_str {
    ($ty:ty, $param:literal, $($text:literal => $val:expr),+) => {
        impl FromStr for $ty {
            type Err = ConfigError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($val),)+
                    _ => Err(ConfigError::one_of($param, s, &[$($text),+])),
                }
            }
        }
    };
}

keyword_from_str!(FlitMode, "flit", "auto" => FlitMode::Auto, "on" => FlitMode::On, "off" => FlitMode::Off);
keyword_from_str!(CplSplit, "cpl-split", "mps" => CplSplit::Mps, "rcb" => CplSplit::Rcb);
keyword_from_str!(Mode, "compat", "spec" => Mode::Spec, "pcie-model" => Mode::PcieModel);

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl FnOnce(&mut LinkParams)) -> Result<LinkConfig, ConfigError> {
        let mut p = LinkParams::default();
        f(&mut p);
        LinkConfig::new(&p)
    }

    #[test]
    fn defaults_are_pcie_bench_defaults() {
        let c = with(|_| {}).unwrap();
        assert_eq!(
            (c.gen, c.lanes, c.mps, c.mrrs, c.rcb),
            (Generation::Gen3, 8, 256, 512, 64)
        );
        assert!(!c.flit);
        assert_eq!(c.tlp_align, DEFAULT_TLP_ALIGN);
    }

    #[test]
    fn rejects_bad_values_naming_them() {
        let e = with(|p| p.mps = 300).unwrap_err();
        assert_eq!(e.to_string(), "mps 300: must be one of 128, 256, 512, 1024, 2048, 4096");
        let e = with(|p| p.mrrs = 8192).unwrap_err();
        assert_eq!(e.param, "mrrs");
        let e = with(|p| p.lanes = 3).unwrap_err();
        assert_eq!(e.to_string(), "lanes 3: must be one of 1, 2, 4, 8, 16, 32");
        assert_eq!(with(|p| p.rcb = 256).unwrap_err().param, "rcb");
        assert_eq!(with(|p| p.addr_bits = 48).unwrap_err().param, "addr");
        assert_eq!(with(|p| p.tag_bits = 9).unwrap_err().param, "tag-bits");
    }

    #[test]
    fn flit_mode_resolution() {
        assert!(with(|p| p.gen = Generation::Gen6).unwrap().flit);
        assert!(!with(|p| p.gen = Generation::Gen5).unwrap().flit);
        assert!(with(|p| p.flit = FlitMode::On).unwrap().flit);
        let e = with(|p| {
            p.gen = Generation::Gen6;
            p.flit = FlitMode::Off
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "flit off: Gen6 links always run in flit mode; use on or auto"
        );
    }

    #[test]
    fn compat_mode_restrictions() {
        let compat = |f: fn(&mut LinkParams)| {
            with(|p| {
                p.mode = Mode::PcieModel;
                f(p)
            })
        };
        assert!(!compat(|p| p.gen = Generation::Gen6).unwrap().flit);
        assert_eq!(compat(|p| p.flit = FlitMode::On).unwrap_err().param, "flit");
        assert_eq!(compat(|p| p.tlp_align = Some(8)).unwrap_err().param, "tlp-align");
        assert_eq!(compat(|p| p.rcb = 512).unwrap().rcb, 512);
    }

    #[test]
    fn tags() {
        assert_eq!(with(|p| p.tag_bits = 5).unwrap().max_tags(), 32);
        assert_eq!(with(|p| p.tag_bits = 10).unwrap().max_tags(), 768);
        assert_eq!(with(|p| p.tag_bits = 14).unwrap_err().param, "tag-bits");
        let c = with(|p| {
            p.tag_bits = 14;
            p.gen = Generation::Gen6
        })
        .unwrap();
        assert_eq!(c.max_tags(), 16384);
    }

    #[test]
    fn keywords_parse() {
        assert_eq!("on".parse::<FlitMode>().unwrap(), FlitMode::On);
        assert_eq!("rcb".parse::<CplSplit>().unwrap(), CplSplit::Rcb);
        assert_eq!("pcie-model".parse::<Mode>().unwrap(), Mode::PcieModel);
        assert_eq!(
            "maybe".parse::<FlitMode>().unwrap_err().to_string(),
            "flit maybe: must be one of auto, on, off"
        );
    }
}
