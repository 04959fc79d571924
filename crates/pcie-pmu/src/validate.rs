//! The seed study's accuracy check: a payload event's bytes beside what the workload (fio, or
//! the simulated fio) says it moved that way, as one row per event.

use crate::fio::FioStats;
use crate::{Delta, ResolvedEvent};
use serde::Serialize;

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
    pub fn metric(self) -> &'static str {
        match self {
            Dir::Rx => "rx_bytes",
            Dir::Tx => "tx_bytes",
        }
    }
}

/// One row of the study's table: the PMU's side, then fio's for the same direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
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

impl Row {
    /// Compare the total `t` of event `ev` (`bytes_per_count` bytes a count) with the workload.
    pub fn new(dir: Dir, ev: &ResolvedEvent, t: &Delta, bytes_per_count: f64, fio: &FioStats) -> Row {
        let w = fio.dir(dir == Dir::Rx);
        let pmu_bytes = t.bytes(bytes_per_count).unwrap_or(0.0);
        Row {
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
        let r = Row::new(Dir::Tx, &ev, &t, 16.0, &fio);
        assert_eq!((r.event, r.workload_bytes, r.pmu_bytes), ("tx", 2097152, 2099200.0));
        assert!((r.error_pct.unwrap() - 100.0 * 2048.0 / 2097152.0).abs() < 1e-12);
        assert_eq!((r.running_pct, r.workload_mib_s, r.runtime_s), (50.0, 4.0, 0.5));
        assert_eq!((r.clat_avg_ms, r.clat_stdev_ms), (1.5, 0.2));
        let r = Row::new(Dir::Rx, &ev, &t, 16.0, &fio);
        assert_eq!((r.workload_bytes, r.error_pct, r.workload_mib_s), (0, None, 0.0));
    }
}
