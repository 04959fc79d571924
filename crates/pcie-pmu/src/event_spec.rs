//! perf's event syntax, `pmu/event,term=val,.../` or `pmu/config=0x..,term=val/`, resolved
//! against a PMU's `format/` and `events/` into `perf_event_attr` config values.

use crate::error::PmuError;
use crate::event_sources::parse_u64;
use crate::pmu::{ConfigField, Pmu, TermValue};
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
        crate::event_sources::check_len(spec).map_err(|message| PmuError::BadSpec {
            spec: format!("{}...", spec.chars().take(40).collect::<String>()),
            message,
        })?;
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
        let mut terms: Vec<(String, Option<String>)> = Vec::new();
        for part in body.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(bad("empty term"));
            }
            let (k, v) = match part.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => (k.trim(), Some(v.trim().to_string())),
                Some(_) => return Err(bad(&format!("{part:?}: expected TERM=VALUE"))),
                None => (part, None),
            };
            if terms.iter().any(|(t, _)| t == k) {
                return Err(bad(&format!("{k}: given twice")));
            }
            terms.push((k.to_string(), v));
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
        // `from`: the alias whose events/ file sets the term, or None for the user's own.
        let mut apply = |k: &str, n: u64, from: Option<&str>| -> Result<(), PmuError> {
            if let Some(f) = ConfigField::from_name(k) {
                config[f.index()] = n;
                return Ok(());
            }
            let term = pmu.format(k).ok_or_else(|| unknown(k))?;
            let word = &mut config[term.field.index()];
            *word = term.pack(*word, n).ok_or_else(|| PmuError::BadSpec {
                spec: spec_text.clone(),
                message: format!(
                    "{}{k}={n:#x} does not fit {} ({} bits, at most {:#x})",
                    from.map(|a| format!("events/{a} sets ")).unwrap_or_default(),
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
                    TermValue::Value(n) => apply(k, *n, Some(&a.name))?,
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
            apply(k, *n, None)?;
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

/// One event of an `-e` list and, when it was written inside `{...}`, which group (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListItem {
    pub text: String,
    pub group: Option<usize>,
}

/// Split an `-e` list at the commas that separate events, not those between an event's slashes;
/// events inside `{...}` belong to one group, as in `perf stat -e '{a,b}'`. Groups do not nest,
/// an empty event (`a,,b`) or group (`{}`) is refused, and nothing may follow a group's `}` but a
/// comma. The message says what is wrong, without the list (the caller names where it came from).
pub fn split_event_list(text: &str) -> Result<Vec<ListItem>, String> {
    let mut out = Vec::new();
    let mut groups = 0;
    // Between an event's slashes, braces and commas are the event's own.
    let mut inside = false;
    let mut open: Option<usize> = None;
    // Just after a `}`: the group's last event is out, only a separator may follow.
    let mut closed = false;
    // Where the current event's text begins (the separators are ASCII, so byte offsets).
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'/' => inside = !inside,
            b'{' if !inside && open.is_none() && text[start..i].trim().is_empty() && !closed => {
                groups += 1;
                open = Some(groups);
                start = i + 1;
            }
            b'{' if !inside => return Err("a group opens inside a group or an event; groups do not nest".into()),
            b'}' if !inside && open.is_some() => {
                let cur = text[start..i].trim();
                if cur.is_empty() && out.last().is_none_or(|l: &ListItem| l.group != open) {
                    return Err("empty group {}".into());
                }
                end_item(&mut out, cur, open.take(), false)?;
                closed = true;
                start = i + 1;
            }
            b'}' if !inside => return Err("'}' closes no group".into()),
            b',' if !inside => {
                end_item(&mut out, text[start..i].trim(), open, closed)?;
                closed = false;
                start = i + 1;
            }
            _ => {}
        }
    }
    if open.is_some() {
        return Err("a group is not closed with '}'".into());
    }
    end_item(&mut out, text[start..].trim(), None, closed)?;
    Ok(out)
}

/// An event's text (trimmed) ends at a separator, a `}` or the end; after a `}` it must be empty.
fn end_item(out: &mut Vec<ListItem>, text: &str, group: Option<usize>, closed: bool) -> Result<(), String> {
    match (closed, text.is_empty()) {
        (false, true) => return Err("empty event between commas".into()),
        (false, false) => out.push(ListItem {
            text: text.to_string(),
            group,
        }),
        (true, true) => {}
        (true, false) => return Err(format!("{text:?} after a group: modifiers on groups are not supported")),
    }
    Ok(())
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
        let long = format!("p/{}/", "x".repeat(5000));
        let e = EventSpec::parse(&long).unwrap_err().to_string();
        assert!(e.len() < 200 && e.contains("5003 bytes: longer than 4096"), "{e}");
        let twice = EventSpec::parse("p/ev,lane=1,lane=2/").unwrap_err().to_string();
        assert!(twice.contains("lane: given twice"), "{twice}");
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

    #[test]
    fn lists_split_at_commas_outside_slashes_and_braces_make_groups() {
        let split = |t: &str| -> Vec<(String, Option<usize>)> {
            split_event_list(t)
                .unwrap()
                .into_iter()
                .map(|p| (p.text, p.group))
                .collect()
        };
        let ungrouped =
            |v: &[&str]| -> Vec<(String, Option<usize>)> { v.iter().map(|t| (t.to_string(), None)).collect() };
        assert_eq!(
            split("dwc_rootport_3018/rx_memory_read,lane=4/,software/cpu-clock/"),
            ungrouped(&["dwc_rootport_3018/rx_memory_read,lane=4/", "software/cpu-clock/"])
        );
        assert_eq!(split("msr/tsc/"), ungrouped(&["msr/tsc/"]));
        assert_eq!(
            split("x/y/, {a/b,c=1/, d/e/} ,{f/g/},h/i/"),
            vec![
                ("x/y/".to_string(), None),
                ("a/b,c=1/".to_string(), Some(1)),
                ("d/e/".to_string(), Some(1)),
                ("f/g/".to_string(), Some(2)),
                ("h/i/".to_string(), None),
            ]
        );
        assert_eq!(
            split("a/{b}/"),
            ungrouped(&["a/{b}/"]),
            "braces inside an event's slashes are its own"
        );
        for (bad, says) in [
            ("{a/b/,c/d/", "not closed"),
            ("a/b/}", "closes no group"),
            ("{a/b/,{c/d/}}", "do not nest"),
            ("{{a/b/}}", "do not nest"),
            ("x{a/b/}", "do not nest"),
            ("{a/b/}:u", "modifiers on groups"),
            ("a/b/,,c/d/", "empty event between commas"),
            ("a/b/,", "empty event between commas"),
            ("", "empty event between commas"),
            ("{a/b/,}", "empty event between commas"),
            ("{}", "empty group {}"),
            ("a/b/,{ }", "empty group {}"),
            ("}{", "closes no group"),
        ] {
            let e = split_event_list(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn long_lists_split_in_one_pass() {
        let list = vec!["software/cpu-clock/"; 10_000].join(",");
        assert_eq!(split_event_list(&list).unwrap().len(), 10_000);
        let groups = vec!["{a/b/,c/d/}"; 5_000].join(",");
        let items = split_event_list(&groups).unwrap();
        assert_eq!((items.len(), items[9_999].group), (10_000, Some(5_000)));
    }
}
