//! The sampling core behind `pmu stat`, `top`, `record` and `serve`: which events to count and
//! what they mean (bytes per count, metric, root port and its link model), opening them on a
//! [`CounterSource`], reading them every interval into rows, summing rows per root port, and the
//! run loop (interval, duration, command, Ctrl-C) that waits and timestamps through the source.

use super::source::{self, SimArgs, SourceArgs};
use crate::error::CliError;
use crate::output::{Cell, Table};
use clap::Args;
use pcie_model::{stream, Generation, LinkConfig, LinkParams, Op};
use pcie_pmu::accumulate::{gbps, max_interval_secs};
use pcie_pmu::counter::event_name;
use pcie_pmu::event_spec::split_event_list;
use pcie_pmu::{
    Accumulator, CounterError, CounterId, CounterSource, Delta, PciDevice, PcieView, PmuError, PmuEvent, ResolvedEvent,
    System,
};
use serde::Serialize;
use std::collections::VecDeque;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod counting;
mod events;
mod plan;
mod row;
mod schedule;

pub use counting::*;
pub use events::*;
pub use plan::*;
pub use row::*;
pub use schedule::*;

/// Options shared by the live commands (`top`, `record`, `serve`).
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Events: PMU/EVENT[,TERM=VALUE...]/ specs separated by commas, may be repeated [default:
    /// the rx_bytes / tx_bytes payload events of every PCIe PMU]
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub events: Vec<String>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Read the counters every MS milliseconds
    #[arg(short = 'I', long = "interval", value_name = "MS", default_value_t = 1000)]
    pub interval: u64,
}

impl WatchArgs {
    /// Discover, resolve the events (or the default payload events), plan and open them.
    pub fn open(&self) -> Result<(Monitor, Box<dyn CounterSource>), CliError> {
        check_interval(Some(self.interval))?;
        let (sys, mut src) = source::open(&self.source, &self.sim)?;
        let events = if self.events.is_empty() {
            let place = match self.source.source.as_str() {
                "perf" => format!("--sysfs {}", self.source.sysfs.display()),
                other => format!("--source {other}"),
            };
            payload_events(&sys, &place)?.into_iter().map(Requested::from).collect()
        } else {
            resolve_events(&sys, &self.events)?
        };
        let plan = Plan::new(&sys, events)?;
        plan.warn_wraps(self.interval as f64 / 1000.0);
        let mon = Monitor::open(src.as_mut(), plan)?;
        Ok((mon, src))
    }
}

pub fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

pub fn counter_err(e: CounterError) -> CliError {
    if e.is_input() {
        CliError::Usage(e.to_string())
    } else {
        CliError::Runtime(e.to_string())
    }
}

/// The longest `-I`: a day, in milliseconds.
pub const MAX_INTERVAL_MS: u64 = 86_400_000;

/// `-I MS`: 1 ms to a day.
pub fn check_interval(ms: Option<u64>) -> Result<(), CliError> {
    match ms {
        Some(0) => Err(usage("-I 0: the interval must be at least 1 ms")),
        Some(ms) if ms > MAX_INTERVAL_MS => Err(usage(format!(
            "-I {ms}: the interval must be at most {MAX_INTERVAL_MS} ms (a day)"
        ))),
        _ => Ok(()),
    }
}

/// The shortest and longest `--duration`, in seconds (1 ms; about 31 years).
pub const DURATION_RANGE: (f64, f64) = (0.001, 1e9);

/// `--duration S`: a finite number of seconds from 1 ms to 1e9 s.
pub fn check_duration(d: Option<f64>) -> Result<(), CliError> {
    let (min, max) = DURATION_RANGE;
    match d {
        Some(d) if !(d.is_finite() && d > 0.0) => {
            Err(usage(format!("--duration {d}: must be a positive number of seconds")))
        }
        Some(d) if !(min..=max).contains(&d) => Err(usage(format!(
            "--duration {d:e}: must be from {min} to {max:e} seconds"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use pcie_pmu::fixture::{self, DwcVariant, Tree};
    use pcie_pmu::Reading;

    /// A source whose counters advance by a fixed step per read and run half the time, on a
    /// clock that only moves when the monitor sleeps.
    #[derive(Default)]
    pub struct Fake {
        pub reads: Vec<Reading>,
        pub now: Duration,
    }

    impl CounterSource for Fake {
        fn open(&mut self, _e: &ResolvedEvent) -> Result<CounterId, CounterError> {
            self.reads.push(Reading::default());
            Ok(CounterId(self.reads.len() - 1))
        }
        fn read(&mut self, id: CounterId) -> Result<Reading, CounterError> {
            let r = &mut self.reads[id.0];
            let now = *r;
            r.value += 1_000_000;
            r.enabled += 100_000_000;
            r.running += 50_000_000;
            Ok(now)
        }
        fn elapsed(&self) -> Duration {
            self.now
        }
        fn sleep(&mut self, d: Duration) -> Result<(), CounterError> {
            self.now += d;
            Ok(())
        }
    }

    /// A host with a Gen5 x16 root port behind an upstream DWC PMU and a pre-upstream one.
    pub fn dwc_host(name: &str) -> Tree {
        let t = Tree::new(name);
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.root_port("0000:30:03.0", "0"); // 32 GT/s x16: 504 Gb/s
        t
    }

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
            (Some(16.0), Some("rx_bytes".into()))
        );
        assert_eq!(
            p("dwc_rootport_3018/tx_pcie_tlp_data_payload/"),
            (Some(1.0), Some("tx_bytes".into()))
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
        assert!(
            w[0].contains("wraps every 1.09 s") && w[0].contains("-I 545"),
            "{}",
            w[0]
        );
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
        let evs = payload_events(&sys, "here").unwrap();
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
        let e = payload_events(&sys, "--sysfs /x").unwrap_err().to_string();
        assert!(e.starts_with("--sysfs /x: no PCIe PMU") && e.contains("-e"), "{e}");
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
        let mut src = Fake::default();
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
        fn interval(&mut self, _mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
            self.0.push(rows.to_vec());
            Ok(true)
        }
    }

    #[test]
    fn the_loop_closes_intervals_on_the_source_clock() {
        let t = dwc_host("monitor-loop");
        let sys = System::discover(t.path()).unwrap();
        let plan = Plan::new(&sys, resolve_events(&sys, &["software/cpu-clock/".into()]).unwrap()).unwrap();
        let mut src = Fake::default();
        let mut mon = Monitor::open(&mut src, plan).unwrap();
        let sched = Schedule {
            interval: Some(Duration::from_millis(250)),
            duration: Some(1.1),
            command: &[],
        };
        let mut sink = Collect(Vec::new());
        let secs = run(&mut src, &mut mon, sched, &AtomicBool::new(false), &mut sink).unwrap();
        assert!((secs - 1.1).abs() < 1e-9, "{secs}");
        let times: Vec<f64> = sink.0.iter().map(|r| (r[0].time_s * 1000.0).round()).collect();
        assert_eq!(times, vec![250.0, 500.0, 750.0, 1000.0, 1100.0]);
        assert!((sink.0[4][0].interval_s - 0.1).abs() < 1e-9);
    }
}
