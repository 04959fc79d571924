//! One result file's rows, typed: a CSV of ours or pcie-bench's recognised by its header
//! (pciebench-netfpga's `.dat` files arrive here already converted).

use super::csv::CsvTable;
use super::{bandwidth, cdf, latency, raw, BandwidthRow, CdfSection, LatencyRow, ResultsError};
use serde::Serialize;
use std::path::Path;

/// The parsed contents of one result file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "rows", rename_all = "snake_case")]
pub enum ResultData {
    Latency(Vec<LatencyRow>),
    Bandwidth(Vec<BandwidthRow>),
    Cdf(Vec<CdfSection>),
}

/// One result file: `<base>.csv`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultFile {
    pub base: String,
    pub data: ResultData,
    /// Each data row's 1-based line in its file, in row order, for errors about a row found
    /// after loading (`sim fit`'s); empty where rows have no line (converted `.dat` files).
    #[serde(skip)]
    pub lines: Vec<usize>,
}

impl ResultFile {
    /// One result CSV's text, recognised by its header; `path` names it in errors and its stem
    /// is the base. `None` for raw sample files, which are not summarised.
    pub fn parse(path: &Path, text: &str) -> Result<Option<ResultFile>, ResultsError> {
        if first_line(text) == raw::HEADER {
            return Ok(None);
        }
        let table = CsvTable::parse(path, text)?;
        let data = if table.has("cdf") {
            ResultData::Cdf(cdf::parse(&table)?)
        } else if table.has("Trans/s") {
            ResultData::Bandwidth(bandwidth::parse(&table)?)
        } else if table.has("Med(ns)") {
            ResultData::Latency(latency::parse(&table)?)
        } else {
            return Err(ResultsError {
                path: path.to_path_buf(),
                line: Some(1),
                column: None,
                message: "not a result table: expected latency (Med(ns)), bandwidth (Trans/s), CDF (cdf) or raw sample columns".into(),
            });
        };
        let base = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let lines = table.rows.iter().map(|r| r.line).collect();
        Ok(Some(ResultFile { base, data, lines }))
    }
}

/// The first non-blank line, trimmed.
pub(super) fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}
