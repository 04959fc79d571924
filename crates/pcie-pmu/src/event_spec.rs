//! perf's event syntax, `pmu/event,term=val,.../` or `pmu/config=0x..,term=val/`, resolved
//! against a PMU's `format/` and `events/` into `perf_event_attr` config values.

use crate::error::PmuError;
use crate::pmu::{ConfigField, Pmu, TermValue};
use crate::sysfs::parse_u64;
use serde::Serialize;

/// A parsed, not yet resolved, event string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    pub pmu: String,
    /// Terms in order; a bare word is an event alias or a flag term (value `None`).
    pub terms: Vec<(String, Option<String>)>,
}

/// An event ready to open: the PMU's type and the four config words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedEvent {
    pub pmu: String,
    #[serde(rename = "type")]
    pub type_id: u32,
    /// The alias used, if any (as spelled in sysfs).
    pub event: Option<String>,
    pub config: [u64; 4],
    /// From the alias's `.scale` / `.unit` files.
    pub scale: Option<f64>,
    pub unit: Option<String>,
    pub cpumask: Vec<u32>,
}

impl EventSpec {
    /// Parse `pmu/terms/` (the trailing slash is optional).
    pub fn parse(spec: &str) -> Result<EventSpec, PmuError> {
        let bad = |m: &str| PmuError::BadSpec {
            spec: spec.to_string(),
            message: m.to_string(),
        };
        let s = spec.trim();
        let (pmu, rest) = s
            .split_once('/')
            .ok_or_else(|| bad("expected PMU/EVENT[,TERM=VALUE...]/"))?;
        let body = rest.strip_suffix('/').unwrap_or(rest);
        if pmu.is_empty() {
            return Err(bad("missing PMU name before '/'"));
        }
        if body.contains('/') {
            return Err(bad("one event per PMU/.../ block"));
        }
        let mut terms = Vec::new();
        for part in body.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(bad("empty term"));
            }
            match part.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                    terms.push((k.trim().to_string(), Some(v.trim().to_string())))
                }
                Some(_) => return Err(bad(&format!("{part:?}: expected TERM=VALUE"))),
                None => terms.push((part.to_string(), None)),
            }
        }
        if terms.is_empty() {
            return Err(bad("no event or terms between the slashes"));
        }
        Ok(EventSpec {
            pmu: pmu.to_string(),
            terms,
        })
    }

    /// Resolve against the discovered PMUs: aliases expand to their terms, terms are packed into
    /// their config fields, `config`/`config1`/`config2`/`config3` set whole words, and every
    /// `?` parameter of the alias must be given.
    pub fn resolve(&self, pmus: &[Pmu]) -> Result<ResolvedEvent, PmuError> {
        let spec_text = self.to_string();
        let pmu = pmus
            .iter()
            .find(|p| p.name == self.pmu)
            .ok_or_else(|| PmuError::UnknownPmu {
                name: self.pmu.clone(),
                known: pmus.iter().map(|p| p.name.clone()).collect(),
            })?;
        let unknown = |t: &str| {
            let mut known: Vec<String> = pmu.events.iter().map(|e| e.name.clone()).collect();
            known.extend(pmu.formats.iter().map(|f| format!("{}=", f.name)));
            PmuError::UnknownEvent {
                pmu: pmu.name.clone(),
                event: t.to_string(),
                known,
            }
        };
        // Terms in application order: alias terms first, then the user's (which override).
        let mut alias = None;
        let mut user: Vec<(String, u64)> = Vec::new();
        for (k, v) in &self.terms {
            match v {
                None if pmu.format(k).is_none() && ConfigField::from_name(k).is_none() => {
                    let a = pmu.event(k).ok_or_else(|| unknown(k))?;
                    if alias.is_some() {
                        return Err(PmuError::BadSpec {
                            spec: spec_text.clone(),
                            message: format!("two events in one PMU block ({k})"),
                        });
                    }
                    alias = Some(a);
                }
                None => user.push((k.clone(), 1)),
                Some(val) => {
                    let n = parse_u64(val).ok_or_else(|| PmuError::BadSpec {
                        spec: spec_text.clone(),
                        message: format!("{k}={val}: not a number (decimal or 0x hex)"),
                    })?;
                    user.push((k.clone(), n));
                }
            }
        }
        let mut config = [0u64; 4];
        let mut apply = |k: &str, n: u64| -> Result<(), PmuError> {
            if let Some(f) = ConfigField::from_name(k) {
                config[f.index()] = n;
                return Ok(());
            }
            let term = pmu.format(k).ok_or_else(|| unknown(k))?;
            let word = &mut config[term.field.index()];
            *word = term.pack(*word, n).ok_or_else(|| PmuError::BadSpec {
                spec: spec_text.clone(),
                message: format!(
                    "{k}={n:#x} does not fit {} ({} bits, at most {:#x})",
                    term.describe(),
                    term.width(),
                    term.max_value()
                ),
            })?;
            Ok(())
        };
        if let Some(a) = alias {
            let mut missing = Vec::new();
            for (k, v) in &a.terms {
                match v {
                    TermValue::Value(n) => apply(k, *n)?,
                    TermValue::Required if !user.iter().any(|(u, _)| u == k) => missing.push(k.clone()),
                    TermValue::Required => {}
                }
            }
            if !missing.is_empty() {
                return Err(PmuError::MissingParams {
                    pmu: pmu.name.clone(),
                    event: a.name.clone(),
                    params: missing,
                });
            }
        }
        for (k, n) in &user {
            apply(k, *n)?;
        }
        Ok(ResolvedEvent {
            pmu: pmu.name.clone(),
            type_id: pmu.type_id,
            event: alias.map(|a| a.name.clone()),
            config,
            scale: alias.and_then(|a| a.scale),
            unit: alias.and_then(|a| a.unit.clone()),
            cpumask: pmu.cpumask.clone(),
        })
    }
}

/// True when `name` is an instance of `base`: `base_<suffix>` where the suffix is hex digits,
/// optionally followed by more `_`-separated parts (`nvidia_pcie_pmu_0_rc_1`).
fn is_instance(name: &str, base: &str) -> bool {
    name.strip_prefix(base)
        .and_then(|r| r.strip_prefix('_'))
        .and_then(|r| r.split('_').next())
        .is_some_and(|first| !first.is_empty() && first.chars().all(|c| c.is_ascii_hexdigit()))
}

impl EventSpec {
    /// Resolve against the PMU named exactly, or else against every instance `<pmu>_<hex>...`.
    pub fn resolve_all(&self, pmus: &[Pmu]) -> Result<Vec<ResolvedEvent>, PmuError> {
        if pmus.iter().any(|p| p.name == self.pmu) {
            return Ok(vec![self.resolve(pmus)?]);
        }
        let instances: Vec<&Pmu> = pmus.iter().filter(|p| is_instance(&p.name, &self.pmu)).collect();
        if instances.is_empty() {
            return Err(PmuError::UnknownPmu {
                name: self.pmu.clone(),
                known: pmus.iter().map(|p| p.name.clone()).collect(),
            });
        }
        instances
            .into_iter()
            .map(|p| {
                EventSpec {
                    pmu: p.name.clone(),
                    terms: self.terms.clone(),
                }
                .resolve(pmus)
            })
            .collect()
    }
}

impl std::fmt::Display for EventSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t: Vec<String> = self
            .terms
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect();
        write!(f, "{}/{}/", self.pmu, t.join(","))
    }
}

/// Parse and resolve in one step.
pub fn resolve(spec: &str, pmus: &[Pmu]) -> Result<ResolvedEvent, PmuError> {
    EventSpec::parse(spec)?.resolve(pmus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax() {
        let s = EventSpec::parse("dwc_rootport_3018/rx_memory_read,lane=4/").unwrap();
        assert_eq!(s.pmu, "dwc_rootport_3018");
        assert_eq!(
            s.terms,
            vec![("rx_memory_read".into(), None), ("lane".into(), Some("4".into()))]
        );
        assert_eq!(s.to_string(), "dwc_rootport_3018/rx_memory_read,lane=4/");
        assert!(EventSpec::parse("cpu-cycles").is_err());
        assert!(EventSpec::parse("/x/").is_err());
        assert!(EventSpec::parse("p//").is_err());
        assert!(EventSpec::parse("p/a,,b/").is_err());
        assert!(EventSpec::parse("p/a=/").is_err());
        assert!(EventSpec::parse("p/a/b/").is_err());
    }

    #[test]
    fn instances() {
        assert!(is_instance("dwc_rootport_13018", "dwc_rootport"));
        assert!(is_instance("nvidia_pcie_pmu_0_rc_1", "nvidia_pcie_pmu"));
        assert!(is_instance("uncore_iio_free_running_0", "uncore_iio_free_running"));
        assert!(!is_instance("uncore_iio_free_running_0", "uncore_iio"));
        assert!(!is_instance("dwc_rootport_", "dwc_rootport"));
        assert!(!is_instance("dwc_rootportx_1", "dwc_rootport"));
    }
}
