//! Raw latency samples (`<base>_raw.csv`): one row per sample in issue order, for CDFs and
//! time series beyond the summary statistics.

use super::csv::CsvTable;
use super::ResultsError;
use crate::backend::LatencySamples;
use crate::params::{CacheState, TestKind, TestParams, MAX_LATENCY_SAMPLES};
use crate::suite::MAX_SUITE_TESTS;
use serde::Serialize;
use std::io::{self, Read, Write};
use std::path::Path;

pub(super) const HEADER: &str = "test,cache,window,size,index,ns";

/// Longest row: the longest latency test name (`LAT_DMA_WRRD`, 12) and cache state
/// (`DThrash`, 7), a window of at most 64 MB (8 digits), a size below 2^32 (10), an index
/// below 2^24 (8), the ns as `f64`'s `Display` writes it (no exponent, at most 17 significant
/// digits: 326 characters at most, for the smallest normal number), five commas, a newline.
const MAX_ROW_BYTES: u64 = 12 + 7 + 8 + 10 + 8 + 326 + 5 + 1;
/// Largest raw file a legal run writes: one file per group, whose tests are at most a suite's
/// and take at most 2^24 samples each, a row per sample after the header (about 6.3 PB: it
/// stops absurd and hostile sizes, not a real run's gigabytes, which are read whole).
const MAX_RAW_FILE_BYTES: u64 = HEADER.len() as u64 + 1 + MAX_SUITE_TESTS as u64 * MAX_LATENCY_SAMPLES * MAX_ROW_BYTES;

pub(super) fn write_block(w: &mut dyn Write, p: &TestParams, s: &LatencySamples) -> io::Result<()> {
    let ns_per_cycle = s.cycle_ps / 1000.0;
    let prefix = [
        p.kind.csv_name().to_string(),
        p.cache.csv_name().to_string(),
        p.window.to_string(),
        p.size.to_string(),
    ];
    let mut out = ::csv::Writer::from_writer(w);
    for (i, &c) in s.cycles.iter().enumerate() {
        let sample = [i.to_string(), (c as f64 * ns_per_cycle).to_string()];
        out.write_record(prefix.iter().chain(&sample))?;
    }
    out.flush()
}

/// One raw latency sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawSample {
    pub test: TestKind,
    pub cache: CacheState,
    pub window: u64,
    pub size: u32,
    /// Position in issue order within its test.
    pub index: u64,
    pub ns: f64,
}

/// Reads a `<base>_raw.csv` file (kept out of `RunData::load`: it can be large). A file
/// larger than any run writes, or no regular file (`/dev/zero` has no length and no end), is
/// refused unread.
pub fn read_raw(path: &Path) -> Result<Vec<RawSample>, ResultsError> {
    let io = |e| ResultsError::io(path, e);
    // A FIFO or a device is refused here, unopened by a blocking open.
    let mut file = pcie_output::read::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.len() > MAX_RAW_FILE_BYTES {
        return Err(ResultsError::file(
            path,
            format!(
                "{} bytes: larger than the {MAX_RAW_FILE_BYTES} bytes of the largest raw file a run writes \
                 ({MAX_SUITE_TESTS} tests of {MAX_LATENCY_SAMPLES} samples, rows of at most {MAX_ROW_BYTES} bytes)",
                meta.len()
            ),
        ));
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io)?;
    let t = CsvTable::parse(path, &text)?;
    let [test, cache, window, size, index, ns] =
        ["test", "cache", "window", "size", "index", "ns"].map(|n| t.column(&[n]));
    let (test, cache, window, size, index, ns) = (test?, cache?, window?, size?, index?, ns?);
    t.rows
        .iter()
        .map(|r| {
            Ok(RawSample {
                test: t.parsed(r, &test, "a test name such as LAT_DMA_RD")?,
                cache: t.parsed(r, &cache, "Cold, DThrash, DWarm or HWarm")?,
                window: t.uint(r, &window)?,
                size: t.uint32(r, &size)?,
                index: t.uint(r, &index)?,
                ns: t.float(r, &ns)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_bound_covers_every_latency_test_and_cache_state() {
        let longest = |names: &mut dyn Iterator<Item = &str>| names.map(str::len).max().unwrap() as u64;
        let test = longest(
            &mut TestKind::ALL
                .into_iter()
                .filter(|k| k.is_latency())
                .map(TestKind::csv_name),
        );
        let cache = longest(&mut CacheState::ALL.into_iter().map(CacheState::csv_name));
        let digits = |n: u64| n.to_string().len() as u64;
        let window = digits(crate::params::BUFFER_BYTES);
        let ns = [f64::MAX, f64::MIN_POSITIVE, 5e-324, 1e-6, 4294967295e6]
            .map(|v| v.to_string().len() as u64)
            .into_iter()
            .max()
            .unwrap();
        let row = test + cache + window + digits(u32::MAX.into()) + digits(MAX_LATENCY_SAMPLES - 1) + ns + 6;
        assert_eq!(row, MAX_ROW_BYTES);
    }

    /// A sparse file one byte over the bound (tmpfs holds it; ext4 files stop at 16 TiB).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_larger_than_any_run_writes_is_refused_unread() {
        let path = Path::new("/dev/shm").join(format!("pcie-bench-huge-{}_raw.csv", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_RAW_FILE_BYTES + 1).unwrap();
        let e = read_raw(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        assert!(
            e.starts_with(&format!(
                "{}: 6325010432000033 bytes: larger than the 6325010432000032 bytes",
                path.display()
            )),
            "{e}"
        );
        assert!(
            e.ends_with("(1000000 tests of 16777216 samples, rows of at most 377 bytes)"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_unread() {
        let e = read_raw(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: a character device, not a regular file");
    }
}
