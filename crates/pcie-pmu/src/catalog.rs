//! Event catalogs: one TOML file per family (`data/catalogs/<family>.toml`, embedded) mapping the
//! family's events onto normalised metrics with the unit each kernel variant or CPU model uses.
//! Files are validated on load; errors name the file, the key and what is allowed.

use crate::error::PmuError;
use crate::event_sources::CpuModel;
use crate::family::{Family, FamilyMatch};
use crate::metric::PmuMetric;
use crate::pmu::{EventAlias, Pmu};
use serde::{Deserialize, Serialize};

/// The largest `bytes_per_count`: a count of whole 4 KiB TLP payloads (real PMUs count bytes,
/// dwords or 16- or 32-byte units).
pub const MAX_BYTES_PER_COUNT: f64 = 4096.0;

/// Units of a raw count.
pub const UNITS: [&str; 6] = ["bytes", "count", "cycles", "flux", "time", "latency"];

/// Variant tags a catalog may select on (from [`crate::family::recognise`]).
pub const TAGS: [&str; 10] = [
    "pcie_bdf",
    "dwc_rootport",
    "bdf16",
    "sbdf",
    "bdf_v1",
    "mixed_case",
    "lower_case",
    "grace",
    "tegra410",
    "bdf_range",
];

/// An override of an event's scale for some kernels or CPUs; exactly one selector is set.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Applies when the PMU carries this variant tag.
    pub tag: Option<String>,
    /// Applies on these Intel family-6 CPU models.
    pub cpu_models: Option<Vec<u32>>,
    pub bytes_per_count: f64,
    pub note: Option<String>,
}

/// One catalog entry.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEvent {
    /// The event's name as `events/` spells it (matched case-insensitively).
    pub name: String,
    /// Older spellings (e.g. `rx_nulified_tlp`).
    #[serde(default)]
    pub also: Vec<String>,
    pub metric: String,
    pub unit: String,
    /// Bytes per raw count for `unit = "bytes"` (DWC upstream 1, pre-upstream 16; Marvell 4).
    pub bytes_per_count: Option<f64>,
    /// Events with the same group must be opened as one perf event group (HiSilicon flux/time).
    pub group: Option<String>,
    /// Terms for an event the kernel does not list in `events/` (Intel IIO programmable).
    pub encoding: Option<String>,
    /// A few words for people (`LTSSM L1`, `memory write TLPs`).
    pub detail: Option<String>,
    #[serde(default, rename = "variant")]
    pub variants: Vec<Variant>,
}

/// A family's catalog.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    pub family: String,
    pub description: String,
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(rename = "event")]
    pub events: Vec<CatalogEvent>,
}

const BUILTIN: [(&str, &str); 6] = [
    ("dwc.toml", include_str!("../../../data/catalogs/dwc.toml")),
    ("hisi_pcie.toml", include_str!("../../../data/catalogs/hisi_pcie.toml")),
    ("intel_iio.toml", include_str!("../../../data/catalogs/intel_iio.toml")),
    (
        "intel_iio_free_running.toml",
        include_str!("../../../data/catalogs/intel_iio_free_running.toml"),
    ),
    (
        "nvidia_pcie.toml",
        include_str!("../../../data/catalogs/nvidia_pcie.toml"),
    ),
    (
        "marvell_pem.toml",
        include_str!("../../../data/catalogs/marvell_pem.toml"),
    ),
];

fn one_of(list: &[&str]) -> String {
    list.join(", ")
}

impl Catalog {
    /// Parse and validate a catalog file's text.
    pub fn parse(file: &str, text: &str) -> Result<Catalog, PmuError> {
        let err = |message: String| PmuError::Catalog {
            file: file.to_string(),
            message,
        };
        let c: Catalog = toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
        if Family::from_key(&c.family).is_none() {
            let keys: Vec<&str> = Family::ALL.iter().map(|f| f.key()).collect();
            return Err(err(format!("family: {:?} is not one of {}", c.family, one_of(&keys))));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut groups = std::collections::BTreeMap::<&str, usize>::new();
        for e in &c.events {
            let at = |key: &str, m: String| err(format!("event {:?}: {key}: {m}", e.name));
            for n in std::iter::once(&e.name).chain(&e.also) {
                if !seen.insert(n.to_ascii_lowercase()) {
                    return Err(at("name", format!("{n:?} appears twice")));
                }
            }
            if let Err(m) = e.metric.parse::<PmuMetric>() {
                return Err(at("metric", m.to_string()));
            }
            if !UNITS.contains(&e.unit.as_str()) {
                return Err(at("unit", format!("{:?} is not one of {}", e.unit, one_of(&UNITS))));
            }
            let scale = |v: f64| v > 0.0 && v <= MAX_BYTES_PER_COUNT;
            match (e.unit.as_str(), e.bytes_per_count) {
                ("bytes", None) => return Err(at("bytes_per_count", "required when unit = \"bytes\"".into())),
                ("bytes", Some(b)) if !scale(b) => {
                    return Err(at(
                        "bytes_per_count",
                        format!("{b}: must be a number above 0 and at most {MAX_BYTES_PER_COUNT}"),
                    ))
                }
                ("bytes", _) => {}
                (_, Some(_)) => return Err(at("bytes_per_count", "only allowed when unit = \"bytes\"".into())),
                _ => {}
            }
            if let Some(enc) = &e.encoding {
                EventAlias::parse(&e.name, enc).map_err(|m| at("encoding", m))?;
            }
            if let Some(g) = &e.group {
                *groups.entry(g.as_str()).or_default() += 1;
            }
            for v in &e.variants {
                match (&v.tag, &v.cpu_models) {
                    (Some(t), None) if !TAGS.contains(&t.as_str()) => {
                        return Err(at("variant.tag", format!("{t:?} is not one of {}", one_of(&TAGS))))
                    }
                    (Some(_), None) => {}
                    (None, Some(m)) if m.iter().any(|&n| n > 255) => {
                        return Err(at(
                            "variant.cpu_models",
                            format!("{m:?}: Intel family-6 model numbers are 0 to 255"),
                        ))
                    }
                    (None, Some(m)) if !m.is_empty() => {}
                    _ => return Err(at("variant", "set exactly one of tag, cpu_models (non-empty)".into())),
                }
                if e.unit != "bytes" || !scale(v.bytes_per_count) {
                    return Err(at(
                        "variant.bytes_per_count",
                        format!(
                            "{}: a number above 0 and at most {MAX_BYTES_PER_COUNT}, only for unit = \"bytes\"",
                            v.bytes_per_count
                        ),
                    ));
                }
            }
        }
        if let Some((g, _)) = groups.iter().find(|(_, n)| **n < 2) {
            return Err(err(format!("group {g:?}: has one event; a group needs two or more")));
        }
        Ok(c)
    }

    /// The built-in catalog of a family, if there is one.
    pub fn builtin(family: Family) -> Result<Option<Catalog>, PmuError> {
        let file = format!("{}.toml", family.key());
        match BUILTIN.iter().find(|(f, _)| *f == file) {
            Some((f, text)) => {
                let c = Catalog::parse(f, text)?;
                if c.family != family.key() {
                    return Err(PmuError::Catalog {
                        file: f.to_string(),
                        message: format!("family: {:?} must be {:?} (the file name)", c.family, family.key()),
                    });
                }
                Ok(Some(c))
            }
            None => Ok(None),
        }
    }

    /// Families with a built-in catalog.
    pub fn builtin_families() -> Vec<Family> {
        Family::ALL
            .into_iter()
            .filter(|f| BUILTIN.iter().any(|(n, _)| *n == format!("{}.toml", f.key())))
            .collect()
    }

    fn find(&self, name: &str) -> Option<&CatalogEvent> {
        self.events
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name) || e.also.iter().any(|a| a.eq_ignore_ascii_case(name)))
    }
}

/// Where an event comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The kernel's `events/` directory.
    Sysfs,
    /// Only the catalog defines it (its `encoding`).
    Catalog,
}

/// An event of a PMU with what the catalog says about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PmuEvent {
    pub name: String,
    pub encoding: String,
    pub origin: Origin,
    /// Parameters the user must give (`lane`).
    pub required_params: Vec<String>,
    pub metric: Option<PmuMetric>,
    pub unit: Option<String>,
    pub bytes_per_count: Option<f64>,
    pub group: Option<String>,
    pub detail: Option<String>,
    /// The kernel's `.scale` / `.unit`, when present.
    pub kernel_scale: Option<f64>,
    pub kernel_unit: Option<String>,
    /// Warnings (a kernel scale known to be wrong, a variant's reason).
    pub note: Option<String>,
}

/// Annotate a PMU's events with its family's catalog (events without an entry keep no metric).
pub fn annotate(pmu: &Pmu, fm: &FamilyMatch, cpu: &CpuModel, catalog: Option<&Catalog>) -> Vec<PmuEvent> {
    let mut out = Vec::new();
    for a in &pmu.events {
        let entry = catalog.and_then(|c| c.find(&a.name));
        out.push(describe(a, Origin::Sysfs, entry, fm, cpu));
    }
    if let Some(c) = catalog {
        for e in &c.events {
            let Some(enc) = &e.encoding else { continue };
            if pmu.event(&e.name).is_some() {
                continue;
            }
            if let Ok(a) = EventAlias::parse(&e.name, enc) {
                out.push(describe(&a, Origin::Catalog, Some(e), fm, cpu));
            }
        }
    }
    out
}

fn describe(a: &EventAlias, origin: Origin, e: Option<&CatalogEvent>, fm: &FamilyMatch, cpu: &CpuModel) -> PmuEvent {
    let mut ev = PmuEvent {
        name: a.name.clone(),
        encoding: a.encoding.clone(),
        origin,
        required_params: a.required_params(),
        metric: None,
        unit: None,
        bytes_per_count: None,
        group: None,
        detail: None,
        kernel_scale: a.scale,
        kernel_unit: a.unit.clone(),
        note: None,
    };
    let Some(e) = e else { return ev };
    // Checked when the catalog was loaded.
    ev.metric = e.metric.parse().ok();
    ev.unit = Some(e.unit.clone());
    ev.group = e.group.clone();
    ev.detail = e.detail.clone();
    ev.bytes_per_count = e.bytes_per_count;
    let model = cpu.intel_model();
    let applies = |v: &Variant| match (&v.tag, &v.cpu_models) {
        (Some(t), _) => fm.variant.contains(&t.as_str()),
        (None, Some(m)) => model.is_some_and(|x| m.contains(&x)),
        _ => false,
    };
    if let Some(v) = e.variants.iter().find(|v| applies(v)) {
        ev.bytes_per_count = Some(v.bytes_per_count);
        ev.note = v.note.clone();
    }
    // perf applies `.scale` with `.unit` MiB; say when the kernel's scale disagrees.
    if let (Some(bpc), Some(s), Some("MiB")) = (ev.bytes_per_count, a.scale, a.unit.as_deref()) {
        let kernel_bpc = s * 1048576.0;
        if (kernel_bpc - bpc).abs() > 0.01 * bpc {
            ev.note = Some(format!(
                "kernel .scale {s} MiB = {kernel_bpc:.0} B/count, but this CPU counts {bpc} B/count (kernels before the April 2025 fix under-report)"
            ));
        }
    }
    ev
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalogs_load() {
        for f in Catalog::builtin_families() {
            let c = Catalog::builtin(f).unwrap().unwrap();
            assert!(!c.events.is_empty(), "{f:?}");
        }
        assert_eq!(Catalog::builtin_families().len(), BUILTIN.len());
        assert!(Catalog::builtin(Family::ArmCmn).unwrap().is_none());
    }

    fn err(text: &str) -> String {
        Catalog::parse("t.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn invalid_catalogs_name_file_key_and_allowed_values() {
        let head = "family = \"dwc\"\ndescription = \"d\"\n";
        let ev = |body: &str| format!("{head}[[event]]\nname = \"e\"\n{body}");
        assert!(err("family = \"x\"\ndescription = \"d\"\nevent = []\n")
            .starts_with("t.toml: family: \"x\" is not one of dwc, hisi_pcie"));
        let e = err(&ev("metric = \"rx\"\nunit = \"count\"\n"));
        assert!(
            e.starts_with("t.toml: event \"e\": metric: \"rx\" is not one of rx_bytes, tx_bytes"),
            "{e}"
        );
        let e = err(&ev("metric = \"rx_bytes\"\nunit = \"B\"\n"));
        assert!(e.contains("unit: \"B\" is not one of bytes, count"), "{e}");
        let e = err(&ev("metric = \"rx_bytes\"\nunit = \"bytes\"\n"));
        assert!(e.contains("bytes_per_count: required"), "{e}");
        let e = err(&ev("metric = \"rx_bytes\"\nunit = \"bytes\"\nbytes_per_count = -1\n"));
        assert!(
            e.contains("bytes_per_count: -1: must be a number above 0 and at most 4096"),
            "{e}"
        );
        for hostile in ["nan", "inf", "0", "1e300", "4096.5"] {
            let e = err(&ev(&format!(
                "metric = \"rx_bytes\"\nunit = \"bytes\"\nbytes_per_count = {hostile}\n"
            )));
            assert!(
                e.contains("bytes_per_count: ") && e.contains("at most 4096"),
                "{hostile}: {e}"
            );
        }
        let e = err(&ev(
            "metric = \"rx_bytes\"\nunit = \"bytes\"\nbytes_per_count = 1\n[[event.variant]]\ncpu_models = [143]\nbytes_per_count = nan\n",
        ));
        assert!(e.contains("variant.bytes_per_count: NaN: a number above 0"), "{e}");
        let e = err(&ev(
            "metric = \"rx_bytes\"\nunit = \"bytes\"\nbytes_per_count = 1\n[[event.variant]]\ncpu_models = [143, 4294967295]\nbytes_per_count = 2\n",
        ));
        assert!(
            e.contains("variant.cpu_models: [143, 4294967295]: Intel family-6 model numbers are 0 to 255"),
            "{e}"
        );
        let e = err(&ev(
            "metric = \"rx_bytes\"\nunit = \"bytes\"\nbytes_per_count = 1\n[[event.variant]]\ncpu_models = [4294967296]\nbytes_per_count = 2\n",
        ));
        assert!(e.starts_with("t.toml: ") && e.contains("cpu_models"), "{e}");
        let e = err(&ev(
            "metric = \"errors\"\nunit = \"count\"\nencoding = \"event=0x10000000000000000\"\n",
        ));
        assert!(e.contains("encoding: ") && e.contains("is not a number"), "{e}");
        let e = err(&ev(
            "metric = \"errors\"\nunit = \"count\"\nencoding = \"event=1,event=2\"\n",
        ));
        assert!(
            e.contains("encoding: ") && e.contains("term event appears twice"),
            "{e}"
        );
        let e = err(&ev(
            "metric = \"rx_bytes\"\nunit = \"bytes\"\nbytes_per_count = 1\n[[event.variant]]\ntag = \"old\"\nbytes_per_count = 16\n",
        ));
        assert!(e.contains("variant.tag: \"old\" is not one of pcie_bdf"), "{e}");
        let e = err(&ev("metric = \"rx_bytes\"\nunit = \"flux\"\ngroup = \"g\"\n"));
        assert!(e.contains("group \"g\": has one event"), "{e}");
        let e = err(&ev("metric = \"rx_bytes\"\nunit = \"flux\"\ncolour = 1\n"));
        assert!(e.starts_with("t.toml: ") && e.contains("colour"), "{e}");
        let e = err(&ev("metric = \"errors\"\nunit = \"count\"\nencoding = \"event=zz\"\n"));
        assert!(e.contains("encoding:"), "{e}");
    }
}
