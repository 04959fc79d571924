//! The seven columns that identify a test in every pcie-bench result table.

use super::csv::{Row, Table};
use super::ResultsError;
use crate::params::{CacheState, Pattern, TestKind, TestParams};

pub(super) const HEADER: &str = "Test,PAT,Cache,HO,DO,WinSZ,SZ";

/// `Test,PAT,Cache,HO,DO,WinSZ,SZ` of one test, as pcie-bench names them.
pub(super) fn format(p: &TestParams) -> String {
    format!(
        "{},{},{},{},{},{},{}",
        p.kind.csv_name(),
        p.pattern.csv_name(),
        p.cache.csv_name(),
        p.host_offset,
        p.device_offset,
        p.window,
        p.size
    )
}

/// The identifying fields of a result row (flattened into its JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RowKey {
    pub test: TestKind,
    pub pattern: Pattern,
    pub cache: CacheState,
    pub host_offset: u32,
    pub device_offset: u32,
    pub window: u64,
    pub size: u32,
}

/// Reads keys from a table located once per file.
pub(super) struct KeyColumns([super::csv::Col; 7]);

impl KeyColumns {
    pub fn locate(t: &Table) -> Result<KeyColumns, ResultsError> {
        Ok(KeyColumns([
            t.column(&["Test"])?,
            t.column(&["PAT"])?,
            t.column(&["Cache"])?,
            t.column(&["HO"])?,
            t.column(&["DO"])?,
            t.column(&["WinSZ"])?,
            t.column(&["SZ"])?,
        ]))
    }

    pub fn read(&self, t: &Table, row: &Row) -> Result<RowKey, ResultsError> {
        let [test, pat, cache, ho, dof, win, sz] = &self.0;
        Ok(RowKey {
            test: t.parsed(row, test, "a test name such as LAT_DMA_RD or BW_DMA_WR")?,
            pattern: t.parsed(row, pat, "Seq or Rand")?,
            cache: t.parsed(row, cache, "Cold, DThrash, DWarm or HWarm")?,
            host_offset: t.uint32(row, ho)?,
            device_offset: t.uint32(row, dof)?,
            window: t.uint(row, win)?,
            size: t.uint32(row, sz)?,
        })
    }
}
