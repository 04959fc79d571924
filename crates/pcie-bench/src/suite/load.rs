//! Suite TOML → `Suite`, validated key by key so every error names the file, the group, the
//! key and what is allowed.

use super::{parse_bytes, Group, OffsetSweep, Suite, SuiteError, SweepAxis, MAX_SUITE_TESTS};
use crate::params::{CacheState, Iommu, Numa, Pattern, TestKind, MAX_BANDWIDTH_COUNT, MAX_LATENCY_SAMPLES};
use std::fmt::Display;
use std::str::FromStr;
use toml::{Table, Value};

const SUITE_KEYS: [&str; 5] = ["name", "description", "latency_count", "bandwidth_count", "group"];
const GROUP_KEYS: [&str; 13] = [
    "base",
    "tests",
    "sizes",
    "windows",
    "caches",
    "pattern",
    "host_offsets",
    "device_offsets",
    "offsets",
    "order",
    "count",
    "cdf",
    "raw",
];
/// pcie-bench's transfer limit (NFP-6000); backends with a lower limit re-check at run time.
const MAX_TRANSFER: u32 = 4096;

pub(super) fn parse(text: &str, source: &str) -> Result<Suite, SuiteError> {
    let table: Table = text
        .parse()
        .map_err(|e: toml::de::Error| SuiteError::new(format!("{source}: {}", e.to_string().trim_end())))?;
    let top = Keys {
        prefix: source.to_string(),
        table: &table,
    };
    top.only(&SUITE_KEYS)?;
    let name = top
        .string("name")?
        .ok_or_else(|| top.err("name", "missing"))?
        .to_string();
    let description = top.string("description")?.unwrap_or_default().to_string();
    let latency_count = top.count("latency_count", MAX_LATENCY_SAMPLES)?;
    let bandwidth_count = top.count("bandwidth_count", MAX_BANDWIDTH_COUNT)?;
    let tables = match table.get("group") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) | None => return Err(top.err("group", "missing: a suite needs at least one [[group]]")),
        Some(v) => return Err(top.err("group", format!("expected [[group]] tables, found {}", v.type_str()))),
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut tests = 0;
    for (i, item) in tables.iter().enumerate() {
        let Value::Table(t) = item else {
            return Err(top.err(
                "group",
                format!("entry {} is a {}, not a table", i + 1, item.type_str()),
            ));
        };
        let g = group(t, i, source, latency_count, bandwidth_count, tests)?;
        check_base(&groups, &g, source)?;
        tests += g.test_count();
        groups.push(g);
    }
    check_outputs(&groups, source)?;
    Ok(Suite {
        name,
        description,
        groups,
    })
}

/// One `[[group]]`; `earlier` tests come before it in the suite.
fn group(
    t: &Table,
    index: usize,
    source: &str,
    lat: Option<u64>,
    bw: Option<u64>,
    earlier: usize,
) -> Result<Group, SuiteError> {
    let anonymous = Keys {
        prefix: format!("{source}: group #{}", index + 1),
        table: t,
    };
    let base = anonymous
        .string("base")?
        .ok_or_else(|| anonymous.err("base", "missing: every group names its output base"))?;
    let k = Keys {
        prefix: format!("{source}: group \"{base}\""),
        table: t,
    };
    if base.is_empty() || !base.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
        return Err(k.err("base", format!("\"{base}\" must be letters, digits, '_', '-' or '.'")));
    }
    k.only(&GROUP_KEYS)?;

    let test_names = TestKind::ALL.map(|t| t.name());
    let tests = k.required_list("tests", |v| one_of::<TestKind>(v, &test_names))?;
    if tests.iter().any(|t| t.is_latency()) && tests.iter().any(|t| t.is_bandwidth()) {
        return Err(k.err(
            "tests",
            "mixes latency and bandwidth tests; one output base holds one kind",
        ));
    }
    let latency = tests[0].is_latency();
    let sizes = k.required_list("sizes", |v| int(v).and_then(positive_u32))?;
    let windows = k.required_list("windows", window)?;
    let caches = k.required_list("caches", |v| {
        one_of::<CacheState>(v, &["cold", "dthrash", "dwarm", "hwarm"])
    })?;
    let pattern = k.parsed("pattern", &["seq", "rand"])?.unwrap_or(Pattern::Seq);
    let offset = |v: &Value| int(v).and_then(|n| u32::try_from(n).map_err(|_| format!("{n} is too large")));
    let host_offsets = k.list("host_offsets", offset)?.unwrap_or(vec![0]);
    let device_offsets = k.list("device_offsets", offset)?.unwrap_or(vec![0]);
    let offsets = match k.string("offsets")? {
        None | Some("product") => OffsetSweep::Product,
        Some("host-then-device") => OffsetSweep::HostThenDevice,
        Some(other) => {
            return Err(k.err(
                "offsets",
                format!("\"{other}\" is not one of product, host-then-device"),
            ));
        }
    };
    let order = match k.list("order", one_of_axis)? {
        None => SweepAxis::ALL,
        Some(list) => {
            if list.len() != 5 || SweepAxis::ALL.iter().any(|a| !list.contains(a)) {
                return Err(k.err(
                    "order",
                    "must name each of test, size, window, cache, offset exactly once",
                ));
            }
            [list[0], list[1], list[2], list[3], list[4]]
        }
    };
    let (default_count, default_key, max_count) = if latency {
        (lat, "latency_count", MAX_LATENCY_SAMPLES)
    } else {
        (bw, "bandwidth_count", MAX_BANDWIDTH_COUNT)
    };
    let count = k
        .count("count", max_count)?
        .or(default_count)
        .ok_or_else(|| k.err("count", format!("missing, and the suite sets no {default_key}")))?;
    let cdf = k.boolean("cdf")?.unwrap_or(false);
    let raw = k.boolean("raw")?.unwrap_or(false);
    for (key, set) in [("cdf", cdf), ("raw", raw)] {
        if set && !latency {
            return Err(k.err(key, "only latency groups have samples to write"));
        }
    }

    let g = Group {
        base: base.to_string(),
        tests,
        sizes,
        windows,
        caches,
        pattern,
        host_offsets,
        device_offsets,
        offsets,
        order,
        count,
        cdf,
        raw,
        numa: Numa::default(),
        iommu: Iommu::Off,
    };
    let total = earlier.saturating_add(g.test_count());
    if total > MAX_SUITE_TESTS {
        let n = if total == usize::MAX {
            "more than 2^64".to_string()
        } else {
            total.to_string()
        };
        return Err(k.err(
            "tests",
            format!("the suite expands to {n} tests up to this group; at most {MAX_SUITE_TESTS} are allowed"),
        ));
    }
    // A test's checks depend on its kind, size, window and offsets only: each distinct
    // combination is checked once, however long the lists and whatever the cache states.
    let distinct = Group {
        tests: sorted_distinct(&g.tests),
        sizes: sorted_distinct(&g.sizes),
        windows: sorted_distinct(&g.windows),
        caches: g.caches[..1].to_vec(),
        host_offsets: sorted_distinct(&g.host_offsets),
        device_offsets: sorted_distinct(&g.device_offsets),
        ..g.clone()
    };
    for p in distinct.expand() {
        p.check(MAX_TRANSFER).map_err(|e| {
            SuiteError::new(format!(
                "{}: test {} size {} window {} host offset {} device offset {}: {e}",
                k.prefix, p.kind, p.size, p.window, p.host_offset, p.device_offset
            ))
        })?;
    }
    Ok(g)
}

/// A base's groups must be adjacent (its CSV is written in run order) and agree on what they
/// write.
fn check_base(earlier: &[Group], g: &Group, source: &str) -> Result<(), SuiteError> {
    let Some(pos) = earlier.iter().position(|e| e.base == g.base) else {
        return Ok(());
    };
    let prefix = format!("{source}: group \"{}\"", g.base);
    if earlier[pos + 1..].iter().any(|e| e.base != g.base) {
        return Err(SuiteError::new(format!(
            "{prefix}: base: another group with this base is not adjacent; put a base's groups together"
        )));
    }
    let first = &earlier[pos];
    if first.is_latency() != g.is_latency() || first.cdf != g.cdf || first.raw != g.raw {
        return Err(SuiteError::new(format!(
            "{prefix}: groups sharing a base must agree on latency/bandwidth tests, cdf and raw"
        )));
    }
    Ok(())
}

/// Every output file name is unique (e.g. no base called `x_cdf` next to a `cdf = true` base `x`).
fn check_outputs(groups: &[Group], source: &str) -> Result<(), SuiteError> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for g in groups {
        if seen.iter().any(|(n, b)| *n == g.base && *b == g.base) {
            continue;
        }
        let mut names = vec![g.base.clone()];
        names.extend(g.cdf.then(|| format!("{}_cdf", g.base)));
        names.extend(g.raw.then(|| format!("{}_raw", g.base)));
        for name in names {
            if let Some((_, other)) = seen.iter().find(|(n, _)| *n == name) {
                return Err(SuiteError::new(format!(
                    "{source}: group \"{}\": output {name}.csv is also written by group \"{other}\"",
                    g.base
                )));
            }
            seen.push((name, &g.base));
        }
    }
    Ok(())
}

/// One TOML table being read, with the error prefix that locates it.
struct Keys<'a> {
    prefix: String,
    table: &'a Table,
}

impl Keys<'_> {
    fn err(&self, key: &str, msg: impl Display) -> SuiteError {
        SuiteError::new(format!("{}: {key}: {msg}", self.prefix))
    }

    fn only(&self, allowed: &[&str]) -> Result<(), SuiteError> {
        match self.table.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(self.err(k, format!("unknown key; allowed keys are {}", allowed.join(", ")))),
            None => Ok(()),
        }
    }

    fn string(&self, key: &str) -> Result<Option<&str>, SuiteError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(key, format!("expected a string, found {}", v.type_str()))),
        }
    }

    fn boolean(&self, key: &str) -> Result<Option<bool>, SuiteError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(key, format!("expected true or false, found {}", v.type_str()))),
        }
    }

    /// A sample or DMA count: an integer from 1 to `max`.
    fn count(&self, key: &str, max: u64) -> Result<Option<u64>, SuiteError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(v) => match int(v) {
                Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
                Ok(n) => Err(self.err(key, format!("{n} must be between 1 and {max}"))),
                Err(e) => Err(self.err(key, e)),
            },
        }
    }

    /// A string naming one value of `T`.
    fn parsed<T: FromStr>(&self, key: &str, allowed: &[&str]) -> Result<Option<T>, SuiteError> {
        self.table
            .get(key)
            .map(|v| one_of(v, allowed).map_err(|e| self.err(key, e)))
            .transpose()
    }

    fn list<T>(&self, key: &str, item: impl Fn(&Value) -> Result<T, String>) -> Result<Option<Vec<T>>, SuiteError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) if items.is_empty() => Err(self.err(key, "must not be empty")),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| item(v).map_err(|e| self.err(key, e)))
                .collect::<Result<Vec<T>, _>>()
                .map(Some),
            Some(v) => Err(self.err(key, format!("expected an array, found {}", v.type_str()))),
        }
    }

    fn required_list<T>(&self, key: &str, item: impl Fn(&Value) -> Result<T, String>) -> Result<Vec<T>, SuiteError> {
        self.list(key, item)?.ok_or_else(|| self.err(key, "missing"))
    }
}

fn int(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(n) => u64::try_from(*n).map_err(|_| format!("{n} is negative")),
        other => Err(format!("expected an integer, found {}", other.type_str())),
    }
}

fn positive_u32(n: u64) -> Result<u32, String> {
    u32::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{n} must be between 1 and {}", u32::MAX))
}

/// A window: bytes as an integer, or a string such as "8K" or "1.5M".
fn window(v: &Value) -> Result<u64, String> {
    match v {
        Value::String(s) => parse_bytes(s),
        other => int(other),
    }
}

fn one_of<T: FromStr>(v: &Value, allowed: &[&str]) -> Result<T, String> {
    let Value::String(s) = v else {
        return Err(format!("expected a string, found {}", v.type_str()));
    };
    s.parse()
        .map_err(|_| format!("\"{s}\" is not one of {}", allowed.join(", ")))
}

fn sorted_distinct<T: Ord + Clone>(items: &[T]) -> Vec<T> {
    let mut v = items.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

fn one_of_axis(v: &Value) -> Result<SweepAxis, String> {
    let names = SweepAxis::ALL.map(SweepAxis::name);
    match v {
        Value::String(s) => SweepAxis::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("\"{s}\" is not one of {}", names.join(", "))),
        other => Err(format!("expected a string, found {}", other.type_str())),
    }
}
