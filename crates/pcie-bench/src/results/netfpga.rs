//! pciebench-netfpga's output, read into our rows so its runs overlay ours. Its sweep script
//! (`HOST/scripts/test.sh`) writes `real_time_{bw,lat}_{R,W,RW}_<epoch>.dat`: a `0 0 0 0`
//! line, then the `benchmark` tool's lines `pattern,descriptor,size,value` (Gb/s or ns) with
//! the commas turned to spaces. The direction is only in the name: `R` is the device writing
//! host memory (BW_WR), `W` the device reading it (BW_RD, LAT_RD), `RW` a write then a read
//! (BW_RDWR, LAT_WRRD). Bandwidth lands in `bw_dma_sz_sweep`, latency in `lat_dma_sizes`.

use super::bandwidth::BandwidthRow;
use super::key::RowKey;
use super::latency::LatencyRow;
use super::result_file::{ResultData, ResultFile};
use super::ResultsError;
use crate::backend::LatencySamples;
use crate::params::{CacheState, Pattern, TestKind};
use crate::stats::SortedLatencies;
use std::collections::BTreeMap;
use std::path::Path;

/// The host buffer of the reference tool: one 1 GB huge page. `SEQ` walks it and `RAN`'s
/// window, given on its command line, is not in the output: their rows carry this window.
const BUFFER: u64 = 1 << 30;
/// A system page: the tool keeps a `FIX` transfer within one.
const PAGE: u64 = 4096;
/// TLPs of one bandwidth descriptor (`DEFAULT_NUMBER_TLPS`, 512 × 512).
const BANDWIDTH_TLPS: u64 = 512 * 512;
/// The tool's bytes per TLP in its bandwidth arithmetic: `MAX_PAYLOAD` for writes,
/// `MAX_READ_REQUEST_SIZE` for reads.
const WRITE_TLP: u64 = 256;
const READ_TLP: u64 = 4096;
/// Figures read: a latency of 1 ns (rows carry whole ns: less would be a row of 0 ns) to 1 s,
/// a bandwidth of 1 kb/s (so a descriptor's time stays finite, however many are pooled: the
/// largest takes 8.6e15 ns at 1 kb/s) to 1 Pb/s; any device is far inside both.
const LATENCY_NS: (f64, f64) = (1.0, 1e9);
const GBPS: (f64, f64) = (1e-6, 1e6);

/// What a file name says: bandwidth or latency, and the direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DatFile {
    bandwidth: bool,
    direction: &'static str,
}

impl DatFile {
    /// `real_time_{bw,lat}_{R,W,RW}_<epoch>.dat`; `None` for any other name.
    pub(super) fn recognise(path: &Path) -> Option<DatFile> {
        let name = path.file_name()?.to_str()?;
        let rest = name.strip_prefix("real_time_")?.strip_suffix(".dat")?;
        let (test, rest) = rest.split_once('_')?;
        let (direction, epoch) = rest.split_once('_')?;
        if epoch.is_empty() || !epoch.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let direction = ["R", "W", "RW"].into_iter().find(|d| *d == direction)?;
        let bandwidth = match test {
            "bw" => true,
            "lat" => false,
            _ => return None,
        };
        Some(DatFile { bandwidth, direction })
    }

    fn kind(self) -> Option<TestKind> {
        match (self.bandwidth, self.direction) {
            (true, "R") => Some(TestKind::BwWr),
            (true, "W") => Some(TestKind::BwRd),
            (true, _) => Some(TestKind::BwRdWr),
            (false, "W") => Some(TestKind::LatRd),
            (false, "RW") => Some(TestKind::LatWrRd),
            (false, _) => None,
        }
    }

    /// Bytes one bandwidth descriptor of `size`-byte transfers moves, and its transfers, as
    /// the tool counts them: whole transfers of its TLPs, then the TLPs left over at full size.
    fn descriptor(self, size: u32) -> (u64, u64) {
        let tlp = if self.direction == "W" { READ_TLP } else { WRITE_TLP };
        let size = size as u64;
        let per_transfer = size / tlp + u64::from(!size.is_multiple_of(tlp));
        let (whole, left) = (BANDWIDTH_TLPS / per_transfer, BANDWIDTH_TLPS % per_transfer);
        (whole * size + left * tlp, whole + u64::from(left > 0))
    }
}

/// The test a line belongs to: kind, pattern and size.
type Point = (TestKind, PatternName, u32);

/// The tool's address patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum PatternName {
    Fix,
    Seq,
    Ran,
}

impl PatternName {
    fn parse(s: &str) -> Option<PatternName> {
        match s {
            "FIX" => Some(PatternName::Fix),
            "SEQ" => Some(PatternName::Seq),
            "RAN" => Some(PatternName::Ran),
            _ => None,
        }
    }

    /// Our key: a fixed address is a sequential walk of the page it is in (its offset is not
    /// in the output; the sweep script uses 0), so every size of a sweep shares a window. The sweep script warms the cache.
    fn key(self, test: TestKind, size: u32) -> RowKey {
        let (pattern, window) = match self {
            PatternName::Fix => (Pattern::Seq, (size as u64).next_multiple_of(PAGE)),
            PatternName::Seq => (Pattern::Seq, BUFFER),
            PatternName::Ran => (Pattern::Rand, BUFFER),
        };
        RowKey {
            test,
            pattern,
            cache: CacheState::HWarm,
            host_offset: 0,
            device_offset: 0,
            window,
            size,
        }
    }
}

/// The descriptors' values of every point of a set of `.dat` files.
#[derive(Debug, Default)]
pub(super) struct DatRuns {
    /// Values by point; the bandwidth ones with their file's direction.
    points: BTreeMap<Point, (DatFile, Vec<f64>)>,
}

impl DatRuns {
    /// Adds one file's lines (`file` from [`DatFile::recognise`] of `path`).
    pub(super) fn add(&mut self, path: &Path, file: DatFile, text: &str) -> Result<(), ResultsError> {
        let err = |line: usize, message: String| ResultsError {
            path: path.to_path_buf(),
            line: Some(line),
            column: None,
            message,
        };
        let Some(kind) = file.kind() else {
            return Err(ResultsError::file(
                path,
                "pciebench-netfpga has no latency test for R (device writes): expected real_time_lat_W or _RW",
            ));
        };
        for (i, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split([',', ' ', '\t']).filter(|f| !f.is_empty()).collect();
            match fields.as_slice() {
                [] | ["0", "0", "0", "0"] | ["pattern", "descriptor", "size", _] => continue,
                [pattern, descriptor, size, value] => {
                    let pattern = PatternName::parse(pattern)
                        .ok_or_else(|| err(i + 1, format!("pattern {pattern}: must be FIX, SEQ or RAN")))?;
                    descriptor
                        .parse::<u32>()
                        .map_err(|_| err(i + 1, format!("descriptor {descriptor}: must be a whole number")))?;
                    let size = size
                        .parse::<u32>()
                        .ok()
                        .filter(|s| (1..=65536).contains(s))
                        .ok_or_else(|| err(i + 1, format!("size {size}: must be 1 to 65536 bytes")))?;
                    let ((min, max), unit) = if file.bandwidth {
                        (GBPS, "Gb/s")
                    } else {
                        (LATENCY_NS, "ns")
                    };
                    let value = value
                        .parse::<f64>()
                        .ok()
                        .filter(|v| (min..=max).contains(v))
                        .ok_or_else(|| err(i + 1, format!("{value}: must be a number of {unit} from {min} to {max}")))?;
                    self.points
                        .entry((kind, pattern, size))
                        .or_insert_with(|| (file, Vec::new()))
                        .1
                        .push(value);
                }
                _ => {
                    return Err(err(
                        i + 1,
                        format!(
                            "\"{}\": expected pattern,descriptor,size,value (commas or spaces), as pciebench-netfpga writes",
                            line.trim()
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    /// The rows: `bw_dma_sz_sweep` and `lat_dma_sizes`, each point's descriptors pooled.
    pub(super) fn files(self) -> Vec<ResultFile> {
        let (mut bandwidth, mut latency) = (Vec::new(), Vec::new());
        for ((kind, pattern, size), (file, values)) in self.points {
            let key = pattern.key(kind, size);
            if file.bandwidth {
                bandwidth.push(bandwidth_row(key, file, &values));
            } else {
                latency.push(latency_row(key, &values));
            }
        }
        let mut files = Vec::new();
        if !bandwidth.is_empty() {
            files.push(ResultFile {
                base: "bw_dma_sz_sweep".into(),
                data: ResultData::Bandwidth(bandwidth),
                lines: Vec::new(),
            });
        }
        if !latency.is_empty() {
            files.push(ResultFile {
                base: "lat_dma_sizes".into(),
                data: ResultData::Latency(latency),
                lines: Vec::new(),
            });
        }
        files
    }
}

/// Each descriptor's bytes over its time at its bandwidth, summed.
fn bandwidth_row(key: RowKey, file: DatFile, gbps: &[f64]) -> BandwidthRow {
    let (bytes, transfers) = file.descriptor(key.size);
    let time_ns: f64 = gbps.iter().map(|g| bytes as f64 * 8.0 / g).sum();
    let n = gbps.len() as u64;
    BandwidthRow {
        key,
        time_ns,
        bytes: bytes * n,
        trans: transfers * n,
        // One descriptor's value as written, not recomputed through its time.
        bw_gbps: match gbps {
            [one] => *one,
            _ => (bytes * n) as f64 * 8.0 / time_ns,
        },
        trans_per_sec: (transfers * n) as f64 / time_ns * 1e9,
    }
}

/// Our statistics of the descriptors' latencies (whole ns: the tool's are multiples of 4 ns).
/// The tool reports no loop time, so TAvg is the average.
fn latency_row(key: RowKey, ns: &[f64]) -> LatencyRow {
    let cycles: Vec<u32> = ns.iter().map(|v| v.round() as u32).collect();
    let total_cycles = cycles.iter().map(|&c| c as u64).sum();
    let samples = LatencySamples {
        cycles,
        cycle_ps: 1000.0,
        total_cycles,
    };
    // A point exists only once a line gave it a value.
    let stats = SortedLatencies::new(&samples)
        .expect("a point has at least one value")
        .stats();
    let s = stats.ns;
    LatencyRow {
        key,
        tavg_ns: s.tavg,
        avg_ns: s.avg,
        med_ns: s.median,
        min_ns: s.min,
        max_ns: s.max,
        p95_ns: s.p95,
        p99_ns: Some(s.p99),
        p999_ns: s.p999,
        outliers: stats.outliers,
        samples: stats.samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_the_direction() {
        let kind = |n: &str| DatFile::recognise(Path::new(n)).and_then(DatFile::kind);
        assert_eq!(kind("real_time_bw_R_1529000000.dat"), Some(TestKind::BwWr));
        assert_eq!(kind("real_time_bw_W_1.dat"), Some(TestKind::BwRd));
        assert_eq!(kind("real_time_bw_RW_1.dat"), Some(TestKind::BwRdWr));
        assert_eq!(kind("real_time_lat_W_1.dat"), Some(TestKind::LatRd));
        assert_eq!(kind("real_time_lat_RW_1.dat"), Some(TestKind::LatWrRd));
        assert!(DatFile::recognise(Path::new("real_time_lat_R_1.dat")).is_some());
        assert_eq!(kind("real_time_lat_R_1.dat"), None);
        for other in [
            "real_time_bw_X_1.dat",
            "real_time_bw_R_.dat",
            "real_time_bw_R_1.csv",
            "bw_R_1.dat",
        ] {
            assert_eq!(DatFile::recognise(Path::new(other)), None, "{other}");
        }
    }

    #[test]
    fn bytes_per_descriptor_as_the_tool_counts_them() {
        let w = DatFile {
            bandwidth: true,
            direction: "R",
        };
        // 64 B writes: one TLP each, 262144 of them.
        assert_eq!(w.descriptor(64), (64 * 262_144, 262_144));
        // 260 B writes: two TLPs each; 131072 transfers.
        assert_eq!(w.descriptor(260), (260 * 131_072, 131_072));
        // 768 B: three TLPs; 87381 whole transfers and one TLP left at 256 B.
        assert_eq!(w.descriptor(768), (768 * 87_381 + 256, 87_382));
    }

    #[test]
    fn descriptors_of_a_point_are_pooled_and_bad_lines_named() {
        let p = Path::new("real_time_lat_W_7.dat");
        let f = DatFile::recognise(p).unwrap();
        let mut runs = DatRuns::default();
        runs.add(
            p,
            f,
            "0 0 0 0\nFIX 0 64 520\nFIX 1 64 528\nFIX,2,64,524\n\nFIX 0 128 560\n",
        )
        .unwrap();
        let files = runs.files();
        let ResultData::Latency(rows) = &files[0].data else {
            panic!("latency rows")
        };
        assert_eq!(files[0].base, "lat_dma_sizes");
        assert_eq!((rows[0].key.size, rows[0].samples, rows[0].med_ns), (64, 3, 524.0));
        assert_eq!((rows[0].key.window, rows[0].key.pattern), (4096, Pattern::Seq));
        assert_eq!(rows[1].key.size, 128);
        let e = DatRuns::default().add(p, f, "0 0 0 0\nFIX 0 64 -3\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "real_time_lat_W_7.dat:2: -3: must be a number of ns from 1 to 1000000000"
        );
        let e = DatRuns::default()
            .add(p, f, "[ERROR] The buffer size must be a power of 2\n")
            .unwrap_err();
        assert!(e.to_string().contains(":1: \"[ERROR]"), "{e}");
    }

    /// Found by the `netfpga-dat` fuzz target: 1e-300 Gb/s passed "above 0", and a
    /// descriptor's time at it overflowed to infinity (a row of inf ns and 0 Gb/s).
    #[test]
    fn a_bandwidth_too_small_to_time_is_refused() {
        let p = Path::new("real_time_bw_W_7.dat");
        let f = DatFile::recognise(p).unwrap();
        let e = DatRuns::default().add(p, f, "FIX 0 2048 1e-300\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "real_time_bw_W_7.dat:1: 1e-300: must be a number of Gb/s from 0.000001 to 1000000"
        );
        // The slowest accepted, at the largest descriptor, many times over: a finite time.
        let mut runs = DatRuns::default();
        runs.add(p, f, &"FIX 0 65536 0.000001\n".repeat(1000)).unwrap();
        let ResultData::Bandwidth(rows) = &runs.files()[0].data else {
            panic!("bandwidth rows")
        };
        assert!(rows[0].time_ns.is_finite() && rows[0].bw_gbps > 0.0, "{:?}", rows[0]);
    }

    /// A latency under 1 ns rounded to a row of 0 ns.
    #[test]
    fn a_latency_under_a_nanosecond_is_refused() {
        let p = Path::new("real_time_lat_RW_7.dat");
        let f = DatFile::recognise(p).unwrap();
        let e = DatRuns::default().add(p, f, "0 0 0 0\nSEQ 0 64 0.3\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "real_time_lat_RW_7.dat:2: 0.3: must be a number of ns from 1 to 1000000000"
        );
    }
}
