//! The seed study's accuracy check: a root port's payload events counted while a workload
//! (fio, or the simulated fio) runs behind it ([`measure`], on the monitor's counting), and
//! each event's bytes beside what the workload says it moved that way ([`ValidationRow`]). The
//! workload comes from fio's options as a user types them ([`JobSpec`]).

pub mod fio;

use crate::monitor::{Monitor, MonitorError, Plan, Watch};
use crate::sim::workload::{self, StorageJob, WorkloadError};
use crate::{CounterSource, Delta, PmuError, PmuMetric, ResolvedEvent, System};
use fio::FioStats;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// Direction of a payload event: `rx` device to host (what reads move), `tx` host to device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadDir {
    Rx,
    Tx,
}

impl PayloadDir {
    pub fn name(self) -> &'static str {
        match self {
            PayloadDir::Rx => "rx",
            PayloadDir::Tx => "tx",
        }
    }

    /// `rx`, `tx` or both, comma-separated, each once in the order given.
    pub fn parse_list(text: &str) -> Result<Vec<PayloadDir>, String> {
        let mut out = Vec::new();
        for part in text.split(',').map(str::trim) {
            let d = match part {
                "rx" => PayloadDir::Rx,
                "tx" => PayloadDir::Tx,
                _ => return Err(format!("{part:?} is not an event; use rx, tx or rx,tx")),
            };
            if !out.contains(&d) {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// The catalog metric of this direction's payload event.
    pub fn metric(self) -> PmuMetric {
        match self {
            PayloadDir::Rx => PmuMetric::RxBytes,
            PayloadDir::Tx => PmuMetric::TxBytes,
        }
    }
}

/// The runtime of a job given neither a runtime nor a size, in seconds.
pub const DEFAULT_RUNTIME_S: f64 = 20.0;
/// The largest size of a simulated job: the simulation runs at about the link's pace, so this
/// bounds a run to minutes.
pub const SIM_MAX_JOB_SIZE: u64 = 64 << 30;

/// The study's workload as fio's options are written (`bs` `1M`, `runtime` `20s`), before
/// they are checked; a runtime and a size exclude each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    pub port: String,
    pub rw: String,
    pub bs: String,
    pub iodepth: String,
    pub numjobs: String,
    pub runtime: Option<String>,
    pub size: Option<String>,
}

impl JobSpec {
    /// The checked job, not yet fitted to a host: time-based ([`DEFAULT_RUNTIME_S`] unless
    /// given) unless a size is given.
    pub fn job(&self) -> Result<StorageJob, WorkloadError> {
        let runtime = match (&self.runtime, &self.size) {
            (Some(r), _) => Some(workload::parse_runtime(r)?),
            (None, None) => Some(DEFAULT_RUNTIME_S),
            (None, Some(_)) => None,
        };
        Ok(StorageJob {
            port: workload::check_port(&self.port)?,
            rw: workload::parse_rw(&self.rw)?,
            bs: workload::parse_bs(&self.bs)?,
            iodepth: workload::parse_iodepth(&self.iodepth)?,
            numjobs: workload::parse_numjobs(&self.numjobs)?,
            runtime,
            size: self.size.as_deref().map(workload::parse_job_size).transpose()?,
        })
    }

    /// Refuses a size the simulator would take too long over ([`SIM_MAX_JOB_SIZE`]).
    pub fn check_sim(&self, job: &StorageJob) -> Result<(), WorkloadError> {
        match (job.size, &self.size) {
            (Some(size), Some(text)) if size > SIM_MAX_JOB_SIZE => Err(WorkloadError {
                key: "size".into(),
                value: text.clone(),
                reason: "at most 64G per job with --source sim (a simulated host takes about as long as a real one)"
                    .into(),
            }),
            _ => Ok(()),
        }
    }

    /// One line for the table's footer: `port P: rw=read bs=1M iodepth=64 numjobs=4 runtime=20s`.
    pub fn describe(&self, job: &StorageJob) -> String {
        let limit = match (&job.runtime, &self.size) {
            (_, Some(s)) => format!("size={s}"),
            (Some(r), None) => format!("runtime={r}s"),
            (None, None) => String::new(),
        };
        format!(
            "port {}: rw={} bs={} iodepth={} numjobs={} {limit}",
            job.port,
            job.rw.name(),
            self.bs,
            job.iodepth,
            job.numjobs
        )
    }
}

/// One row of the study's table: the PMU's side, then fio's for the same direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationRow {
    pub event: &'static str,
    pub pmu: String,
    pub pmu_event: String,
    pub workload_bytes: u64,
    pub pmu_bytes: f64,
    /// `100 × (pmu − workload) / workload`; absent when the workload moved nothing this way.
    pub error_pct: Option<f64>,
    pub running_pct: f64,
    pub raw: u64,
    pub enabled_ns: u64,
    pub running_ns: u64,
    /// fio's bandwidth this way, `workload_bytes / 2^20 / runtime_s`.
    pub workload_mib_s: f64,
    pub runtime_s: f64,
    pub clat_avg_ms: f64,
    pub clat_stdev_ms: f64,
}

impl ValidationRow {
    /// Compare the total `t` of event `ev` (`bytes_per_count` bytes a count) with the workload.
    pub fn new(dir: PayloadDir, ev: &ResolvedEvent, t: &Delta, bytes_per_count: f64, fio: &FioStats) -> ValidationRow {
        let w = fio.dir(dir == PayloadDir::Rx);
        let pmu_bytes = t.bytes(bytes_per_count).unwrap_or(0.0);
        ValidationRow {
            event: dir.name(),
            pmu: ev.pmu.clone(),
            pmu_event: ev.event.clone().unwrap_or_default(),
            workload_bytes: w.bytes,
            pmu_bytes,
            error_pct: (w.bytes > 0).then(|| 100.0 * (pmu_bytes - w.bytes as f64) / w.bytes as f64),
            running_pct: t.running_pct(),
            raw: t.raw,
            enabled_ns: t.enabled_ns,
            running_ns: t.running_ns,
            workload_mib_s: w.mib_s(),
            runtime_s: w.runtime_s,
            clat_avg_ms: w.clat_mean_ns / 1e6,
            clat_stdev_ms: w.clat_stdev_ns / 1e6,
        }
    }
}

/// Why a port's payload events cannot be compared.
#[derive(Debug)]
pub enum ValidateError {
    /// No PCIe PMU watches `port`; `ports` are the root ports that have one.
    NoPmu {
        port: String,
        ports: Vec<String>,
    },
    /// The port's PMU has no payload event in that direction.
    NoPayloadEvent {
        dir: PayloadDir,
        pmu: String,
    },
    Pmu(PmuError),
}

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValidateError::NoPmu { port, ports } => write!(
                f,
                "{port}: no PCIe PMU watches this root port; root ports with one: {}",
                if ports.is_empty() {
                    "none".to_string()
                } else {
                    ports.join(", ")
                }
            ),
            ValidateError::NoPayloadEvent { dir, pmu } => {
                write!(f, "PMU {pmu} has no {} payload event", dir.name())
            }
            ValidateError::Pmu(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ValidateError {}

impl From<PmuError> for ValidateError {
    fn from(e: PmuError) -> Self {
        ValidateError::Pmu(e)
    }
}

/// A payload event to compare with the workload.
#[derive(Debug, Clone)]
pub struct PayloadEvent {
    pub dir: PayloadDir,
    pub ev: ResolvedEvent,
    pub bytes_per_count: f64,
}

/// The payload events for `dirs` of the PMU that watches root port `port` (`0000:00:02.0`).
pub fn port_payload_events(sys: &System, port: &str, dirs: &[PayloadDir]) -> Result<Vec<PayloadEvent>, ValidateError> {
    let views = sys.pcie_pmus()?;
    let Some(view) = views
        .iter()
        .find(|v| v.root_ports.iter().any(|r| r.bdf.to_string() == port))
    else {
        return Err(ValidateError::NoPmu {
            port: port.to_string(),
            ports: views
                .iter()
                .flat_map(|v| v.root_ports.iter().map(|r| r.bdf.to_string()))
                .collect(),
        });
    };
    let mut out = Vec::new();
    for &dir in dirs {
        let e = view
            .events
            .iter()
            .find(|e| e.metric == Some(dir.metric()) && e.bytes_per_count.is_some())
            .ok_or_else(|| ValidateError::NoPayloadEvent {
                dir,
                pmu: view.pmu.name.clone(),
            })?;
        let ev = sys.resolve(&format!("{}/{}/", view.pmu.name, e.name))?;
        out.push(PayloadEvent {
            dir,
            ev,
            bytes_per_count: e.bytes_per_count.unwrap_or(1.0),
        });
    }
    Ok(out)
}

/// What [`measure`] counted.
pub struct Counted {
    monitor: Monitor,
    dirs: Vec<PayloadDir>,
    /// Seconds counted, on the source's clock.
    pub secs: f64,
}

impl Counted {
    /// One comparison per event with the workload's statistics.
    pub fn rows(&self, fio: &FioStats) -> Vec<ValidationRow> {
        self.monitor
            .total_deltas()
            .zip(&self.dirs)
            .map(|((w, total), &dir)| ValidationRow::new(dir, &w.ev, &total, w.bytes_per_count.unwrap_or(1.0), fio))
            .collect()
    }
}

/// Open the events (each on its own), read them every `interval` until `finished` says the
/// workload is over (then once more, for TLPs still on the wire).
pub fn measure<S: CounterSource, E: From<MonitorError>>(
    src: &mut S,
    events: Vec<PayloadEvent>,
    interval: Duration,
    mut finished: impl FnMut(&mut S) -> Result<bool, E>,
) -> Result<Counted, E> {
    let dirs = events.iter().map(|e| e.dir).collect();
    let plan = Plan {
        watches: events
            .into_iter()
            .map(|e| Watch {
                metric: Some(e.dir.metric()),
                ev: e.ev,
                bytes_per_count: Some(e.bytes_per_count),
                port: None,
                group: None,
                user_group: false,
            })
            .collect(),
        ports: Vec::new(),
    };
    let mut monitor = Monitor::open(src, plan)?;
    let start = src.elapsed();
    monitor.refresh(src)?;
    let mut last = false;
    loop {
        src.sleep(interval).map_err(MonitorError::from)?;
        monitor.refresh(src)?;
        if last {
            break;
        }
        last = finished(src)?;
    }
    Ok(Counted {
        monitor,
        dirs,
        secs: (src.elapsed() - start).as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec {
            port: "00:02.0".into(),
            rw: "read".into(),
            bs: "1M".into(),
            iodepth: "64".into(),
            numjobs: "4".into(),
            runtime: None,
            size: None,
        }
    }

    #[test]
    fn events_parse() {
        assert_eq!(
            PayloadDir::parse_list("rx,tx").unwrap(),
            vec![PayloadDir::Rx, PayloadDir::Tx]
        );
        assert_eq!(PayloadDir::parse_list("tx, tx").unwrap(), vec![PayloadDir::Tx]);
        let e = PayloadDir::parse_list("rx,bytes").unwrap_err();
        assert_eq!(e, "\"bytes\" is not an event; use rx, tx or rx,tx");
    }

    #[test]
    fn a_job_runs_20_s_unless_given_a_runtime_or_a_size() {
        let j = spec().job().unwrap();
        assert_eq!(
            (j.port.as_str(), j.bs, j.iodepth, j.numjobs),
            ("0000:00:02.0", 1 << 20, 64, 4)
        );
        assert_eq!((j.runtime, j.size), (Some(DEFAULT_RUNTIME_S), None));
        assert_eq!(
            spec().describe(&j),
            "port 0000:00:02.0: rw=read bs=1M iodepth=64 numjobs=4 runtime=20s"
        );
        let sized = JobSpec {
            size: Some("2G".into()),
            ..spec()
        };
        let j = sized.job().unwrap();
        assert_eq!((j.runtime, j.size), (None, Some(2 << 30)));
        assert!(sized.describe(&j).ends_with(" size=2G"));
        let e = JobSpec {
            numjobs: "0".into(),
            ..spec()
        }
        .job()
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.value.as_str()), ("numjobs", "0"));
    }

    #[test]
    fn the_simulator_takes_at_most_64g_a_job() {
        for (size, ok) in [("64G", true), ("65G", false)] {
            let s = JobSpec {
                size: Some(size.into()),
                ..spec()
            };
            let r = s.check_sim(&s.job().unwrap());
            assert_eq!(r.is_ok(), ok, "{size}");
        }
        let e = JobSpec {
            size: Some("65G".into()),
            ..spec()
        };
        let e = e.check_sim(&e.job().unwrap()).unwrap_err();
        assert_eq!((e.key.as_str(), e.value.as_str()), ("size", "65G"));
    }
    use fio::DirStats;

    #[test]
    fn a_row_pairs_the_event_with_its_direction_of_fio() {
        let ev = ResolvedEvent {
            pmu: "dwc_rootport_10".into(),
            type_id: 27,
            event: Some("tx_pcie_tlp_data_payload".into()),
            config: [0; 4],
            scale: None,
            unit: None,
            cpumask: vec![0],
        };
        let fio = FioStats {
            read: DirStats::default(),
            write: DirStats {
                bytes: 2 << 20,
                runtime_s: 0.5,
                clat_mean_ns: 1.5e6,
                clat_stdev_ns: 2e5,
            },
        };
        // Counted half the time, in 16 B units: 65600 counts scale to 2099200 bytes.
        let t = Delta::new(65600, 1_000_000, 500_000);
        let r = ValidationRow::new(PayloadDir::Tx, &ev, &t, 16.0, &fio);
        assert_eq!((r.event, r.workload_bytes, r.pmu_bytes), ("tx", 2097152, 2099200.0));
        assert!((r.error_pct.unwrap() - 100.0 * 2048.0 / 2097152.0).abs() < 1e-12);
        assert_eq!((r.running_pct, r.workload_mib_s, r.runtime_s), (50.0, 4.0, 0.5));
        assert_eq!((r.clat_avg_ms, r.clat_stdev_ms), (1.5, 0.2));
        let r = ValidationRow::new(PayloadDir::Rx, &ev, &t, 16.0, &fio);
        assert_eq!((r.workload_bytes, r.error_pct, r.workload_mib_s), (0, None, 0.0));
    }
}
