//! Loads a run directory — ours or an original pcie-bench data directory — into typed rows.
//! CSV files are recognised by their header, not their name; pciebench-netfpga's headerless
//! `.dat` files by their name.

use super::netfpga::{DatFile, DatRuns};
use super::result_file::{first_line, ResultData, ResultFile};
use super::run_info::RunInfo;
use super::{raw, ResultsError};
use serde::Serialize;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Largest result CSV read whole (raw sample files are recognised by their first line and
/// skipped unread): a file of a few thousand tests is a few MB.
const MAX_RESULT_FILE_BYTES: u64 = 256 << 20;
/// Largest `run.json` read: ours are a few KB.
const MAX_RUN_JSON_BYTES: u64 = 16 << 20;

/// The text of a file opened by `pcie_output::read::open` (a regular file, never a FIFO or a
/// device), refused unread when it is larger than `max` bytes (`what` names
/// the kind of file in the message).
fn read_limited(path: &Path, file: &File, max: u64, what: &str) -> Result<String, ResultsError> {
    let io = |e| ResultsError::io(path, e);
    let len = file.metadata().map_err(io)?.len();
    if len > max {
        return Err(ResultsError::file(
            path,
            format!("{len} bytes: larger than the {max} bytes {what} may have"),
        ));
    }
    let mut text = String::new();
    let mut reader = file;
    reader
        .seek(SeekFrom::Start(0))
        .and_then(|_| reader.take(max + 1).read_to_string(&mut text))
        .map_err(io)?;
    Ok(text)
}

/// A result CSV's text; `None` for a raw sample file, of which only the first line is read.
fn read_result_csv(path: &Path) -> Result<Option<String>, ResultsError> {
    let file = pcie_output::read::open(path).map_err(|e| ResultsError::io(path, e))?;
    let mut head = Vec::new();
    BufReader::new(&file)
        .take(4096)
        .read_until(b'\n', &mut head)
        .map_err(|e| ResultsError::io(path, e))?;
    if first_line(&String::from_utf8_lossy(&head)) == raw::HEADER {
        return Ok(None);
    }
    read_limited(path, &file, MAX_RESULT_FILE_BYTES, "a result table").map(Some)
}

/// A loaded run directory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunData {
    pub dir: PathBuf,
    /// `run.json`; pcie-bench directories have none.
    pub info: Option<RunInfo>,
    /// Every result CSV except raw samples, by base name.
    pub files: Vec<ResultFile>,
    /// The directory holds pciebench-netfpga's `.dat` files (a NetFPGA-SUME's, not an NFP's).
    pub netfpga: bool,
}

impl RunData {
    pub fn load(dir: &Path) -> Result<RunData, ResultsError> {
        let info_path = dir.join("run.json");
        let info = match pcie_output::read::open(&info_path) {
            Ok(file) => {
                let text = read_limited(&info_path, &file, MAX_RUN_JSON_BYTES, "a run.json")?;
                Some(serde_json::from_str(&text).map_err(|e| ResultsError {
                    path: info_path.clone(),
                    line: Some(e.line()),
                    column: None,
                    message: e.to_string(),
                })?)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ResultsError::io(&info_path, e)),
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| ResultsError::io(dir, e))?
            .map(|e| e.map(|e| e.path()).map_err(|err| ResultsError::io(dir, err)))
            .collect::<Result<_, _>>()?;
        paths.sort();
        // pciebench-netfpga's .dat files, recognised by name (they have no header).
        let from_netfpga = paths.iter().any(|p| DatFile::recognise(p).is_some());
        let mut netfpga = DatRuns::default();
        for (path, dat) in paths.iter().filter_map(|p| Some((p, DatFile::recognise(p)?))) {
            let file = pcie_output::read::open(path).map_err(|e| ResultsError::io(path, e))?;
            netfpga.add(
                path,
                dat,
                &read_limited(path, &file, MAX_RESULT_FILE_BYTES, "a result file")?,
            )?;
        }
        paths.retain(|p| p.extension().is_some_and(|x| x == "csv") && p.is_file());
        let mut files = Vec::new();
        for path in paths {
            if let Some(text) = read_result_csv(&path)? {
                files.extend(ResultFile::parse(&path, &text)?);
            }
        }
        files.extend(netfpga.files());
        Ok(RunData {
            dir: dir.to_path_buf(),
            info,
            files,
            netfpga: from_netfpga,
        })
    }

    /// The data of one base, if the directory has it.
    pub fn get(&self, base: &str) -> Option<&ResultData> {
        self.files.iter().find(|f| f.base == base).map(|f| &f.data)
    }

    /// Who moved the data when a GPU ran the tests (`run.json`'s device `engine`).
    pub fn gpu_engine(&self) -> Option<crate::Engine> {
        let engine = self.info.as_ref()?.backend.description.get("device")?.get("engine")?;
        serde_json::from_value(engine.clone()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{Iommu, Numa};
    use crate::results::HostInfo;
    use pcie_model::LinkConfig;

    #[test]
    fn a_bad_link_names_the_file_and_the_key() {
        let dir = std::env::temp_dir().join(format!("pcie-bench-badlink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let info = RunInfo {
            tool: "pcieperf".into(),
            version: "0".into(),
            command_line: vec![],
            suite: "quick".into(),
            seed: 0,
            backend: crate::BackendInfo {
                name: "sim".into(),
                description: serde_json::Value::Null,
                max_transfer: 4096,
            },
            link: LinkConfig::new(&pcie_model::LinkParams::default()).ok(),
            numa: Numa::default(),
            iommu: Iommu::default(),
            host: HostInfo::default(),
            start_time: "1970-01-01T00:00:00Z".into(),
            end_time: None,
            left_out: Vec::new(),
        };
        let text = serde_json::to_string_pretty(&info).unwrap();
        let back: RunInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(back.link.as_ref().map(|l| l.mps), Some(256));
        assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text, "written as read");
        std::fs::write(dir.join("run.json"), text.replace("\"mps\": 256", "\"mps\": 300")).unwrap();
        let e = crate::RunData::load(&dir).unwrap_err().to_string();
        assert!(
            e.contains("run.json") && e.contains("link.mps 300: must be one of 128"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
