//! PCIe generations: signalling rate and line encoding.

use crate::error::ConfigError;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// A PCIe generation (the signalling rate it runs at).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Generation {
    Gen1,
    Gen2,
    Gen3,
    Gen4,
    Gen5,
    Gen6,
    Gen7,
}

/// How bits on the wire encode data bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Encoding {
    /// 8b/10b (Gen1, Gen2): every byte is a 10-bit symbol.
    B8b10b,
    /// 128b/130b (Gen3–Gen5): 16-byte blocks behind a 2-bit sync header.
    B128b130b,
    /// 1b/1b PAM4 (Gen6, Gen7): no line code; framing and protection live in the 256 B flit.
    B1b1b,
}

impl Encoding {
    /// As people write it: `8b/10b`, `128b/130b`, `1b/1b`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::B8b10b => "8b/10b",
            Encoding::B128b130b => "128b/130b",
            Encoding::B1b1b => "1b/1b",
        }
    }
}

impl Generation {
    pub const ALL: [Generation; 7] = [
        Generation::Gen1,
        Generation::Gen2,
        Generation::Gen3,
        Generation::Gen4,
        Generation::Gen5,
        Generation::Gen6,
        Generation::Gen7,
    ];

    /// The generation's number, 1–7.
    pub fn number(self) -> u8 {
        self as u8 + 1
    }

    /// Signalling rate per lane in GT/s.
    pub fn gt_per_s(self) -> f64 {
        match self {
            Generation::Gen1 => 2.5,
            Generation::Gen2 => 5.0,
            Generation::Gen3 => 8.0,
            Generation::Gen4 => 16.0,
            Generation::Gen5 => 32.0,
            Generation::Gen6 => 64.0,
            Generation::Gen7 => 128.0,
        }
    }

    /// The generation signalling at `gt` GT/s per lane; `None` for a rate none signals.
    pub fn from_gt_per_s(gt: f64) -> Option<Generation> {
        Generation::ALL.into_iter().find(|g| (g.gt_per_s() - gt).abs() < 0.05)
    }

    /// The generation whose rate a sysfs `current_link_speed`/`max_link_speed` text gives
    /// (`8.0 GT/s PCIe`, `2.5 GT/s`); `None` for `Unknown` or a rate no generation signals.
    pub fn from_sysfs_speed(text: &str) -> Option<Generation> {
        Generation::from_gt_per_s(text.split_whitespace().next()?.parse().ok()?)
    }

    /// The kernel's text for this generation's rate (`8.0 GT/s PCIe`), as sysfs shows it.
    pub fn sysfs_speed(self) -> &'static str {
        match self {
            Generation::Gen1 => "2.5 GT/s PCIe",
            Generation::Gen2 => "5.0 GT/s PCIe",
            Generation::Gen3 => "8.0 GT/s PCIe",
            Generation::Gen4 => "16.0 GT/s PCIe",
            Generation::Gen5 => "32.0 GT/s PCIe",
            Generation::Gen6 => "64.0 GT/s PCIe",
            Generation::Gen7 => "128.0 GT/s PCIe",
        }
    }

    pub fn encoding(self) -> Encoding {
        match self {
            Generation::Gen1 | Generation::Gen2 => Encoding::B8b10b,
            Generation::Gen3 | Generation::Gen4 | Generation::Gen5 => Encoding::B128b130b,
            Generation::Gen6 | Generation::Gen7 => Encoding::B1b1b,
        }
    }

    /// Gen6 and Gen7 (PAM4) have no non-flit mode.
    pub fn requires_flit(self) -> bool {
        self.encoding() == Encoding::B1b1b
    }
}

impl Encoding {
    /// Data bits per line bit.
    pub fn efficiency(self) -> f64 {
        match self {
            Encoding::B8b10b => 8.0 / 10.0,
            Encoding::B128b130b => 128.0 / 130.0,
            Encoding::B1b1b => 1.0,
        }
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

impl FromStr for Generation {
    type Err = ConfigError;

    /// Accepts `3`, `gen3` and `Gen3`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s.strip_prefix("gen").or_else(|| s.strip_prefix("Gen")).unwrap_or(s);
        match digits.parse::<u8>() {
            Ok(n @ 1..=7) => Ok(Generation::ALL[n as usize - 1]),
            _ => Err(ConfigError::one_of("gen", s, &[1, 2, 3, 4, 5, 6, 7])),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn sysfs_speed_texts_round_trip() {
        for g in Generation::ALL {
            assert_eq!(Generation::from_sysfs_speed(g.sysfs_speed()), Some(g));
        }
        assert_eq!(Generation::Gen1.sysfs_speed(), "2.5 GT/s PCIe");
        assert_eq!(Generation::from_sysfs_speed("16 GT/s"), Some(Generation::Gen4));
        for bad in ["Unknown", "", "7.0 GT/s PCIe", "x GT/s"] {
            assert_eq!(Generation::from_sysfs_speed(bad), None, "{bad}");
        }
    }
    use super::*;

    #[test]
    fn parses_numbers_and_prefixed_names() {
        assert_eq!("3".parse::<Generation>().unwrap(), Generation::Gen3);
        assert_eq!("gen5".parse::<Generation>().unwrap(), Generation::Gen5);
        assert_eq!("Gen7".parse::<Generation>().unwrap(), Generation::Gen7);
    }

    #[test]
    fn rejects_unknown_generation_naming_allowed_values() {
        let e = "8".parse::<Generation>().unwrap_err();
        assert_eq!(e.to_string(), "gen 8: must be one of 1, 2, 3, 4, 5, 6, 7");
        assert!("gen0".parse::<Generation>().is_err());
        assert!("fast".parse::<Generation>().is_err());
    }

    #[test]
    fn rates_and_encodings() {
        assert_eq!(Generation::Gen3.gt_per_s(), 8.0);
        assert_eq!(Generation::Gen2.encoding(), Encoding::B8b10b);
        assert_eq!(Generation::Gen5.encoding(), Encoding::B128b130b);
        assert!(Generation::Gen6.requires_flit());
        assert!(!Generation::Gen5.requires_flit());
    }
}
