//! Benchmark suites as data: named groups of parameter grids, each writing one output base
//! (`<base>.csv`), expanded into tests in pcie-bench's order. Built-in suites are embedded
//! from `data/suites/`; the schema is in `docs/formats.md`.

mod bytes;
mod load;
mod plan;

pub use bytes::parse_bytes;
pub use plan::{work, BaseSummary, SuitePlan};

use crate::params::{check_count, CacheState, Iommu, Numa, Pattern, TestKind, TestParams};
use std::fmt;
use std::path::Path;

/// Built-in suites: name and TOML text.
const BUILTIN: [(&str, &str); 3] = [
    ("quick", include_str!("../../../../data/suites/quick.toml")),
    ("paper", include_str!("../../../../data/suites/paper.toml")),
    ("gpu", include_str!("../../../../data/suites/gpu.toml")),
];

/// Most tests a suite may expand to (the paper suite has a few thousand). Suites are expanded
/// into memory before they run, and a million tests is weeks of device time.
pub const MAX_SUITE_TESTS: usize = 1_000_000;

/// Largest suite file read (the paper suite is 10 KB).
pub const MAX_SUITE_BYTES: u64 = 1 << 20;

/// A loop of a group's expansion; `Group::order` nests them outermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepAxis {
    Test = 0,
    Size = 1,
    Window = 2,
    Cache = 3,
    Offset = 4,
}

impl SweepAxis {
    pub const ALL: [SweepAxis; 5] = [
        SweepAxis::Test,
        SweepAxis::Size,
        SweepAxis::Window,
        SweepAxis::Cache,
        SweepAxis::Offset,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SweepAxis::Test => "test",
            SweepAxis::Size => "size",
            SweepAxis::Window => "window",
            SweepAxis::Cache => "cache",
            SweepAxis::Offset => "offset",
        }
    }
}

/// How host and device offsets combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSweep {
    /// Every host offset with every device offset.
    Product,
    /// pcie-bench's offset tests: each host offset with device offset 0, then each device
    /// offset with host offset 0.
    HostThenDevice,
}

/// A parameter grid writing (part of) one output base.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Output base name: results go to `<base>.csv` (and `<base>_cdf.csv`, `<base>_raw.csv`).
    pub base: String,
    /// All latency or all bandwidth kinds: one CSV cannot hold both.
    pub tests: Vec<TestKind>,
    pub sizes: Vec<u32>,
    pub windows: Vec<u64>,
    pub caches: Vec<CacheState>,
    pub pattern: Pattern,
    pub host_offsets: Vec<u32>,
    pub device_offsets: Vec<u32>,
    pub offsets: OffsetSweep,
    /// Loop nesting, outermost first; a permutation of `SweepAxis::ALL`.
    pub order: [SweepAxis; 5],
    /// Samples per latency test or DMAs per bandwidth test.
    pub count: u64,
    /// Also write the latency CDF of every test to `<base>_cdf.csv`.
    pub cdf: bool,
    /// Also write every latency sample to `<base>_raw.csv`.
    pub raw: bool,
    /// Run-wide placement (`--numa`, `--iommu`), not part of suite files.
    pub numa: Numa,
    pub iommu: Iommu,
}

impl Group {
    pub fn is_latency(&self) -> bool {
        self.tests.iter().all(|t| t.is_latency())
    }

    /// Host/device offset pairs in sweep order.
    fn offset_pairs(&self) -> Vec<(u32, u32)> {
        match self.offsets {
            OffsetSweep::Product => self
                .host_offsets
                .iter()
                .flat_map(|&h| self.device_offsets.iter().map(move |&d| (h, d)))
                .collect(),
            OffsetSweep::HostThenDevice => (self.host_offsets.iter().map(|&h| (h, 0)))
                .chain(self.device_offsets.iter().map(|&d| (0, d)))
                .collect(),
        }
    }

    fn axis_len(&self, axis: SweepAxis, offsets: usize) -> usize {
        match axis {
            SweepAxis::Test => self.tests.len(),
            SweepAxis::Size => self.sizes.len(),
            SweepAxis::Window => self.windows.len(),
            SweepAxis::Cache => self.caches.len(),
            SweepAxis::Offset => offsets,
        }
    }

    /// Number of tests `expand` yields (`usize::MAX` when that does not fit).
    pub fn test_count(&self) -> usize {
        let offsets = match self.offsets {
            OffsetSweep::Product => self.host_offsets.len().saturating_mul(self.device_offsets.len()),
            OffsetSweep::HostThenDevice => self.host_offsets.len().saturating_add(self.device_offsets.len()),
        };
        self.order
            .iter()
            .fold(1usize, |n, &a| n.saturating_mul(self.axis_len(a, offsets)))
    }

    /// The tests of this group, nested as `order` says (first axis outermost).
    pub fn expand(&self) -> Vec<TestParams> {
        let offsets = self.offset_pairs();
        let lens = self.order.map(|a| self.axis_len(a, offsets.len()));
        let total: usize = lens.iter().product();
        (0..total)
            .map(|mut k| {
                let mut at = [0usize; 5]; // index along each axis, by SweepAxis::ALL position
                for pos in (0..5).rev() {
                    at[self.order[pos] as usize] = k % lens[pos];
                    k /= lens[pos];
                }
                let (host_offset, device_offset) = offsets[at[4]];
                TestParams {
                    kind: self.tests[at[0]],
                    size: self.sizes[at[1]],
                    window: self.windows[at[2]],
                    host_offset,
                    device_offset,
                    pattern: self.pattern,
                    cache: self.caches[at[3]],
                    count: self.count,
                    numa: self.numa,
                    iommu: self.iommu,
                }
            })
            .collect()
    }
}

/// A named, ordered list of groups.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    pub description: String,
    groups: Vec<Group>,
}

/// A suite that failed to load or to filter; the message names the file, key and allowed values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteError {
    pub message: String,
}

impl SuiteError {
    fn new(message: impl Into<String>) -> SuiteError {
        SuiteError {
            message: message.into(),
        }
    }
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SuiteError {}

impl Suite {
    /// Names of the embedded suites.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// An embedded suite: `quick` or `paper`.
    pub fn builtin(name: &str) -> Result<Suite, SuiteError> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            SuiteError::new(format!(
                "--suite {name}: must be one of {} or a suite file",
                Suite::builtin_names().join(", ")
            ))
        })?;
        Suite::parse(text, &format!("{name}.toml"))
    }

    /// A suite file; errors name the file as given.
    /// A file larger than a definition's 1 MiB limit, or no regular file (`/dev/zero`, a
    /// FIFO), is refused without reading on (or, for a FIFO, waiting for a writer).
    pub fn load(path: &Path) -> Result<Suite, SuiteError> {
        let text = pcie_output::read::read_text(path, pcie_output::read::Limit::DEFINITION)
            .map_err(|e| SuiteError::new(format!("{}: cannot read: {e}", path.display())))?;
        Suite::parse(&text, &path.display().to_string())
    }

    /// `--suite` semantics: a built-in name, otherwise a file path.
    pub fn from_arg(arg: &str) -> Result<Suite, SuiteError> {
        let path = Path::new(arg);
        let is_builtin = BUILTIN.iter().any(|(n, _)| *n == arg);
        if !is_builtin && (path.exists() || arg.contains('/') || arg.ends_with(".toml")) {
            Suite::load(path)
        } else {
            Suite::builtin(arg)
        }
    }

    /// Parses and validates suite TOML; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Suite, SuiteError> {
        load::parse(text, source)
    }

    /// A one-group suite for a single test from the command line; its base is the test name in
    /// lower case (`bw_rd`).
    pub fn single(params: TestParams) -> Suite {
        let group = Group {
            base: params.kind.name().to_ascii_lowercase(),
            tests: vec![params.kind],
            sizes: vec![params.size],
            windows: vec![params.window],
            caches: vec![params.cache],
            pattern: params.pattern,
            host_offsets: vec![params.host_offset],
            device_offsets: vec![params.device_offset],
            offsets: OffsetSweep::Product,
            order: SweepAxis::ALL,
            count: params.count,
            cdf: false,
            raw: false,
            numa: params.numa,
            iommu: params.iommu,
        };
        Suite {
            name: "single".into(),
            description: format!("one {} test", params.kind),
            groups: vec![group],
        }
    }

    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Output base names in run order, each once.
    pub fn bases(&self) -> Vec<&str> {
        let mut bases: Vec<&str> = Vec::new();
        for g in &self.groups {
            if bases.last() != Some(&g.base.as_str()) {
                bases.push(&g.base);
            }
        }
        bases
    }

    /// Number of tests in the suite (`usize::MAX` when that does not fit).
    pub fn test_count(&self) -> usize {
        self.groups.iter().fold(0usize, |n, g| n.saturating_add(g.test_count()))
    }

    /// `--only`: keeps the groups of the named bases, in suite order.
    pub fn only<S: AsRef<str>>(mut self, bases: &[S]) -> Result<Suite, SuiteError> {
        let known = self.bases();
        if let Some(bad) = bases.iter().map(AsRef::as_ref).find(|b| !known.contains(b)) {
            return Err(SuiteError::new(format!(
                "--only {bad}: suite \"{}\" has no such group; available: {}",
                self.name,
                known.join(", ")
            )));
        }
        self.groups.retain(|g| bases.iter().any(|b| b.as_ref() == g.base));
        Ok(self)
    }

    /// `--samples N`: every test, latency or bandwidth, details or not, uses `n` samples or
    /// DMAs; `n` must suit every group (see [`check_count`]).
    pub fn with_count(mut self, n: u64) -> Result<Suite, SuiteError> {
        for g in self.groups.iter_mut() {
            check_count(g.tests[0], n)
                .map_err(|e| SuiteError::new(format!("--{e} (group \"{}\" of suite \"{}\")", g.base, self.name)))?;
            g.count = n;
        }
        Ok(self)
    }

    /// `--numa`: places every test's buffer and CPU as given.
    pub fn with_numa(mut self, numa: Numa) -> Suite {
        self.groups.iter_mut().for_each(|g| g.numa = numa);
        self
    }

    /// `--iommu`: every test runs with this IOMMU mode.
    pub fn with_iommu(mut self, iommu: Iommu) -> Suite {
        self.groups.iter_mut().for_each(|g| g.iommu = iommu);
        self
    }

    /// Also write every latency group's CDF (`<base>_cdf.csv`) and/or raw samples
    /// (`<base>_raw.csv`), beyond what the suite asks for.
    pub fn with_outputs(mut self, cdf: bool, raw: bool) -> Suite {
        for g in self.groups.iter_mut().filter(|g| g.is_latency()) {
            g.cdf |= cdf;
            g.raw |= raw;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_outputs_apply_to_latency_groups_only() {
        let s = Suite::builtin("quick").unwrap().with_outputs(true, true);
        for g in s.groups() {
            assert_eq!((g.cdf, g.raw), (g.is_latency(), g.is_latency()), "{}", g.base);
        }
    }

    fn group() -> Group {
        Group {
            base: "g".into(),
            tests: vec![TestKind::LatRd, TestKind::LatWrRd],
            sizes: vec![64, 128],
            windows: vec![8192],
            caches: vec![CacheState::Cold, CacheState::HWarm],
            pattern: Pattern::Rand,
            host_offsets: vec![0, 1],
            device_offsets: vec![0, 2],
            offsets: OffsetSweep::HostThenDevice,
            order: SweepAxis::ALL,
            count: 10,
            cdf: false,
            raw: false,
            numa: Numa::default(),
            iommu: Iommu::Off,
        }
    }

    fn key(p: &TestParams) -> (TestKind, u32, CacheState, u32, u32) {
        (p.kind, p.size, p.cache, p.host_offset, p.device_offset)
    }

    #[test]
    fn expansion_nests_in_order() {
        let g = group();
        let tests = g.expand();
        assert_eq!(tests.len(), 2 * 2 * 2 * 4);
        assert_eq!(g.test_count(), tests.len());
        use CacheState::*;
        use TestKind::*;
        let first: Vec<_> = tests.iter().take(9).map(key).collect();
        assert_eq!(
            first,
            vec![
                (LatRd, 64, Cold, 0, 0),
                (LatRd, 64, Cold, 1, 0),
                (LatRd, 64, Cold, 0, 0),
                (LatRd, 64, Cold, 0, 2),
                (LatRd, 64, HWarm, 0, 0),
                (LatRd, 64, HWarm, 1, 0),
                (LatRd, 64, HWarm, 0, 0),
                (LatRd, 64, HWarm, 0, 2),
                (LatRd, 128, Cold, 0, 0),
            ]
        );
        assert_eq!(key(&tests[31]), (LatWrRd, 128, HWarm, 0, 2));

        let g = Group {
            order: [
                SweepAxis::Cache,
                SweepAxis::Offset,
                SweepAxis::Test,
                SweepAxis::Size,
                SweepAxis::Window,
            ],
            offsets: OffsetSweep::Product,
            ..group()
        };
        let tests = g.expand();
        assert_eq!(tests.len(), 2 * 2 * 2 * 4);
        assert_eq!(key(&tests[0]), (LatRd, 64, Cold, 0, 0));
        assert_eq!(key(&tests[1]), (LatRd, 128, Cold, 0, 0));
        assert_eq!(key(&tests[2]), (LatWrRd, 64, Cold, 0, 0));
        assert_eq!(key(&tests[4]), (LatRd, 64, Cold, 0, 2));
        assert_eq!(key(&tests[16]), (LatRd, 64, HWarm, 0, 0));
    }

    #[test]
    fn huge_expansions_count_without_overflow() {
        let g = Group {
            sizes: vec![64; 1 << 20],
            windows: vec![8192; 1 << 20],
            caches: vec![CacheState::Cold; 1 << 20],
            host_offsets: vec![0; 1 << 20],
            device_offsets: vec![0; 1 << 20],
            offsets: OffsetSweep::Product,
            ..group()
        };
        assert_eq!(g.test_count(), usize::MAX);
        assert_eq!(group().test_count(), 32);
    }

    #[test]
    fn samples_option_respects_each_group_kind() {
        let s = Suite::builtin("quick").unwrap();
        let e = s.clone().with_count(1 << 25).unwrap_err().to_string();
        assert!(
            e.starts_with("--samples 33554432: must be between 1 and 16777216"),
            "{e}"
        );
        let e = s.clone().with_count(0).unwrap_err().to_string();
        assert!(e.starts_with("--samples 0: must be between 1 and"), "{e}");
        assert!(s.with_count(1 << 24).is_ok());
    }

    #[test]
    fn single_test_suite() {
        let p = group().expand()[0].clone();
        let s = Suite::single(p.clone());
        assert_eq!(s.bases(), vec!["lat_rd"]);
        assert_eq!(s.groups()[0].expand(), vec![p]);
    }
}
