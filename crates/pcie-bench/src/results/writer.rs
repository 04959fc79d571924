//! Writes a run directory while the run goes on: after every finished test its base's files
//! are rewritten whole (atomically, through `pcie-output`), so an interrupted run leaves
//! complete, loadable CSVs for every test that finished. The directory is one pcieperf made or
//! found empty ([`OutDir`]): nothing in it was written by anyone else (a pcie-bench result
//! directory given as `--out` is refused untouched), and its files are made relative to it
//! without following links.

use super::run_info::{rfc3339, RunInfo};
use super::{bandwidth, cdf, latency, raw, ResultsError};
use crate::backend::{BackendInfo, Outcome};
use crate::params::TestParams;
use crate::stats::{BandwidthStats, Measurement, SortedLatencies};
use crate::suite::Group;
use pcie_output::OutDir;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Most numbered suffixes `create_new` tries.
const MAX_SUFFIX: u32 = 1000;

/// An open run directory.
pub struct RunWriter {
    dir: OutDir,
    info: RunInfo,
    bases: Vec<Base>,
}

/// What has been written for one output base (data lines, without headers).
struct Base {
    name: String,
    latency: bool,
    rows: String,
    cdf: String,
}

impl RunWriter {
    /// Creates `dir` (or takes it when it is empty and the caller's) and writes `run.json`. A
    /// directory holding anything (a run, a pcie-bench result directory) is refused untouched.
    pub fn create(dir: &Path, info: RunInfo) -> Result<RunWriter, ResultsError> {
        let out = OutDir::create(dir).map_err(|e| ResultsError::io(dir, e))?;
        RunWriter::start(out, info)
    }

    /// Creates a new directory `<stem>`, or else `<stem>-2`, `<stem>-3`, … up to
    /// `<stem>-1000`: the first name no one holds, claimed atomically (`mkdir` fails on an
    /// existing name), so runs started at once never share a directory. Writes `run.json`.
    pub fn create_new(stem: &Path, info: RunInfo) -> Result<RunWriter, ResultsError> {
        for n in 1..=MAX_SUFFIX {
            let mut dir = stem.as_os_str().to_owned();
            if n > 1 {
                dir.push(format!("-{n}"));
            }
            let dir = PathBuf::from(dir);
            match OutDir::create_new(&dir) {
                Ok(Some(out)) => return RunWriter::start(out, info),
                Ok(None) => continue,
                Err(e) => return Err(ResultsError::io(&dir, e)),
            }
        }
        Err(ResultsError::file(
            stem,
            format!("this name and its suffixes -2 to -{MAX_SUFFIX} are all taken; choose an output directory"),
        ))
    }

    fn start(dir: OutDir, info: RunInfo) -> Result<RunWriter, ResultsError> {
        let w = RunWriter {
            dir,
            info,
            bases: Vec::new(),
        };
        w.write_info()?;
        Ok(w)
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes (or rewrites) the file `name` whole.
    fn write(&self, name: &str, text: &str) -> Result<(), ResultsError> {
        self.dir
            .write(name, text.as_bytes())
            .map_err(|e| ResultsError::io(&self.dir.path().join(name), e))
    }

    fn write_info(&self) -> Result<(), ResultsError> {
        let path = self.dir().join("run.json");
        let mut text =
            serde_json::to_string_pretty(&self.info).map_err(|e| ResultsError::file(&path, e.to_string()))?;
        text.push('\n');
        self.write("run.json", &text)
    }

    /// Adds one finished test of `group` and rewrites the group's base files: `<base>.csv`, and
    /// when the group asks for them `<base>_cdf.csv` and `<base>_raw.csv`.
    pub fn record(
        &mut self,
        group: &Group,
        params: &TestParams,
        outcome: Outcome,
    ) -> Result<Measurement, ResultsError> {
        let csv_name = format!("{}.csv", group.base);
        let csv_path = self.dir().join(&csv_name);
        let err = |m: String| {
            let test = format!("{} size {} window {}", params.kind, params.size, params.window);
            ResultsError::file(&csv_path, format!("{test}: {m}"))
        };
        let latency = params.kind.is_latency();
        if latency != matches!(outcome, Outcome::Latency(_)) {
            return Err(err("the backend returned the other kind of result".into()));
        }
        let idx = match self.bases.iter().position(|b| b.name == group.base) {
            Some(i) if self.bases[i].latency != latency => {
                return Err(err("this base already holds the other kind of test".into()));
            }
            Some(i) => i,
            None => {
                self.bases.push(Base {
                    name: group.base.clone(),
                    latency,
                    rows: String::new(),
                    cdf: String::new(),
                });
                self.bases.len() - 1
            }
        };
        let measurement = match outcome {
            Outcome::Latency(samples) => {
                // The raw samples go out in issue order before they are sorted in place.
                if group.raw && !samples.cycles.is_empty() {
                    let name = format!("{}_raw.csv", group.base);
                    append(&self.dir, &name, raw::HEADER, |w| raw::write_block(w, params, &samples))
                        .map_err(|e| ResultsError::io(&self.dir.path().join(&name), e))?;
                }
                let sorted = SortedLatencies::from_samples(samples).ok_or_else(|| err("no latency samples".into()))?;
                let stats = sorted.stats();
                if group.cdf {
                    let base = &mut self.bases[idx];
                    base.cdf.push_str(&cdf::format_section(&sorted.cdf()));
                    let text = format!("{}\n{}", cdf::HEADER, base.cdf);
                    self.write(&format!("{}_cdf.csv", group.base), &text)?;
                }
                self.bases[idx].rows.push_str(&latency::format_row(params, &stats));
                Measurement::Latency(stats)
            }
            Outcome::Bandwidth(totals) => {
                let stats = BandwidthStats::new(&totals).ok_or_else(|| err("the test took no time".into()))?;
                self.bases[idx].rows.push_str(&bandwidth::format_row(params, &stats));
                Measurement::Bandwidth(stats)
            }
        };
        let base = &mut self.bases[idx];
        let header = if latency {
            latency::header()
        } else {
            bandwidth::header()
        };
        let text = format!("{header}\n{}", base.rows);
        self.write(&csv_name, &text)?;
        Ok(measurement)
    }

    /// Replaces the backend's description in `run.json` (written at [`RunWriter::finish`]), for
    /// what the backend learnt during the run.
    pub fn set_backend(&mut self, backend: BackendInfo) {
        self.info.backend = backend;
    }

    /// Stamps the end time into `run.json`.
    pub fn finish(mut self, end: SystemTime) -> Result<(), ResultsError> {
        self.info.end_time = Some(rfc3339(end));
        self.write_info()
    }
}

/// Rewrites `name` in `dir` as its old contents (or `header` for a new file) plus what `more`
/// writes.
fn append(
    dir: &OutDir,
    name: &str,
    header: &str,
    more: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut out = dir.replace(name)?;
    match dir.open(name) {
        Ok(old) => {
            io::copy(&mut BufReader::new(old), &mut out)?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => writeln!(out, "{header}")?,
        Err(e) => return Err(e),
    }
    more(&mut out)?;
    out.finish()
}
