//! A link's speed and width as sysfs writes them (`current_link_speed`: `8.0 GT/s PCIe`,
//! `2.5 GT/s`, `Unknown`; `current_link_width`: `16`), read into values or "cannot tell".
//! The kernel prints width 0 for a link that is down and 255 (a config read of all ones) for a
//! device that does not answer; neither is a width.

use serde::Serialize;

/// A link speed file's contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkSpeed {
    /// GT/s per lane.
    GtPerS(f64),
    /// The kernel's `Unknown` (a rate it has no name for, or a link that is down).
    Unknown,
    /// Text that is no speed (kept, cut to 40 characters, for the message).
    CannotTell(String),
}

/// A link width file's contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkWidth {
    Lanes(u32),
    /// 0, 255, or text that is no width (kept, cut to 40 characters).
    CannotTell(String),
}

/// The widest link the specification defines.
pub const MAX_WIDTH: u32 = 32;

fn cut(text: &str) -> String {
    text.chars().take(40).collect()
}

impl LinkSpeed {
    /// The text the kernel writes for a rate (`8.0 GT/s PCIe`; `Unknown` for none): what
    /// fixture trees and laid-out snapshots put in the speed files [`LinkSpeed::parse`] reads.
    pub fn kernel_text(gts: f64) -> String {
        if gts > 0.0 {
            format!("{gts:.1} GT/s PCIe")
        } else {
            "Unknown".into()
        }
    }

    pub fn parse(text: &str) -> LinkSpeed {
        let t = text.trim();
        if t.starts_with("Unknown") {
            return LinkSpeed::Unknown;
        }
        let mut words = t.split_whitespace();
        let rate = words.next().and_then(|w| w.parse::<f64>().ok());
        match (rate, words.next()) {
            (Some(r), Some("GT/s")) if r.is_finite() && r > 0.0 && r <= 1024.0 => LinkSpeed::GtPerS(r),
            _ => LinkSpeed::CannotTell(cut(t)),
        }
    }

    pub fn gts(&self) -> Option<f64> {
        match self {
            LinkSpeed::GtPerS(r) => Some(*r),
            _ => None,
        }
    }
}

impl LinkWidth {
    pub fn parse(text: &str) -> LinkWidth {
        let t = text.trim();
        match crate::files::parse_u64(t) {
            Some(w @ 1..=32) => LinkWidth::Lanes(w as u32),
            _ => LinkWidth::CannotTell(cut(t)),
        }
    }

    pub fn lanes(&self) -> Option<u32> {
        match self {
            LinkWidth::Lanes(w) => Some(*w),
            LinkWidth::CannotTell(_) => None,
        }
    }
}

/// The four link files of a function; `None` where the file does not exist (conventional PCI,
/// virtual devices, integrated endpoints).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct LinkFiles {
    pub current_speed: Option<LinkSpeed>,
    pub max_speed: Option<LinkSpeed>,
    pub current_width: Option<LinkWidth>,
    pub max_width: Option<LinkWidth>,
}

impl LinkFiles {
    /// True when none of the files exists.
    pub fn is_empty(&self) -> bool {
        self == &LinkFiles::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_speed_texts_and_garbage() {
        assert_eq!(LinkSpeed::parse("8.0 GT/s PCIe\n"), LinkSpeed::GtPerS(8.0));
        assert_eq!(LinkSpeed::parse("2.5 GT/s"), LinkSpeed::GtPerS(2.5));
        assert_eq!(LinkSpeed::parse("64.0 GT/s PCIe"), LinkSpeed::GtPerS(64.0));
        assert_eq!(LinkSpeed::parse("Unknown"), LinkSpeed::Unknown);
        assert_eq!(LinkSpeed::parse("Unknown speed"), LinkSpeed::Unknown);
        for bad in [
            "",
            "fast",
            "8.0",
            "8.0 Gb/s",
            "NaN GT/s",
            "inf GT/s",
            "-8 GT/s",
            "0 GT/s",
            "1e300 GT/s",
        ] {
            assert!(matches!(LinkSpeed::parse(bad), LinkSpeed::CannotTell(_)), "{bad}");
        }
        let long = "x".repeat(5000);
        assert_eq!(LinkSpeed::parse(&long), LinkSpeed::CannotTell("x".repeat(40)));
    }

    #[test]
    fn widths_zero_and_255_are_not_widths() {
        assert_eq!(LinkWidth::parse("16\n"), LinkWidth::Lanes(16));
        assert_eq!(LinkWidth::parse("0"), LinkWidth::CannotTell("0".into()));
        assert_eq!(LinkWidth::parse("255"), LinkWidth::CannotTell("255".into()));
        assert_eq!(LinkWidth::parse("x16").lanes(), None);
        assert_eq!(LinkWidth::parse("99999999999999999999999").lanes(), None);
    }
}
