//! Loads a run directory — ours or an original pcie-bench data directory — into typed rows.
//! Files are recognised by their header, not their name.

use super::csv::Table;
use super::run_info::RunInfo;
use super::{bandwidth, cdf, latency, raw, BandwidthRow, CdfSection, LatencyRow, ResultsError};
use serde::Serialize;
use std::path::{Path, PathBuf};

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
}

/// A loaded run directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunData {
    pub dir: PathBuf,
    /// `run.json`; pcie-bench directories have none.
    pub info: Option<RunInfo>,
    /// Every result CSV except raw samples, by base name.
    pub files: Vec<ResultFile>,
}

impl RunData {
    pub fn load(dir: &Path) -> Result<RunData, ResultsError> {
        let info_path = dir.join("run.json");
        let info = match std::fs::read_to_string(&info_path) {
            Ok(text) => Some(serde_json::from_str(&text).map_err(|e| ResultsError {
                path: info_path.clone(),
                line: Some(e.line()),
                column: None,
                message: e.to_string(),
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ResultsError::io(&info_path, e)),
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| ResultsError::io(dir, e))?
            .map(|e| e.map(|e| e.path()).map_err(|err| ResultsError::io(dir, err)))
            .collect::<Result<_, _>>()?;
        paths.retain(|p| p.extension().is_some_and(|x| x == "csv") && p.is_file());
        paths.sort();
        let mut files = Vec::new();
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|e| ResultsError::io(&path, e))?;
            let table = Table::parse(&path, &text)?;
            let data = if table.has("cdf") {
                ResultData::Cdf(cdf::parse(&table)?)
            } else if table.has("Trans/s") {
                ResultData::Bandwidth(bandwidth::parse(&table)?)
            } else if table.has("Med(ns)") {
                ResultData::Latency(latency::parse(&table)?)
            } else if table.header.join(",") == raw::HEADER {
                continue;
            } else {
                return Err(ResultsError {
                    path: path.clone(),
                    line: Some(1),
                    column: None,
                    message: "not a result table: expected latency (Med(ns)), bandwidth (Trans/s), CDF (cdf) or raw sample columns".into(),
                });
            };
            let base = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            files.push(ResultFile { base, data });
        }
        Ok(RunData {
            dir: dir.to_path_buf(),
            info,
            files,
        })
    }

    /// The data of one base, if the directory has it.
    pub fn get(&self, base: &str) -> Option<&ResultData> {
        self.files.iter().find(|f| f.base == base).map(|f| &f.data)
    }
}
