//! The seed study's accuracy check: a root port's payload events counted while a workload
//! (fio, or the simulated fio) runs behind it ([`measure`], on the monitor's counting), and
//! each event's bytes beside what the workload says it moved that way ([`Comparison`]).

use crate::fio::FioStats;
use crate::monitor::{Monitor, MonitorError, Plan, Watch};
use crate::{CounterSource, Delta, PmuError, PmuMetric, ResolvedEvent, System};
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// Direction of a payload event: `rx` device to host (what reads move), `tx` host to device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Rx,
    Tx,
}

impl Dir {
    pub fn name(self) -> &'static str {
        match self {
            Dir::Rx => "rx",
            Dir::Tx => "tx",
        }
    }

    /// The catalog metric of this direction's payload event.
    pub fn metric(self) -> PmuMetric {
        match self {
            Dir::Rx => PmuMetric::RxBytes,
            Dir::Tx => PmuMetric::TxBytes,
        }
    }
}

/// One row of the study's table: the PMU's side, then fio's for the same direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
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

impl Comparison {
    /// Compare the total `t` of event `ev` (`bytes_per_count` bytes a count) with the workload.
    pub fn new(dir: Dir, ev: &ResolvedEvent, t: &Delta, bytes_per_count: f64, fio: &FioStats) -> Comparison {
        let w = fio.dir(dir == Dir::Rx);
        let pmu_bytes = t.bytes(bytes_per_count).unwrap_or(0.0);
        Comparison {
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
        dir: Dir,
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
    pub dir: Dir,
    pub ev: ResolvedEvent,
    pub bytes_per_count: f64,
}

/// The payload events for `dirs` of the PMU that watches root port `port` (`0000:00:02.0`).
pub fn port_payload_events(sys: &System, port: &str, dirs: &[Dir]) -> Result<Vec<PayloadEvent>, ValidateError> {
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
pub struct Measured {
    monitor: Monitor,
    dirs: Vec<Dir>,
    /// Seconds counted, on the source's clock.
    pub secs: f64,
}

impl Measured {
    /// One comparison per event with the workload's statistics.
    pub fn comparisons(&self, fio: &FioStats) -> Vec<Comparison> {
        self.monitor
            .total_deltas()
            .zip(&self.dirs)
            .map(|((w, total), &dir)| Comparison::new(dir, &w.ev, &total, w.bytes_per_count.unwrap_or(1.0), fio))
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
) -> Result<Measured, E> {
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
    Ok(Measured {
        monitor,
        dirs,
        secs: (src.elapsed() - start).as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::DirStats;

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
        let r = Comparison::new(Dir::Tx, &ev, &t, 16.0, &fio);
        assert_eq!((r.event, r.workload_bytes, r.pmu_bytes), ("tx", 2097152, 2099200.0));
        assert!((r.error_pct.unwrap() - 100.0 * 2048.0 / 2097152.0).abs() < 1e-12);
        assert_eq!((r.running_pct, r.workload_mib_s, r.runtime_s), (50.0, 4.0, 0.5));
        assert_eq!((r.clat_avg_ms, r.clat_stdev_ms), (1.5, 0.2));
        let r = Comparison::new(Dir::Rx, &ev, &t, 16.0, &fio);
        assert_eq!((r.workload_bytes, r.error_pct, r.workload_mib_s), (0, None, 0.0));
    }
}
