//! A PMU as the kernel describes it in `sys/bus/event_source/devices/<name>/`: its dynamic type
//! number, the CPUs to open it on, its format terms (`format/*`) and its event aliases
//! (`events/*` with optional `.scale` and `.unit`).

use crate::error::PmuError;
use crate::event_sources::{self, parse_err, read_required, SysfsRoot, EVENT_SOURCE};
use pcie_sysfs::files::{list_dir, parse_u64, read_attr};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The `perf_event_attr` field a format term lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigField {
    Config,
    Config1,
    Config2,
    Config3,
}

impl ConfigField {
    pub const ALL: [ConfigField; 4] = [
        ConfigField::Config,
        ConfigField::Config1,
        ConfigField::Config2,
        ConfigField::Config3,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ConfigField::Config => "config",
            ConfigField::Config1 => "config1",
            ConfigField::Config2 => "config2",
            ConfigField::Config3 => "config3",
        }
    }

    pub fn from_name(s: &str) -> Option<ConfigField> {
        ConfigField::ALL.into_iter().find(|f| f.name() == s)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// `format/<name>`: which bits of which config field a term sets, e.g. `config:0-15`,
/// `config1:63` or `config:0-7,32-35` (bits of the value fill the ranges in order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FormatTerm {
    pub name: String,
    pub field: ConfigField,
    /// Inclusive bit ranges, low bit first.
    pub ranges: Vec<(u8, u8)>,
}

impl FormatTerm {
    /// Parse the contents of a format file. Bits are 0 to 63, each range low bit first, and
    /// ranges may not overlap (a value bit must land in one config bit).
    pub fn parse(name: &str, text: &str) -> Result<FormatTerm, String> {
        event_sources::check_len(text)?;
        let bad = || format!("{text:?}: expected configN:lo-hi[,lo-hi...] or configN:bit (N empty or 1 to 3)");
        let (field, bits) = text.trim().split_once(':').ok_or_else(bad)?;
        let field = ConfigField::from_name(field.trim()).ok_or_else(bad)?;
        let mut ranges: Vec<(u8, u8)> = Vec::new();
        for part in bits.split(',') {
            let (lo, hi) = match part.trim().split_once('-') {
                Some((lo, hi)) => (lo.trim(), hi.trim()),
                None => (part.trim(), part.trim()),
            };
            let bit = |b: &str| -> Result<u8, String> {
                match b.parse::<u64>() {
                    Ok(n) if n <= 63 => Ok(n as u8),
                    Ok(_) => Err(format!("{text:?}: bit {b} is beyond 63 (bits are 0 to 63)")),
                    Err(_) => Err(bad()),
                }
            };
            let (lo, hi) = (bit(lo)?, bit(hi)?);
            if lo > hi {
                return Err(format!("{text:?}: range {lo}-{hi} must be written low bit first"));
            }
            if let Some(&(a, b)) = ranges.iter().find(|&&(a, b)| lo <= b && a <= hi) {
                return Err(format!("{text:?}: bits {lo}-{hi} overlap {a}-{b}"));
            }
            ranges.push((lo, hi));
        }
        Ok(FormatTerm {
            name: name.to_string(),
            field,
            ranges,
        })
    }

    /// Number of value bits the term holds.
    pub fn width(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| (hi - lo + 1) as u32).sum()
    }

    /// The largest value that fits.
    pub fn max_value(&self) -> u64 {
        match self.width() {
            w if w >= 64 => u64::MAX,
            w => (1u64 << w) - 1,
        }
    }

    /// Place `value` into `config` (clearing the term's bits first); `None` when it does not fit.
    pub fn pack(&self, config: u64, value: u64) -> Option<u64> {
        if value > self.max_value() {
            return None;
        }
        let mut out = config;
        let mut v = value;
        for &(lo, hi) in &self.ranges {
            let w = (hi - lo + 1) as u32;
            let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            out = (out & !(mask << lo)) | ((v & mask) << lo);
            v = if w >= 64 { 0 } else { v >> w };
        }
        Some(out)
    }

    /// The term's value in a config word (the inverse of [`FormatTerm::pack`]).
    pub fn unpack(&self, config: u64) -> u64 {
        let mut v = 0u64;
        let mut shift = 0u32;
        for &(lo, hi) in &self.ranges {
            let w = (hi - lo + 1) as u32;
            let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            if shift < 64 {
                v |= ((config >> lo) & mask) << shift;
            }
            shift += w;
        }
        v
    }

    /// The spelling of a format file: `config:0-15`.
    pub fn describe(&self) -> String {
        let r: Vec<String> = self
            .ranges
            .iter()
            .map(|&(lo, hi)| if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") })
            .collect();
        format!("{}:{}", self.field.name(), r.join(","))
    }
}

/// The value of a term in an event alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TermValue {
    Value(u64),
    /// `term=?`: the user must supply it (DWC `lane=?`).
    Required,
}

/// `events/<name>`: an alias for a list of terms, with perf's optional scale and unit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventAlias {
    pub name: String,
    /// The file's text, trimmed (`eventid=0x21,type=0x0`).
    pub encoding: String,
    pub terms: Vec<(String, TermValue)>,
    pub scale: Option<f64>,
    pub unit: Option<String>,
}

impl EventAlias {
    /// Parse an events/ file's contents. Whitespace around terms is ignored (the v1 DWC patch
    /// printed `eventid=0x21, type=0x1`); a term without a value means 1.
    pub fn parse(name: &str, text: &str) -> Result<EventAlias, String> {
        event_sources::check_len(text)?;
        let mut terms = Vec::new();
        for part in text.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = match part.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None => (part, "1"),
            };
            if k.is_empty() {
                return Err(format!("{text:?}: empty term name"));
            }
            if terms.iter().any(|(t, _)| t == k) {
                return Err(format!("{text:?}: term {k} appears twice"));
            }
            let value = if v == "?" {
                TermValue::Required
            } else {
                TermValue::Value(parse_u64(v).ok_or_else(|| format!("{text:?}: {k}={v} is not a number"))?)
            };
            terms.push((k.to_string(), value));
        }
        Ok(EventAlias {
            name: name.to_string(),
            encoding: text.trim().to_string(),
            terms,
            scale: None,
            unit: None,
        })
    }

    /// Terms the user must supply (`?` values).
    pub fn required_params(&self) -> Vec<String> {
        self.terms
            .iter()
            .filter(|(_, v)| *v == TermValue::Required)
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// A PMU found in `sys/bus/event_source/devices`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pmu {
    pub name: String,
    /// The dynamic `perf_event_attr.type` (differs between boots).
    #[serde(rename = "type")]
    pub type_id: u32,
    /// CPUs to open the PMU on (empty: any CPU, e.g. core PMUs without a cpumask).
    pub cpumask: Vec<u32>,
    pub formats: Vec<FormatTerm>,
    /// Sorted by name.
    pub events: Vec<EventAlias>,
    /// Other small attribute files (`identifier`, `bus`, `bdf_min`, `die0`, `associated_cpus`,
    /// `perf_event_mux_interval_ms`, ...), trimmed.
    pub attrs: BTreeMap<String, String>,
}

/// Attribute files worth keeping (small, driver-specific, used for topology).
fn keep_attr(name: &str) -> bool {
    matches!(
        name,
        "identifier" | "bus" | "bdf_min" | "bdf_max" | "associated_cpus" | "perf_event_mux_interval_ms"
    ) || (name.starts_with("die") && name[3..].chars().all(|c| c.is_ascii_digit()) && name.len() > 3)
}

impl Pmu {
    /// Read one PMU directory.
    pub fn read(root: &SysfsRoot, name: &str) -> Result<Pmu, PmuError> {
        let dir = root.path().join(EVENT_SOURCE).join(name);
        Pmu::read_dir(&dir, name)
    }

    fn read_dir(dir: &Path, name: &str) -> Result<Pmu, PmuError> {
        let type_path = dir.join("type");
        let type_text = read_required(&type_path)?;
        let type_id = type_text
            .parse()
            .map_err(|_| parse_err(&type_path, format!("{type_text:?} is not a PMU type number")))?;
        let cpumask_path = dir.join("cpumask");
        let cpumask = match read_attr(&cpumask_path)? {
            Some(t) => pcie_sysfs::host::parse_cpu_list(&t)
                .ok_or_else(|| parse_err(&cpumask_path, format!("{t:?} is not a CPU list")))?,
            None => Vec::new(),
        };
        let mut formats = Vec::new();
        for f in list_dir(&dir.join("format"))? {
            let p = dir.join("format").join(&f);
            let text = read_required(&p)?;
            formats.push(FormatTerm::parse(&f, &text).map_err(|m| parse_err(&p, m))?);
        }
        let edir = dir.join("events");
        let files = list_dir(&edir)?;
        let mut events = Vec::new();
        let is_meta = |f: &str| {
            [".scale", ".unit", ".per-pkg", ".snapshot"]
                .iter()
                .any(|s| f.ends_with(s))
        };
        for f in files.iter().filter(|f| !is_meta(f)) {
            let p = edir.join(f);
            let text = read_required(&p)?;
            let mut ev = EventAlias::parse(f, &text).map_err(|m| parse_err(&p, m))?;
            if let Some(s) = read_attr(&edir.join(format!("{f}.scale")))? {
                let sp = edir.join(format!("{f}.scale"));
                ev.scale = Some(
                    s.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x > 0.0)
                        .ok_or_else(|| parse_err(&sp, format!("{s:?} is not a positive number")))?,
                );
            }
            ev.unit = read_attr(&edir.join(format!("{f}.unit")))?.filter(|u| !u.is_empty());
            events.push(ev);
        }
        let mut attrs = BTreeMap::new();
        for f in list_dir(dir)?.into_iter().filter(|f| keep_attr(f)) {
            if let Some(v) = read_attr(&dir.join(&f))? {
                attrs.insert(f, v);
            }
        }
        Ok(Pmu {
            name: name.to_string(),
            type_id,
            cpumask,
            formats,
            events,
            attrs,
        })
    }

    /// Every PMU under the root, sorted by name.
    pub fn discover(root: &SysfsRoot) -> Result<Vec<Pmu>, PmuError> {
        root.pmu_names()?.iter().map(|n| Pmu::read(root, n)).collect()
    }

    /// An event alias by name, matched case-insensitively (kernels changed the case).
    pub fn event(&self, name: &str) -> Option<&EventAlias> {
        self.events
            .iter()
            .find(|e| e.name == name)
            .or_else(|| self.events.iter().find(|e| e.name.eq_ignore_ascii_case(name)))
    }

    pub fn format(&self, name: &str) -> Option<&FormatTerm> {
        self.formats.iter().find(|f| f.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_terms_parse_and_pack() {
        let t = FormatTerm::parse("lane", "config:20-27\n").unwrap();
        assert_eq!((t.field, t.width(), t.max_value()), (ConfigField::Config, 8, 255));
        assert_eq!(t.pack(0x1070c, 4), Some(0x41070c));
        assert_eq!(t.pack(0, 256), None);
        let bit = FormatTerm::parse("edge", "config1:63").unwrap();
        assert_eq!(bit.pack(0, 1), Some(1 << 63));
        assert_eq!(bit.describe(), "config1:63");
        let split = FormatTerm::parse("x", "config2:0-3,8-11").unwrap();
        assert_eq!(split.pack(0, 0xab), Some(0xa0b));
        assert_eq!(split.unpack(0xa0b), 0xab);
        assert_eq!(t.unpack(0x41070c), 4);
        let full = FormatTerm::parse("c", "config:0-63").unwrap();
        assert_eq!(full.pack(0, u64::MAX), Some(u64::MAX));
        let c2 = FormatTerm::parse("w", "config2:0-63").unwrap();
        assert_eq!(
            (c2.field, c2.width(), c2.max_value()),
            (ConfigField::Config2, 64, u64::MAX)
        );
        let long = format!("config:0{}", " ".repeat(5000));
        for (bad, says) in [
            ("config:", "expected configN"),
            ("", "expected configN"),
            ("conf:0-3", "expected configN"),
            ("config4:1", "expected configN"),
            ("config:0-x", "expected configN"),
            ("config:-1", "expected configN"),
            ("config:0-7,", "expected configN"),
            ("config:9-3", "range 9-3 must be written low bit first"),
            ("config:0-64", "bit 64 is beyond 63"),
            ("config:70-80", "bit 70 is beyond 63"),
            ("config:18446744073709551616", "expected configN"),
            ("config:0-7,4-11", "bits 4-11 overlap 0-7"),
            ("config:0-63,0", "bits 0-0 overlap 0-63"),
            (long.as_str(), "5008 bytes: longer than 4096"),
        ] {
            let e = FormatTerm::parse("x", bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn aliases_parse_with_spaces_and_params() {
        let e = EventAlias::parse("rx", "eventid=0x21, type=0x1").unwrap();
        assert_eq!(
            e.terms,
            vec![
                ("eventid".into(), TermValue::Value(0x21)),
                ("type".into(), TermValue::Value(1))
            ]
        );
        let l = EventAlias::parse("l", "eventid=0x70c,type=0x1,lane=?\n").unwrap();
        assert_eq!(l.required_params(), vec!["lane".to_string()]);
        let flag = EventAlias::parse("f", "event=0x3c,edge").unwrap();
        assert_eq!(flag.terms[1], ("edge".into(), TermValue::Value(1)));
        assert!(EventAlias::parse("b", "event=zz").is_err());
        let wide = EventAlias::parse("w", "event=0x10000000000000000").unwrap_err();
        assert!(wide.contains("event=0x10000000000000000 is not a number"), "{wide}");
        let long = EventAlias::parse("l", &"event=1,".repeat(600)).unwrap_err();
        assert_eq!(long, "4800 bytes: longer than 4096");
        let twice = EventAlias::parse("d", "event=0x1,umask=2,event=0x3").unwrap_err();
        assert!(twice.contains("term event appears twice"), "{twice}");
    }
}
