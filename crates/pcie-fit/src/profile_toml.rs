//! A host profile written back as TOML the loader reads, each key with its comment: the fitted
//! ones say which measurements fixed them. Also the way back, through the loader's checks, so
//! every candidate a fit simulates is a profile a user could have written.

use pcie_sim::{HostProfile, ProfileError};
use serde_json::{Map, Value};

/// TOML text of `profile` (its serde value), `header` as opening comment lines, `comment`
/// giving the comment of a dotted key (a line also carries the comments of keys inside it).
pub fn to_toml(profile: &Value, header: &[String], comment: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    for h in header {
        out.push_str(&format!("# {h}\n"));
    }
    if let Value::Object(o) = profile {
        table(&mut out, "", o, comment);
    }
    out
}

/// Parses `text` as a host profile with the loader's checks (`file` names it in errors).
pub fn from_toml(file: &str, text: &str) -> Result<HostProfile, ProfileError> {
    HostProfile::parse(file, text)
}

/// The serde value of a profile, written as TOML and read back with every check: the
/// candidate the simulator gets.
pub fn checked(profile: &Value) -> Result<HostProfile, ProfileError> {
    from_toml("candidate", &to_toml(profile, &[], &|_| None))
}

/// Written on its key's line: a number, string or list of them, or (below the top level, where
/// every object is a `[table]`) an object of such values, as an inline table.
fn is_leaf(v: &Value, top: bool) -> bool {
    match v {
        Value::Object(o) => !top && o.values().all(|x| !x.is_object() && !x.is_array()),
        Value::Array(a) => a.iter().all(|x| !x.is_object()),
        _ => true,
    }
}

fn table(out: &mut String, path: &str, o: &Map<String, Value>, comment: &dyn Fn(&str) -> Option<String>) {
    let dotted = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    let top = path.is_empty();
    for (k, v) in o.iter().filter(|(_, v)| !v.is_null() && is_leaf(v, top)) {
        let line = format!("{k} = {}", value(v));
        let full = dotted(k);
        match comment(&full) {
            Some(c) => out.push_str(&format!("{line:<40} # {c}\n")),
            None => out.push_str(&format!("{line}\n")),
        }
    }
    for (k, v) in o.iter().filter(|(_, v)| !is_leaf(v, top)) {
        match v {
            Value::Object(inner) => {
                out.push_str(&format!("\n[{}]\n", dotted(k)));
                table(out, &dotted(k), inner, comment);
            }
            Value::Array(items) => {
                for item in items {
                    out.push_str(&format!("\n[[{}]]\n", dotted(k)));
                    if let Value::Object(inner) = item {
                        table(out, &dotted(k), inner, comment);
                    }
                }
            }
            _ => {}
        }
    }
}

fn value(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => format!("{:?}", n.as_f64().unwrap_or(0.0)),
        // A JSON string's escapes are all valid in a TOML basic string.
        Value::Object(o) => {
            let parts: Vec<String> = o
                .iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| format!("{k} = {}", value(x)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(value).collect::<Vec<_>>().join(", ")),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_host_round_trips_through_the_loader() {
        for name in pcie_sim::builtin_hosts() {
            let p = HostProfile::load(name).unwrap();
            let v = serde_json::to_value(&p).unwrap();
            let text = to_toml(&v, &["a header".into()], &|k| {
                (k == "memory.dram").then(|| "fitted".into())
            });
            assert!(text.starts_with("# a header\n"), "{text}");
            let back = from_toml("x.toml", &text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_eq!(back, p, "{name}");
            if p.memory.dram.mode_ns > 0.0 {
                assert!(text
                    .lines()
                    .any(|l| l.starts_with("dram = {") && l.ends_with("# fitted")));
            }
        }
    }

    #[test]
    fn a_candidate_out_of_range_is_refused_by_the_loader() {
        let mut v = serde_json::to_value(HostProfile::load("e5-2637v3").unwrap()).unwrap();
        v["root_complex"]["line_ns"] = Value::from(0.0);
        let e = checked(&v).unwrap_err().to_string();
        assert!(e.contains("root_complex.line_ns = 0"), "{e}");
    }
}
