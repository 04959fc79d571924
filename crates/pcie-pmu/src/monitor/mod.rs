//! The sampling core behind live PMU commands (`pmu stat`, `top`, `record`, `serve`): which
//! events to count and what they mean (bytes per count, metric, root port and its link model:
//! [`Plan`]), opening them on a [`CounterSource`](crate::CounterSource) and reading them every
//! interval into [`Row`]s ([`Monitor`]), summing rows per root port ([`Target`], [`Trend`]),
//! and the [`run`] loop (interval, duration, command, cancel flag) that waits and timestamps
//! through the source and hands each interval to a front end's [`Sink`].

mod counting;
mod error;
mod events;
#[cfg(all(unix, any(test, feature = "fixture")))]
mod fixture_monitor;
mod plan;
mod row;
mod schedule;
mod target;

pub use counting::Monitor;
pub use error::MonitorError;
pub use events::{payload, payload_events, resolve_events, Requested};
#[cfg(all(unix, any(test, feature = "fixture")))]
pub use fixture_monitor::dwc_payload_monitor;
pub use plan::{LinkModel, Plan, Port, Watch, WrapWarning};
pub use row::Row;
pub use schedule::{run, RunSummary, Schedule, Sink};
pub use target::{add_interval, Target, Trend};

/// The most events one command counts (each is a file descriptor per CPU it opens on).
pub const MAX_EVENTS: usize = 4096;

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::counter::event_name;
    use crate::fixture::{self, dwc_host, DwcVariant, StepSource, Tree};
    use crate::{PmuMetric, System};
    use pcie_model::{stream, Generation, LinkConfig, LinkParams, Op};
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    #[test]
    fn bytes_per_count_follows_the_catalog_and_the_kernel_scale() {
        let t = Tree::new("monitor-payload");
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.intel_cpu(143);
        fixture::intel_iio_pmus(&t, 0, 40, "3.0517578125e-5", &["0000:00"]);
        let sys = System::discover(t.path()).unwrap();
        let views = sys.pcie_pmus().unwrap();
        let p = |spec: &str| payload(&views, &sys.resolve(spec).unwrap());
        assert_eq!(
            p("pcie_bdf_300300/Rx_PCIe_TLP_Data_Payload/"),
            (Some(16.0), Some(PmuMetric::RxBytes))
        );
        assert_eq!(
            p("dwc_rootport_3018/tx_pcie_tlp_data_payload/"),
            (Some(1.0), Some(PmuMetric::TxBytes))
        );
        // A counting event has a metric but no bytes.
        let (b, m) = p("dwc_rootport_3018/rx_memory_read,lane=1/");
        assert_eq!(b, None);
        assert!(m.is_some());
        assert_eq!(p("uncore_iio_free_running_0/bw_in_port0/").0, Some(32.0));
        assert_eq!(p("msr/tsc/"), (None, None));
        assert_eq!(p("software/cpu-clock/"), (None, None));
        // Every instance of a PMU base name resolves.
        let all = sys.resolve_all("dwc_rootport/rx_pcie_tlp_data_payload/").unwrap();
        assert_eq!(all.len(), 1);
    }

    #[test]
    fn narrow_unpolled_counters_warn_when_reads_are_too_far_apart() {
        let t = dwc_host("monitor-wrap");
        let sys = System::discover(t.path()).unwrap();
        let plan = |spec: &str| Plan::new(&sys, vec![sys.resolve(spec).unwrap()]).unwrap();
        let v1 = plan("pcie_bdf_300300/Rx_PCIe_TLP_Data_Payload/");
        // 2^32 x 16 B at 504 Gb/s: a wrap every 1.09 s.
        assert!(v1.wrap_warnings(1.0).is_empty());
        let w = v1.wrap_warnings(2.0);
        assert_eq!(w.len(), 1);
        assert_eq!(format!("{:.2}", w[0].wraps_every_s), "1.09", "{:?}", w[0]);
        assert_eq!(w[0].safe_interval_ms(), 545.0, "{:?}", w[0]);
        assert_eq!((w[0].width, w[0].bytes_per_count, w[0].read_every_s), (32, 16.0, 2.0));
        // Upstream drivers read 64 bits.
        let upstream = plan("dwc_rootport_3018/rx_pcie_tlp_data_payload/");
        assert!(upstream.wrap_warnings(10.0).is_empty());
        let g = LinkModel::of("8.0 GT/s PCIe", 8).unwrap();
        assert_eq!((g.raw_gbps * 100.0).round(), 6302.0);
        assert_eq!(LinkModel::of("unknown", 8), None);
    }

    #[test]
    fn link_model_follows_pcie_model() {
        let m = LinkModel::of("32.0 GT/s PCIe", 16).unwrap();
        let cfg = LinkConfig::new(&LinkParams {
            gen: Generation::Gen5,
            lanes: 16,
            ..LinkParams::default()
        })
        .unwrap();
        assert_eq!(m.rx_gbps, stream(&cfg, Op::Wr, 4096, 0).unwrap().payload.0);
        assert_eq!(m.tx_gbps, stream(&cfg, Op::Rd, 4096, 0).unwrap().payload.0);
        // TLP and DLLP overheads keep the payload below the raw rate.
        assert!(m.rx_gbps < m.raw_gbps && m.rx_gbps > 0.8 * m.raw_gbps, "{m:?}");
    }

    #[test]
    fn default_events_are_the_payload_metrics_of_every_pcie_pmu() {
        let t = dwc_host("monitor-default");
        let sys = System::discover(t.path()).unwrap();
        let evs = payload_events(&sys).unwrap();
        let names: Vec<String> = evs.iter().map(event_name).collect();
        assert_eq!(names.len(), 4, "{names:?}");
        for pmu in ["pcie_bdf_300300", "dwc_rootport_3018"] {
            assert!(names
                .iter()
                .any(|n| n.starts_with(pmu) && n.to_lowercase().contains("rx_pcie_tlp_data_payload")));
            assert!(names
                .iter()
                .any(|n| n.starts_with(pmu) && n.to_lowercase().contains("tx_pcie_tlp_data_payload")));
        }
        let bare = Tree::new("monitor-no-pcie");
        fixture::common_pmus(&bare);
        let sys = System::discover(bare.path()).unwrap();
        let e = payload_events(&sys).unwrap_err();
        assert!(matches!(e, MonitorError::NoPayloadEvents) && e.is_input(), "{e}");
        assert!(e.to_string().starts_with("no PCIe PMU"), "{e}");
    }

    #[test]
    fn rows_sum_per_root_port_with_the_link_share() {
        let t = dwc_host("monitor-targets");
        let sys = System::discover(t.path()).unwrap();
        let mut events = resolve_events(
            &sys,
            &["dwc_rootport_3018/rx_pcie_tlp_data_payload/,dwc_rootport_3018/tx_pcie_tlp_data_payload/".into()],
        )
        .unwrap();
        events.extend(resolve_events(&sys, &["software/cpu-clock/".into()]).unwrap());
        let plan = Plan::new(&sys, events).unwrap();
        assert_eq!(plan.ports.len(), 1);
        assert_eq!(plan.ports[0].name, "0000:30:03.0");
        let model = plan.ports[0].model.unwrap();
        let mut src = StepSource::default();
        let mut mon = Monitor::open(&mut src, plan).unwrap();
        mon.refresh(&mut src).unwrap();
        let rows = mon.sample(&mut src, 0.1, 0.1).unwrap();
        assert_eq!(rows.len(), 3);
        // 1e6 counts running half the time: 2e6 bytes in 0.1 s = 0.16 Gb/s.
        assert_eq!(rows[0].gbps, Some(0.16));
        assert_eq!(rows[0].root_port.as_deref(), Some("0000:30:03.0"));
        assert_eq!(rows[2].root_port, None);
        let targets = mon.targets(&rows);
        assert_eq!(targets.len(), 2);
        let port = &targets[0];
        assert_eq!(port.name, "0000:30:03.0");
        assert_eq!((port.rx_gbps, port.tx_gbps), (Some(0.16), Some(0.16)));
        assert_eq!(port.rx_pct, Some(100.0 * 0.16 / model.rx_gbps));
        assert_eq!(port.tx_pct, Some(100.0 * 0.16 / model.tx_gbps));
        assert_eq!(port.running_pct, 50.0);
        assert_eq!(port.rate, None);
        let sw = &targets[1];
        assert_eq!(sw.name, "software/cpu-clock/");
        assert_eq!(sw.rate, Some(2e7));
        assert_eq!((sw.rx_gbps, sw.rx_pct), (None, None));
    }

    #[test]
    fn trends_keep_the_last_values_per_target() {
        let t = |name: &str, rx: Option<f64>, rate: Option<f64>| Target {
            name: name.into(),
            pmus: "p".into(),
            link: None,
            rx_gbps: rx,
            tx_gbps: rx.map(|r| r / 2.0),
            rx_pct: None,
            tx_pct: None,
            rate,
            running_pct: 100.0,
        };
        let mut trends = Vec::new();
        for i in 0..5 {
            let x = i as f64;
            add_interval(
                &mut trends,
                vec![t("port", Some(x), None), t("sw/ev/", None, Some(10.0 * x))],
                3,
            );
        }
        assert_eq!(trends.len(), 2);
        // Rx + Tx of the last three intervals; the count rate where there is no payload.
        assert_eq!(trends[0].history, [3.0, 4.5, 6.0]);
        assert_eq!(trends[1].history, [20.0, 30.0, 40.0]);
        assert_eq!(trends[0].last.rx_gbps, Some(4.0));
    }

    /// Collects what the loop hands over.
    struct Collect(Vec<Vec<Row>>);

    impl Sink for Collect {
        type Error = MonitorError;
        fn interval(&mut self, _mon: &Monitor, rows: &[Row]) -> Result<bool, MonitorError> {
            self.0.push(rows.to_vec());
            Ok(true)
        }
    }

    #[test]
    fn the_loop_closes_intervals_on_the_source_clock() {
        let t = dwc_host("monitor-loop");
        let sys = System::discover(t.path()).unwrap();
        let plan = Plan::new(&sys, resolve_events(&sys, &["software/cpu-clock/".into()]).unwrap()).unwrap();
        let mut src = StepSource::default();
        let mut mon = Monitor::open(&mut src, plan).unwrap();
        let sched = Schedule {
            interval: Some(Duration::from_millis(250)),
            duration: Some(1.1),
            command: &[],
        };
        let mut sink = Collect(Vec::new());
        let summary = run(&mut src, &mut mon, sched, &AtomicBool::new(false), &mut sink).unwrap();
        let secs = summary.secs;
        assert!((secs - 1.1).abs() < 1e-9, "{secs}");
        assert_eq!(summary.command_status, None);
        let times: Vec<f64> = sink.0.iter().map(|r| (r[0].time_s * 1000.0).round()).collect();
        assert_eq!(times, vec![250.0, 500.0, 750.0, 1000.0, 1100.0]);
        assert!((sink.0[4][0].interval_s - 0.1).abs() < 1e-9);
    }
}
