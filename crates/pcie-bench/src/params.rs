//! What one pcie-bench test is: its kind and parameters, with pcie-bench's names and checks.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The host buffer pcie-bench allocates (64 MB); windows are carved out of it.
pub const BUFFER_BYTES: u64 = 64 << 20;
/// The device-side buffer of the NFP implementation (8 KB): device offset + size must fit.
pub const DEVICE_BUFFER_BYTES: u32 = 8192;
/// Most samples a latency test takes: every sample is held in memory (4 bytes, plus a sorted
/// copy for the statistics), so this bounds a test to 128 MB. pcie-bench's details runs take
/// 16,777,216 samples, its other latency tests 2,097,152.
pub const MAX_LATENCY_SAMPLES: u64 = 1 << 24;
/// Most DMAs a bandwidth test issues (2^32; the simulator and the time budget of a device run
/// assume no more). pcie-bench's bandwidth tests issue 8,388,608.
pub const MAX_BANDWIDTH_COUNT: u64 = 1 << 32;

/// A test kind. `name()` is the command-line name, `csv_name()` what pcie-bench writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TestKind {
    /// Device DMA read, timed from request to completion.
    LatRd,
    /// Device DMA write then read of the same address (the read times the posted write).
    LatWrRd,
    /// DMA read bandwidth with many DMAs in flight.
    BwRd,
    /// DMA write bandwidth.
    BwWr,
    /// Alternating DMA reads and writes; bandwidth per direction.
    BwRdWr,
    /// NFP direct PCIe command (BAR) read, 4-64 B.
    LatCmdRd,
    /// NFP command write then read.
    LatCmdWrRd,
}

impl TestKind {
    pub const ALL: [TestKind; 7] = [
        TestKind::LatRd,
        TestKind::LatWrRd,
        TestKind::BwRd,
        TestKind::BwWr,
        TestKind::BwRdWr,
        TestKind::LatCmdRd,
        TestKind::LatCmdWrRd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TestKind::LatRd => "LAT_RD",
            TestKind::LatWrRd => "LAT_WRRD",
            TestKind::BwRd => "BW_RD",
            TestKind::BwWr => "BW_WR",
            TestKind::BwRdWr => "BW_RDWR",
            TestKind::LatCmdRd => "LAT_CMD_RD",
            TestKind::LatCmdWrRd => "LAT_CMD_WRRD",
        }
    }

    /// The test name pcie-bench's CSV files use.
    pub fn csv_name(self) -> &'static str {
        match self {
            TestKind::LatRd => "LAT_DMA_RD",
            TestKind::LatWrRd => "LAT_DMA_WRRD",
            TestKind::BwRd => "BW_DMA_RD",
            TestKind::BwWr => "BW_DMA_WR",
            TestKind::BwRdWr => "BW_DMA_RW",
            TestKind::LatCmdRd => "LAT_CMD_RD",
            TestKind::LatCmdWrRd => "LAT_CMD_WRRD",
        }
    }

    pub fn from_csv_name(s: &str) -> Option<TestKind> {
        TestKind::ALL.into_iter().find(|k| k.csv_name() == s)
    }

    pub fn is_latency(self) -> bool {
        !self.is_bandwidth()
    }

    pub fn is_bandwidth(self) -> bool {
        matches!(self, TestKind::BwRd | TestKind::BwWr | TestKind::BwRdWr)
    }

    /// The command path (PCIe BAR accesses) rather than the DMA engines.
    pub fn is_cmd(self) -> bool {
        matches!(self, TestKind::LatCmdRd | TestKind::LatCmdWrRd)
    }

    /// pcie-bench's count for a test of this kind run on its own: samples of a latency test,
    /// DMAs of a bandwidth test.
    pub fn default_count(self) -> u64 {
        if self.is_bandwidth() {
            8_388_608
        } else {
            2_097_152
        }
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TestKind {
    type Err = ParamError;
    /// Accepts the command-line names and pcie-bench's CSV names.
    fn from_str(s: &str) -> Result<TestKind, ParamError> {
        TestKind::ALL
            .into_iter()
            .find(|k| k.name() == s || k.csv_name() == s)
            .ok_or_else(|| ParamError::one_of("test", s, &TestKind::ALL.map(|k| k.name())))
    }
}

/// Order in which units of the window are visited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Pattern {
    Seq,
    Rand,
}

impl Pattern {
    pub fn csv_name(self) -> &'static str {
        match self {
            Pattern::Seq => "Seq",
            Pattern::Rand => "Rand",
        }
    }
}

impl FromStr for Pattern {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Pattern, ParamError> {
        match s.to_ascii_lowercase().as_str() {
            "seq" => Ok(Pattern::Seq),
            "rand" | "rnd" | "random" => Ok(Pattern::Rand),
            _ => Err(ParamError::one_of("pattern", s, &["seq", "rand"])),
        }
    }
}

/// Host cache state before the test, as pcie-bench's warm/thrash steps leave it. The host's
/// caches are always thrashed first; then:
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CacheState {
    /// Nothing more: the window is not in any cache.
    Cold,
    /// The device writes 64 B to random lines over the whole 64 MB buffer (2 passes).
    DThrash,
    /// The device writes the window sequentially in 64 B (2 passes).
    DWarm,
    /// The host writes the window (rounded up to 4 KB pages) 4 times.
    HWarm,
}

impl CacheState {
    pub const ALL: [CacheState; 4] = [
        CacheState::Cold,
        CacheState::DThrash,
        CacheState::DWarm,
        CacheState::HWarm,
    ];

    pub fn csv_name(self) -> &'static str {
        match self {
            CacheState::Cold => "Cold",
            CacheState::DThrash => "DThrash",
            CacheState::DWarm => "DWarm",
            CacheState::HWarm => "HWarm",
        }
    }
}

impl FromStr for CacheState {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<CacheState, ParamError> {
        CacheState::ALL
            .into_iter()
            .find(|c| c.csv_name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ParamError::one_of("cache", s, &["cold", "dthrash", "dwarm", "hwarm"]))
    }
}

/// NUMA placement: socket of the device, of the buffer memory, of the CPU that warms/thrashes
/// (pcie-bench's sX-sY-sZ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Numa {
    pub dev: u8,
    pub mem: u8,
    pub cpu: u8,
}

impl Numa {
    /// The memory is on another socket than the device.
    pub fn remote_memory(&self) -> bool {
        self.mem != self.dev
    }
}

impl fmt::Display for Numa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dev={},mem={},cpu={}", self.dev, self.mem, self.cpu)
    }
}

impl FromStr for Numa {
    type Err = ParamError;
    /// `dev=0,mem=1,cpu=1` (any order, each key at most once; `dev` defaults to 0, `mem` and
    /// `cpu` to the device's socket) or pcie-bench's `s0-s1-s1`.
    fn from_str(s: &str) -> Result<Numa, ParamError> {
        let bad = || ParamError::new("numa", s, "must be like dev=0,mem=1,cpu=1 or s0-s1-s1 (sockets 0-7)");
        let socket = |t: &str| t.parse::<u8>().ok().filter(|n| *n < 8).ok_or_else(bad);
        if let Some(parts) = s.strip_prefix('s').map(|r| r.split("-s").collect::<Vec<_>>()) {
            if parts.len() != 3 {
                return Err(bad());
            }
            return Ok(Numa {
                dev: socket(parts[0])?,
                mem: socket(parts[1])?,
                cpu: socket(parts[2])?,
            });
        }
        let [mut dev, mut mem, mut cpu] = [None; 3];
        for kv in s.split(',') {
            let (k, v) = kv.split_once('=').ok_or_else(bad)?;
            let slot = match k.trim() {
                "dev" => &mut dev,
                "mem" => &mut mem,
                "cpu" => &mut cpu,
                _ => return Err(bad()),
            };
            if slot.replace(socket(v.trim())?).is_some() {
                return Err(ParamError::new("numa", s, format!("{} is given twice", k.trim())));
            }
        }
        let dev = dev.unwrap_or(0);
        Ok(Numa {
            dev,
            mem: mem.unwrap_or(dev),
            cpu: cpu.unwrap_or(dev),
        })
    }
}

/// IOMMU mode for the DMA buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Iommu {
    #[default]
    Off,
    /// On, with 2 MB super pages.
    Super2M,
    /// On, with 4 KB pages (super pages disabled: pcie-bench's "iommu-nosp").
    Pages4K,
}

impl Iommu {
    pub fn name(self) -> &'static str {
        match self {
            Iommu::Off => "off",
            Iommu::Super2M => "2m",
            Iommu::Pages4K => "4k",
        }
    }

    /// IO page size in bytes, `None` when translation is off.
    pub fn page_bytes(self) -> Option<u64> {
        match self {
            Iommu::Off => None,
            Iommu::Super2M => Some(2 << 20),
            Iommu::Pages4K => Some(4096),
        }
    }
}

impl FromStr for Iommu {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Iommu, ParamError> {
        match s {
            "off" => Ok(Iommu::Off),
            "2m" | "2M" => Ok(Iommu::Super2M),
            "4k" | "4K" => Ok(Iommu::Pages4K),
            _ => Err(ParamError::one_of("iommu", s, &["off", "2m", "4k"])),
        }
    }
}

/// One test point.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TestParams {
    pub kind: TestKind,
    /// Transfer size in bytes.
    pub size: u32,
    /// Bytes of the host buffer the test touches, from its start.
    pub window: u64,
    /// Bytes past a 64 B cache-line start on the host.
    pub host_offset: u32,
    /// Bytes into the device-side buffer.
    pub device_offset: u32,
    pub pattern: Pattern,
    pub cache: CacheState,
    /// Latency samples, or DMAs for bandwidth tests.
    pub count: u64,
    pub numa: Numa,
    pub iommu: Iommu,
}

impl TestParams {
    /// How error messages name a test: `LAT_RD size 64 window 8192 host offset 0 device offset
    /// 0 rand hwarm`.
    pub fn name(&self) -> String {
        format!(
            "{} size {} window {} host offset {} device offset {} {} {}",
            self.kind,
            self.size,
            self.window,
            self.host_offset,
            self.device_offset,
            self.pattern.csv_name().to_ascii_lowercase(),
            self.cache.csv_name().to_ascii_lowercase()
        )
    }

    /// pcie-bench's unit: transfer plus host offset, rounded up to 64 B cache lines.
    pub fn unit(&self) -> u64 {
        (self.size as u64 + self.host_offset as u64).next_multiple_of(64)
    }

    /// The checks pcie-bench's control program applies, plus ours. `max_transfer` is the
    /// device's DMA limit (4096 on the NFP-6000); a device with a larger one also has a device
    /// buffer that large, and its DMAs may cross 4 KB pages.
    pub fn check(&self, max_transfer: u32) -> Result<(), ParamError> {
        if self.size == 0 {
            return Err(ParamError::new("size", 0, "must be at least 1"));
        }
        if self.kind.is_cmd() {
            if !self.size.is_multiple_of(4) || self.size > 64 {
                return Err(ParamError::new(
                    "size",
                    self.size,
                    "command tests take multiples of 4 up to 64",
                ));
            }
        } else if self.size > max_transfer {
            return Err(ParamError::new(
                "size",
                self.size,
                format!("the device's DMA limit is {max_transfer} bytes"),
            ));
        }
        if !self.window.is_multiple_of(64) || self.window == 0 {
            return Err(ParamError::new(
                "window",
                self.window,
                "must be a positive multiple of 64",
            ));
        }
        if self.window > BUFFER_BYTES {
            return Err(ParamError::new(
                "window",
                self.window,
                format!("must be at most the {BUFFER_BYTES}-byte buffer"),
            ));
        }
        if self.host_offset >= 4096 {
            return Err(ParamError::new("host-offset", self.host_offset, "must be below 4096"));
        }
        let reach = self.size as u64 + self.host_offset as u64;
        // pcie-bench's DMAs stay within a 4 KB page; a device whose DMAs may be larger (a GPU's
        // copy engines) moves whole buffers, across pages.
        if reach > 4096 && max_transfer <= 4096 {
            return Err(ParamError::new(
                "host-offset",
                self.host_offset,
                format!("transfer + host offset = {reach} must not exceed 4096"),
            ));
        }
        if reach > self.window {
            return Err(ParamError::new(
                "window",
                self.window,
                format!("must hold transfer + host offset = {reach} bytes"),
            ));
        }
        let device_buffer = DEVICE_BUFFER_BYTES.max(max_transfer);
        if self.device_offset as u64 + self.size as u64 > device_buffer as u64 {
            return Err(ParamError::new(
                "device-offset",
                self.device_offset,
                format!("device offset + transfer must fit the {device_buffer}-byte device buffer"),
            ));
        }
        check_count(self.kind, self.count)
    }
}

/// A test's sample or DMA count: 1 to [`MAX_LATENCY_SAMPLES`] for latency tests, 1 to
/// [`MAX_BANDWIDTH_COUNT`] for bandwidth tests.
pub fn check_count(kind: TestKind, count: u64) -> Result<(), ParamError> {
    let (max, what) = if kind.is_latency() {
        (MAX_LATENCY_SAMPLES, "latency samples (all are held in memory)")
    } else {
        (MAX_BANDWIDTH_COUNT, "DMAs per bandwidth test")
    };
    if count == 0 || count > max {
        return Err(ParamError::new(
            "samples",
            count,
            format!("must be between 1 and {max} {what}"),
        ));
    }
    Ok(())
}

/// A run's outstanding read tags (`--tags`): 1 to the device's `max` (its profile's
/// `dma.read_tags`, 32 for the NetFPGA-SUME).
pub fn check_tags(tags: u32, max: u32, device: &str) -> Result<(), ParamError> {
    if (1..=max).contains(&tags) {
        Ok(())
    } else {
        Err(ParamError::new(
            "tags",
            tags,
            format!("must be from 1 to {max} (the read tags of {device})"),
        ))
    }
}

/// A rejected parameter: which one, the value, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    pub param: &'static str,
    pub value: String,
    pub reason: String,
}

impl ParamError {
    pub fn new(param: &'static str, value: impl fmt::Display, reason: impl Into<String>) -> ParamError {
        ParamError {
            param,
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    pub fn one_of(param: &'static str, value: impl fmt::Display, allowed: &[&str]) -> ParamError {
        ParamError::new(param, value, format!("must be one of {}", allowed.join(", ")))
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.param, self.value, self.reason)
    }
}

impl std::error::Error for ParamError {}

/// A typical test point: 64 B, 8 KB window, random, host-warm (unit tests, and the GPU's
/// dry run of its latency loop).
pub fn sample(kind: TestKind, count: u64) -> TestParams {
    TestParams {
        kind,
        size: 64,
        window: 8192,
        host_offset: 0,
        device_offset: 0,
        pattern: Pattern::Rand,
        cache: CacheState::HWarm,
        count,
        numa: Numa::default(),
        iommu: Iommu::Off,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> TestParams {
        sample(TestKind::BwRd, 1000)
    }

    #[test]
    fn default_counts_are_pcie_benchs() {
        assert_eq!(TestKind::BwRdWr.default_count(), 8_388_608);
        assert_eq!(TestKind::LatWrRd.default_count(), 2_097_152);
        assert_eq!(TestKind::LatCmdRd.default_count(), 2_097_152);
        for k in TestKind::ALL {
            let max = if k.is_bandwidth() {
                MAX_BANDWIDTH_COUNT
            } else {
                MAX_LATENCY_SAMPLES
            };
            assert!(k.default_count() <= max, "{k}");
        }
    }

    #[test]
    fn a_device_with_larger_dmas_crosses_pages_within_its_buffers() {
        let big = TestParams {
            size: 2 << 20,
            host_offset: 64,
            window: 64 << 20,
            ..base()
        };
        assert_eq!(big.check(4096).unwrap_err().param, "size");
        assert!(big.check(64 << 20).is_ok(), "a GPU's copy engines move 2 MiB");
        let e = TestParams {
            window: 2 << 20,
            ..big.clone()
        }
        .check(64 << 20)
        .unwrap_err();
        assert_eq!(e.param, "window", "{e}");
        let e = TestParams {
            device_offset: 63 << 20,
            ..big
        }
        .check(64 << 20)
        .unwrap_err();
        assert_eq!(e.param, "device-offset", "{e}");
        assert!(e.to_string().contains("67108864-byte device buffer"), "{e}");
    }

    #[test]
    fn pcie_bench_checks() {
        assert!(base().check(4096).is_ok());
        let e = TestParams {
            size: 4000,
            host_offset: 200,
            ..base()
        }
        .check(4096)
        .unwrap_err();
        assert_eq!(e.param, "host-offset");
        assert!(e.to_string().contains("4200"));
        assert_eq!(
            TestParams { window: 1000, ..base() }.check(4096).unwrap_err().param,
            "window"
        );
        assert_eq!(
            TestParams { size: 4097, ..base() }.check(4096).unwrap_err().param,
            "size"
        );
        assert_eq!(
            TestParams {
                kind: TestKind::LatCmdRd,
                size: 6,
                ..base()
            }
            .check(4096)
            .unwrap_err()
            .param,
            "size"
        );
        assert_eq!(
            TestParams {
                size: 2048,
                window: 1024,
                ..base()
            }
            .check(4096)
            .unwrap_err()
            .param,
            "window"
        );
        assert_eq!(
            TestParams {
                device_offset: 8190,
                ..base()
            }
            .check(4096)
            .unwrap_err()
            .param,
            "device-offset"
        );
    }

    #[test]
    fn counts_and_offsets_are_bounded_without_overflow() {
        // device offset + size used to wrap in u32 and pass as 63 bytes.
        let e = TestParams {
            device_offset: u32::MAX,
            ..base()
        }
        .check(4096)
        .unwrap_err();
        assert_eq!(e.param, "device-offset");
        let lat = sample(TestKind::LatRd, MAX_LATENCY_SAMPLES);
        assert!(lat.check(4096).is_ok());
        for count in [0, MAX_LATENCY_SAMPLES + 1, u64::MAX] {
            let e = TestParams { count, ..lat.clone() }.check(4096).unwrap_err();
            assert_eq!(e.param, "samples", "{count}");
            assert!(e.to_string().contains("16777216"), "{e}");
        }
        assert!(sample(TestKind::BwRd, MAX_BANDWIDTH_COUNT).check(4096).is_ok());
        let e = sample(TestKind::BwRd, MAX_BANDWIDTH_COUNT + 1).check(4096).unwrap_err();
        assert!(e.to_string().contains("4294967296"), "{e}");
    }

    #[test]
    fn tags_range_from_one_to_the_device_maximum() {
        assert!(check_tags(1, 32, "netfpga-sume").is_ok());
        assert!(check_tags(32, 32, "netfpga-sume").is_ok());
        assert_eq!(
            check_tags(33, 32, "netfpga-sume").unwrap_err().to_string(),
            "tags 33: must be from 1 to 32 (the read tags of netfpga-sume)"
        );
        assert_eq!(check_tags(0, 22, "nfp6000").unwrap_err().param, "tags");
    }

    #[test]
    fn names_round_trip() {
        for k in TestKind::ALL {
            assert_eq!(k.name().parse::<TestKind>().unwrap(), k);
            assert_eq!(TestKind::from_csv_name(k.csv_name()), Some(k));
        }
        assert_eq!("hwarm".parse::<CacheState>().unwrap(), CacheState::HWarm);
        assert_eq!("rand".parse::<Pattern>().unwrap(), Pattern::Rand);
        assert_eq!("4k".parse::<Iommu>().unwrap().page_bytes(), Some(4096));
        assert!("LAT_FOO"
            .parse::<TestKind>()
            .unwrap_err()
            .to_string()
            .contains("LAT_RD"));
    }

    #[test]
    fn numa_forms() {
        assert_eq!("s0-s1-s1".parse::<Numa>().unwrap(), Numa { dev: 0, mem: 1, cpu: 1 });
        assert_eq!(
            "dev=0,mem=1,cpu=1".parse::<Numa>().unwrap(),
            Numa { dev: 0, mem: 1, cpu: 1 }
        );
        assert!("mem=9".parse::<Numa>().is_err());
        // Memory and CPU not named are the device's socket's; naming a key twice is an error.
        assert_eq!("dev=1".parse::<Numa>().unwrap(), Numa { dev: 1, mem: 1, cpu: 1 });
        assert_eq!("dev=1,cpu=0".parse::<Numa>().unwrap(), Numa { dev: 1, mem: 1, cpu: 0 });
        assert_eq!("mem=1".parse::<Numa>().unwrap(), Numa { dev: 0, mem: 1, cpu: 0 });
        assert_eq!(
            "dev=0,mem=1,dev=1".parse::<Numa>().unwrap_err().to_string(),
            "numa dev=0,mem=1,dev=1: dev is given twice"
        );
        assert!("cpu=1,cpu=1".parse::<Numa>().is_err());
        assert!("s0-s1".parse::<Numa>().is_err());
        assert!("gpu=1".parse::<Numa>().is_err());
    }

    #[test]
    fn unit_rounds_to_cache_lines() {
        assert_eq!(
            TestParams {
                size: 64,
                host_offset: 1,
                ..base()
            }
            .unit(),
            128
        );
        assert_eq!(base().unit(), 64);
    }
}
