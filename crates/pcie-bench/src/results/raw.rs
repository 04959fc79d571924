//! Raw latency samples (`<base>_raw.csv`): one row per sample in issue order, for CDFs and
//! time series beyond the summary statistics.

use super::csv::CsvTable;
use super::ResultsError;
use crate::backend::LatencySamples;
use crate::params::{CacheState, TestKind, TestParams};
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;

pub(super) const HEADER: &str = "test,cache,window,size,index,ns";

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

/// Reads a `<base>_raw.csv` file (kept out of `RunData::load`: it can be large).
pub fn read_raw(path: &Path) -> Result<Vec<RawSample>, ResultsError> {
    let text = std::fs::read_to_string(path).map_err(|e| ResultsError::io(path, e))?;
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
