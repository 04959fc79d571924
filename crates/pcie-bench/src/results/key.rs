//! The seven columns that identify a test in every pcie-bench result table.

use super::csv::{CsvRow, CsvTable};
use super::ResultsError;
use crate::params::{CacheState, Pattern, TestKind, TestParams};

pub(super) const HEADER: &str = "Test,PAT,Cache,HO,DO,WinSZ,SZ";

/// The identifying fields of a result row (flattened into its JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct RowKey {
    pub test: TestKind,
    pub pattern: Pattern,
    pub cache: CacheState,
    pub host_offset: u32,
    pub device_offset: u32,
    pub window: u64,
    pub size: u32,
}

impl From<&TestParams> for RowKey {
    fn from(p: &TestParams) -> RowKey {
        RowKey {
            test: p.kind,
            pattern: p.pattern,
            cache: p.cache,
            host_offset: p.host_offset,
            device_offset: p.device_offset,
            window: p.window,
            size: p.size,
        }
    }
}

impl RowKey {
    /// `Test,PAT,Cache,HO,DO,WinSZ,SZ` as pcie-bench writes them.
    pub(super) fn fields(&self) -> [String; 7] {
        [
            self.test.csv_name().to_string(),
            self.pattern.csv_name().to_string(),
            self.cache.csv_name().to_string(),
            self.host_offset.to_string(),
            self.device_offset.to_string(),
            self.window.to_string(),
            self.size.to_string(),
        ]
    }
}

/// The key's fields joined with commas, as a result row starts.
impl std::fmt::Display for RowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.fields().join(","))
    }
}

/// Reads keys from a table located once per file.
pub(super) struct KeyColumns([super::csv::Col; 7]);

impl KeyColumns {
    pub fn locate(t: &CsvTable) -> Result<KeyColumns, ResultsError> {
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

    pub fn read(&self, t: &CsvTable, row: &CsvRow) -> Result<RowKey, ResultsError> {
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
