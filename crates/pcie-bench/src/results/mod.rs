//! Run directories: `run.json` plus one CSV per output base with pcie-bench's column names, so
//! our runs and original pcie-bench data directories load through the same reader, and so do
//! pciebench-netfpga's `.dat` files. Column definitions are in `docs/formats.md`.

mod bandwidth;
mod cdf;
mod csv;
mod engine;
mod key;
mod latency;
mod netfpga;
mod raw;
mod reader;
mod result_file;
mod run_info;
mod writer;

pub use bandwidth::BandwidthRow;
pub use cdf::CdfSection;
pub use engine::{Engine, SM_MIN_WINDOW};
pub use key::RowKey;
pub use latency::LatencyRow;
pub use raw::{read_raw, RawSample};
pub use reader::RunData;
pub use result_file::{ResultData, ResultFile};
pub use run_info::{rfc3339, HostInfo, RunInfo};
pub use writer::RunWriter;

use std::fmt;
use std::path::{Path, PathBuf};

/// A result file that could not be written or read: the file, and where the line and column
/// are known, those too.
#[derive(Debug)]
pub struct ResultsError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub column: Option<String>,
    pub message: String,
}

impl ResultsError {
    fn file(path: &Path, message: impl Into<String>) -> ResultsError {
        ResultsError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    fn io(path: &Path, e: std::io::Error) -> ResultsError {
        ResultsError::file(path, e.to_string())
    }
}

impl fmt::Display for ResultsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(column) = &self.column {
            write!(f, ": column \"{column}\"")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ResultsError {}
