//! fio, the workload `pmu validate` compares a real PMU with: the command line built from a
//! [`StorageJob`], the running process, and what its JSON report says per direction (bytes,
//! runtime, completion latency). The simulated host reports the same figures
//! ([`FioStats::from_sim`]), so both sources print one table.

use crate::sim::StorageJob;
use crate::{PmuError, System};
use pcie_output::PrivateDir;
use pcie_sim::pmu_host::{IoStats, StorageStats};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// One direction of a run as fio reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DirStats {
    pub bytes: u64,
    /// Seconds this direction ran (0 when it did no I/O, as fio says).
    pub runtime_s: f64,
    pub clat_mean_ns: f64,
    /// Sample standard deviation, as fio prints it.
    pub clat_stdev_ns: f64,
}

impl DirStats {
    /// MiB/s over the direction's runtime (fio's `bw_bytes` / 2^20); 0 without a runtime.
    pub fn mib_s(&self) -> f64 {
        if self.runtime_s > 0.0 {
            self.bytes as f64 / 1048576.0 / self.runtime_s
        } else {
            0.0
        }
    }

    fn from_sim(s: &IoStats, runtime_ns: u64) -> DirStats {
        DirStats {
            bytes: s.bytes,
            runtime_s: if s.ios > 0 { runtime_ns as f64 / 1e9 } else { 0.0 },
            clat_mean_ns: s.clat_mean_ns(),
            clat_stdev_ns: s.clat_stdev_ns(),
        }
    }
}

/// A run's reads and writes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FioStats {
    pub read: DirStats,
    pub write: DirStats,
}

impl FioStats {
    /// What the simulated storage workload did, in fio's terms.
    pub fn from_sim(s: &StorageStats) -> FioStats {
        FioStats {
            read: DirStats::from_sim(&s.read, s.runtime_ns),
            write: DirStats::from_sim(&s.write, s.runtime_ns),
        }
    }

    /// Parse `fio --output-format=json`. Several job entries (no `--group_reporting`) are
    /// combined: bytes add up, the runtime is the longest (jobs run side by side) and the
    /// latency mean and standard deviation are pooled over all I/Os. A job with a nonzero
    /// `error` fails the run.
    pub fn parse(text: &str) -> Result<FioStats, FioError> {
        let bad = |m: String| FioError::Report(m);
        // fio writes its error messages into the report too, before the JSON object.
        let start = text
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .chain([0])
            .filter(|&i| text[i..].starts_with("{\n") || text[i..].trim_end() == "{")
            .min()
            .unwrap_or(0);
        let v: serde_json::Value =
            serde_json::from_str(&text[start..]).map_err(|e| bad(format!("does not parse: {e}")))?;
        let jobs = v["jobs"]
            .as_array()
            .filter(|j| !j.is_empty())
            .ok_or_else(|| bad("has no jobs".into()))?;
        for j in jobs {
            if let Some(e) = j["error"].as_i64().filter(|&e| e != 0) {
                return Err(FioError::Job {
                    name: j["jobname"].as_str().unwrap_or("?").to_string(),
                    errno: e,
                });
            }
        }
        Ok(FioStats {
            read: combine(jobs, "read").map_err(bad)?,
            write: combine(jobs, "write").map_err(bad)?,
        })
    }

    /// The direction a payload event carries: reads go device to host (`rx`).
    pub fn dir(&self, rx: bool) -> &DirStats {
        if rx {
            &self.read
        } else {
            &self.write
        }
    }
}

/// One direction over all job entries.
fn combine(jobs: &[serde_json::Value], dir: &str) -> Result<DirStats, String> {
    let mut out = DirStats::default();
    let (mut n, mut sum, mut sum_sq) = (0.0, 0.0, 0.0);
    for j in jobs {
        let d = &j[dir];
        let field = |k: &str| d[k].as_f64().ok_or_else(|| format!("has no {dir}.{k}"));
        out.bytes += d["io_bytes"].as_u64().ok_or_else(|| format!("has no {dir}.io_bytes"))?;
        out.runtime_s = out.runtime_s.max(field("runtime")? / 1000.0);
        let c = &d["clat_ns"];
        let k = c["N"].as_f64().unwrap_or(0.0);
        if k > 0.0 {
            let (mean, sd) = (
                c["mean"].as_f64().ok_or_else(|| format!("has no {dir}.clat_ns.mean"))?,
                c["stddev"].as_f64().unwrap_or(0.0),
            );
            n += k;
            sum += k * mean;
            sum_sq += (k - 1.0) * sd * sd + k * mean * mean;
        }
    }
    if n > 0.0 {
        out.clat_mean_ns = sum / n;
        out.clat_stdev_ns = if n > 1.0 {
            ((sum_sq - n * out.clat_mean_ns * out.clat_mean_ns) / (n - 1.0))
                .max(0.0)
                .sqrt()
        } else {
            0.0
        };
    }
    Ok(out)
}

/// Why fio gave no figures.
#[derive(Debug)]
pub enum FioError {
    /// `fio` could not be started (not installed, not on PATH).
    Missing(io::Error),
    /// The private directory for its report could not be made.
    Scratch(io::Error),
    /// fio exited unsuccessfully; its messages went to stderr.
    Failed(ExitStatus),
    /// A job reported an error (fio's errno).
    Job { name: String, errno: i64 },
    /// The JSON report could not be read or lacks a field.
    Report(String),
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FioError::Missing(e) => write!(f, "cannot run fio ({e}): install fio (e.g. apt install fio)"),
            FioError::Scratch(e) => write!(f, "cannot make a directory for fio's report: {e}"),
            FioError::Failed(s) => write!(f, "fio failed ({s}); its messages are above"),
            FioError::Job { name, errno } => write!(
                f,
                "fio failed: job {name} ended with error {errno} ({})",
                io::Error::from_raw_os_error(*errno as i32)
            ),
            FioError::Report(m) => write!(f, "fio's JSON report {m}"),
        }
    }
}

impl std::error::Error for FioError {}

/// Fail early, before counters open, when fio cannot run at all.
pub fn check_installed() -> Result<(), FioError> {
    Command::new("fio")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|_| ())
        .map_err(FioError::Missing)
}

/// fio's options for `job` on `filename`. With a runtime fio runs time-based, so the run lasts
/// the whole runtime (re-reading a file smaller than that) as the study's 20 s runs did; with
/// a size each job moves that many bytes.
pub fn args(job: &StorageJob, filename: &Path) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=pcieperf-validate",
        "--ioengine=libaio",
        "--direct=1",
        "--group_reporting",
        "--output-format=json",
    ]
    .map(String::from)
    .to_vec();
    // fio splits `filename` at colons (several files); /dev/disk/by-path names have them.
    a.push(format!(
        "--filename={}",
        filename.display().to_string().replace(':', "\\:")
    ));
    a.push(format!("--rw={}", job.rw.name()));
    a.push(format!("--bs={}", job.bs));
    a.push(format!("--iodepth={}", job.iodepth));
    a.push(format!("--numjobs={}", job.numjobs));
    if let Some(r) = job.runtime {
        a.push(format!("--runtime={}ms", (r * 1000.0).round() as u64));
        a.push("--time_based".into());
    }
    if let Some(s) = job.size {
        a.push(format!("--size={s}"));
    }
    a
}

/// What fio reads when no file is given: the block device (`/dev/NAME`) whose sysfs path runs
/// through a device below root port `port` (`dddd:bb:dd.f`); the first by name if several.
pub fn block_device_below(sys: &System, port: &str) -> Result<Option<PathBuf>, PmuError> {
    let devices: Vec<String> = sys
        .pcie_pmus()?
        .iter()
        .flat_map(|v| v.root_ports.iter())
        .filter(|r| r.bdf.to_string() == port)
        .flat_map(|r| r.devices.iter().map(|d| format!("/{}/", d.bdf)))
        .collect();
    let Ok(dir) = std::fs::read_dir(sys.root.path().join("sys/block")) else {
        return Ok(None);
    };
    let mut names: Vec<_> = dir.flatten().collect();
    names.sort_by_key(|e| e.file_name());
    Ok(names.into_iter().find_map(|e| {
        let real = std::fs::canonicalize(e.path()).ok()?;
        let s = real.to_string_lossy();
        devices
            .iter()
            .any(|d| s.contains(d.as_str()))
            .then(|| PathBuf::from("/dev").join(e.file_name()))
    }))
}

/// A running fio. Dropping it before it finished kills it; its report's directory goes either
/// way.
pub struct FioRun {
    child: Child,
    /// Where fio writes its report: a private directory (see [`PrivateDir`]).
    dir: PrivateDir,
    done: bool,
}

impl FioRun {
    /// Start fio for `job`. It writes its JSON report to a file in a private temporary directory
    /// (a pipe could fill up while nobody reads it); its messages go to this process's stderr.
    pub fn start(job: &StorageJob, filename: &Path) -> Result<FioRun, FioError> {
        let dir = PrivateDir::new("pcieperf-fio").map_err(FioError::Scratch)?;
        let child = Command::new("fio")
            .args(args(job, filename))
            .arg(format!("--output={}", dir.path().join(REPORT).display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(FioError::Missing)?;
        Ok(FioRun {
            child,
            dir,
            done: false,
        })
    }

    /// `None` while fio runs; then its figures, or why there are none.
    pub fn poll(&mut self) -> Option<Result<FioStats, FioError>> {
        let status = match self.child.try_wait() {
            Ok(None) => return None,
            Ok(Some(s)) => s,
            Err(e) => return Some(Err(FioError::Report(format!("cannot be awaited: {e}")))),
        };
        self.done = true;
        let report = self.dir.path().join(REPORT);
        let text = pcie_output::read::read_text(&report, pcie_output::read::Limit::RUN_INFO);
        if !status.success() {
            return Some(Err(FioError::Failed(status)));
        }
        Some(
            text.map_err(|e| FioError::Report(format!("{}: {e}", report.display())))
                .and_then(|t| FioStats::parse(&t)),
        )
    }
}

/// The report's name in the run's directory.
const REPORT: &str = "report.json";

impl Drop for FioRun {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::workload::Rw;

    fn job(bytes: u64, runtime_ms: u64, n: u64, mean: f64, sd: f64) -> String {
        format!(
            r#"{{"io_bytes": {bytes}, "runtime": {runtime_ms}, "clat_ns": {{"N": {n}, "mean": {mean}, "stddev": {sd}}}}}"#
        )
    }

    #[test]
    fn one_group_reported_job_parses_after_fio_notes() {
        let text = format!(
            "fio: note: something\n{{\n\"jobs\": [{{\"jobname\": \"x\", \"error\": 0, \"read\": {}, \"write\": {}}}]}}",
            job(134217728, 335, 128, 20155701.6, 16998066.7),
            job(0, 0, 0, 0.0, 0.0)
        );
        let s = FioStats::parse(&text).unwrap();
        assert_eq!(s.read.bytes, 134217728);
        assert_eq!(s.read.runtime_s, 0.335);
        assert!((s.read.mib_s() - 128.0 / 0.335).abs() < 1e-9);
        assert_eq!((s.read.clat_mean_ns, s.read.clat_stdev_ns), (20155701.6, 16998066.7));
        assert_eq!(s.write, DirStats::default());
        assert_eq!(s.write.mib_s(), 0.0);
    }

    #[test]
    fn several_jobs_pool_bytes_runtime_and_latency() {
        // Two jobs of samples {1, 3} and {5, 7}: all four have mean 4 and stdev sqrt(20/3).
        let s2 = 2f64.sqrt();
        let text = format!(
            "{{\"jobs\": [{{\"read\": {}, \"write\": {}}}, {{\"read\": {}, \"write\": {}}}]}}",
            job(100, 61, 2, 2.0, s2),
            job(0, 0, 0, 0.0, 0.0),
            job(50, 60, 2, 6.0, s2),
            job(0, 0, 0, 0.0, 0.0)
        );
        let s = FioStats::parse(&text).unwrap();
        assert_eq!((s.read.bytes, s.read.runtime_s), (150, 0.061));
        assert!((s.read.clat_mean_ns - 4.0).abs() < 1e-12);
        assert!((s.read.clat_stdev_ns - (20.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn broken_reports_and_job_errors_are_errors() {
        let e = FioStats::parse("{\"jobs\": []}").unwrap_err().to_string();
        assert_eq!(e, "fio's JSON report has no jobs");
        let e = FioStats::parse("fio: pid=0\n{x").unwrap_err().to_string();
        assert!(e.starts_with("fio's JSON report does not parse"), "{e}");
        let e = FioStats::parse("{\"jobs\": [{\"read\": {}}]}").unwrap_err().to_string();
        assert_eq!(e, "fio's JSON report has no read.io_bytes");
        let e = FioStats::parse("{\"jobs\": [{\"jobname\": \"v\", \"error\": 2}]}")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("fio failed: job v ended with error 2 (No such file"),
            "{e}"
        );
    }

    #[test]
    fn the_block_device_below_a_root_port() {
        use crate::fixture::{self, DwcVariant, Tree};
        let t = Tree::new("fio-block");
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.root_port("0000:30:03.0", "0");
        t.nic_below("0000:30:03.0", "0000:31:00.0");
        let sys = System::discover(t.path()).unwrap();
        assert_eq!(block_device_below(&sys, "0000:30:03.0").unwrap(), None);
        let nvme = "devices/pci0000:30/0000:30:03.0/0000:31:00.0/nvme/nvme0/nvme0n1";
        t.attr(&format!("sys/{nvme}/size"), "0");
        t.symlink("sys/block/nvme0n1", &format!("../{nvme}"));
        let sys = System::discover(t.path()).unwrap();
        assert_eq!(
            block_device_below(&sys, "0000:30:03.0").unwrap(),
            Some(PathBuf::from("/dev/nvme0n1"))
        );
        assert_eq!(block_device_below(&sys, "0000:00:02.0").unwrap(), None);
    }

    #[test]
    fn the_report_goes_to_a_private_directory_removed_when_done_or_dropped() {
        use std::os::unix::fs::PermissionsExt;
        if check_installed().is_err() {
            eprintln!("skipped: fio is not installed (apt install fio)");
            return;
        }
        let job = StorageJob {
            port: "0000:00:02.0".into(),
            rw: Rw::Read,
            bs: 4096,
            iodepth: 1,
            numjobs: 1,
            runtime: Some(60.0),
            size: None,
        };
        // fio fails on a file that does not exist: an error path, and one that ends quickly.
        let missing = Path::new("/nonexistent/pcie-pmu-fio-test");
        let start = |job: &StorageJob| {
            let run = FioRun::start(job, missing).unwrap();
            let dir = run.dir.path().to_path_buf();
            assert_eq!(dir.parent(), Some(std::env::temp_dir().as_path()));
            let mode = std::fs::symlink_metadata(&dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", dir.display());
            (run, dir)
        };
        let (mut run, dir) = start(&job);
        let outcome = loop {
            if let Some(r) = run.poll() {
                break r;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(outcome.is_err(), "{outcome:?}");
        drop(run);
        assert!(!dir.exists(), "{} is still there", dir.display());
        // Dropped at once, whether fio still runs or not.
        let (run, dir) = start(&job);
        drop(run);
        assert!(!dir.exists(), "{} is still there", dir.display());
    }

    #[test]
    fn options_follow_the_job() {
        let mut j = StorageJob {
            port: "0000:00:02.0".into(),
            rw: Rw::ReadWrite,
            bs: 1 << 20,
            iodepth: 4,
            numjobs: 2,
            runtime: Some(20.0),
            size: None,
        };
        let a = args(&j, Path::new("/dev/sda")).join(" ");
        assert!(
            a.ends_with("--filename=/dev/sda --rw=readwrite --bs=1048576 --iodepth=4 --numjobs=2 --runtime=20000ms --time_based"),
            "{a}"
        );
        (j.runtime, j.size) = (None, Some(64 << 20));
        let a = args(&j, Path::new("/dev/disk/by-path/pci-0000:01:00.0-nvme-1")).join(" ");
        assert!(
            a.contains(" --filename=/dev/disk/by-path/pci-0000\\:01\\:00.0-nvme-1 "),
            "{a}"
        );
        assert!(
            a.ends_with("--numjobs=2 --size=67108864") && !a.contains("time_based"),
            "{a}"
        );
    }
}
