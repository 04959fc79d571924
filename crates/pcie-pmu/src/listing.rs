//! What `pmu list` shows, as one serialisable value: every PCIe-related PMU with its root ports,
//! the devices below them, its metrics and its events resolved to `perf_event_attr` values, and
//! the functions on root buses that none of them watches. The table, CSV and JSON outputs are
//! all drawn from it, so programs see what people see.

use crate::catalog::{Origin, PmuEvent};
use crate::event_spec;
use crate::topology::{self, RootBusKind, RootPort};
use crate::{PcieView, PmuError, PmuMetric, System};
use pcie_sysfs::{Bdf, PciDevice};
use serde::Serialize;

/// The PCIe PMUs of a system, and the names of the other PMUs (`cpu`, `msr`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listing {
    pub pcie_pmus: Vec<PmuListing>,
    pub other_pmus: Vec<String>,
    /// The functions on root buses that are not a listed root port (nor on an Intel IIO stack's
    /// root bus), with the functions below them ([`topology::unwatched`]): integrated endpoints,
    /// event collectors, root ports no PMU names. Empty, and left out of the JSON, when there are none or there is no PCIe PMU
    /// (then nothing is watched, and the listing says so).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unwatched: Vec<UnwatchedListing>,
}

/// One PCIe-related PMU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PmuListing {
    pub name: String,
    /// [`crate::Family::key`] and [`crate::Family::title`].
    pub family: &'static str,
    pub family_title: &'static str,
    pub variant: Vec<&'static str>,
    #[serde(rename = "type")]
    pub type_id: u32,
    /// Empty: any CPU.
    pub cpumask: Vec<u32>,
    /// Empty when the family does not say which ports it watches.
    pub root_ports: Vec<PortListing>,
    /// Normalised metrics in order of first appearance, each with the events that make it up.
    pub metrics: Vec<MetricListing>,
    pub events: Vec<EventListing>,
}

/// A root port and the functions below it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortListing {
    pub bdf: Bdf,
    /// False when the PMU names a port that `sys/bus/pci/devices` lacks (every detail is null).
    pub in_sysfs: bool,
    #[serde(flatten)]
    pub info: DeviceInfo,
    pub devices: Vec<DeviceListing>,
}

/// A function on a root bus that no listed root port covers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnwatchedListing {
    pub bdf: Bdf,
    pub kind: RootBusKind,
    #[serde(flatten)]
    pub info: DeviceInfo,
    /// Below a root port; empty for anything else.
    pub devices: Vec<DeviceListing>,
}

/// A PCI function below a root port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceListing {
    pub bdf: Bdf,
    #[serde(flatten)]
    pub info: DeviceInfo,
}

/// A function's sysfs details; `None` (JSON null) where sysfs lacks the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeviceInfo {
    /// `vendor:device` in hex as lspci prints it (`15b3:1017`, `?` for an unknown half).
    pub id: Option<String>,
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// The 24-bit class code in hex (`060400`).
    pub class: Option<String>,
    pub driver: Option<String>,
    pub current_link_speed: Option<String>,
    pub current_link_width: Option<u32>,
    pub max_link_speed: Option<String>,
    pub max_link_width: Option<u32>,
    /// The table's link text ([`PciDevice::link_summary`]).
    pub link: Option<String>,
    pub numa_node: Option<u32>,
}

/// A normalised metric and the events that count towards it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricListing {
    pub metric: PmuMetric,
    pub events: Vec<String>,
}

/// An event with its catalog annotations and the config values perf would open it with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventListing {
    #[serde(flatten)]
    pub event: PmuEvent,
    /// `pmu/event/` (by encoding for catalog-only events), as `pmu stat -e` takes it.
    pub spec: String,
    /// `perf_event_attr.config..config2` in hex; null while `required_params` are missing.
    pub config: Option<String>,
    pub config1: Option<String>,
    pub config2: Option<String>,
}

impl System {
    /// The listing of [`System::pcie_pmus`].
    pub fn listing(&self) -> Result<Listing, PmuError> {
        let views = self.pcie_pmus()?;
        let other_pmus = self
            .pmus
            .iter()
            .filter(|p| !views.iter().any(|v| v.pmu.name == p.name))
            .map(|p| p.name.clone())
            .collect();
        let watched: Vec<Bdf> = views.iter().flat_map(|v| &v.root_ports).map(|r| r.bdf).collect();
        let stacks: Vec<(u32, u8)> = views
            .iter()
            .flat_map(|v| topology::stack_buses(&v.pmu, &v.family, &self.pmus))
            .collect();
        let unwatched = if views.is_empty() {
            Vec::new()
        } else {
            topology::unwatched(&self.pci, &watched, &stacks)
                .into_iter()
                .map(|u| UnwatchedListing {
                    bdf: u.function.bdf,
                    kind: u.kind,
                    info: device_info(&u.function),
                    devices: u.devices.iter().map(device_listing).collect(),
                })
                .collect()
        };
        Ok(Listing {
            pcie_pmus: views.iter().map(|v| pmu_listing(self, v)).collect(),
            other_pmus,
            unwatched,
        })
    }
}

fn pmu_listing(sys: &System, v: &PcieView) -> PmuListing {
    let mut metrics: Vec<MetricListing> = Vec::new();
    for e in &v.events {
        let Some(m) = e.metric else { continue };
        match metrics.iter_mut().find(|x| x.metric == m) {
            Some(x) => x.events.push(e.name.clone()),
            None => metrics.push(MetricListing {
                metric: m,
                events: vec![e.name.clone()],
            }),
        }
    }
    PmuListing {
        name: v.pmu.name.clone(),
        family: v.family.family.key(),
        family_title: v.family.family.title(),
        variant: v.family.variant.clone(),
        type_id: v.pmu.type_id,
        cpumask: v.pmu.cpumask.clone(),
        root_ports: v.root_ports.iter().map(port_listing).collect(),
        metrics,
        events: v.events.iter().map(|e| event_listing(sys, &v.pmu.name, e)).collect(),
    }
}

fn port_listing(rp: &RootPort) -> PortListing {
    PortListing {
        bdf: rp.bdf,
        in_sysfs: rp.port.is_some(),
        info: rp.port.as_ref().map(device_info).unwrap_or_default(),
        devices: rp.devices.iter().map(device_listing).collect(),
    }
}

fn device_listing(d: &PciDevice) -> DeviceListing {
    DeviceListing {
        bdf: d.bdf,
        info: device_info(d),
    }
}

fn device_info(d: &PciDevice) -> DeviceInfo {
    let hex = |v: Option<u16>| v.map_or("?".into(), |v| format!("{v:04x}"));
    DeviceInfo {
        id: Some(format!("{}:{}", hex(d.vendor), hex(d.device))),
        vendor: d.vendor,
        device: d.device,
        class: d.class.map(|c| format!("{c:06x}")),
        driver: d.driver.clone(),
        current_link_speed: d.current_link_speed.clone(),
        current_link_width: d.current_link_width,
        max_link_speed: d.max_link_speed.clone(),
        max_link_width: d.max_link_width,
        link: d.link_summary(),
        numa_node: d.numa_node,
    }
}

fn event_listing(sys: &System, pmu: &str, e: &PmuEvent) -> EventListing {
    let spec = match e.origin {
        Origin::Sysfs => format!("{pmu}/{}/", e.name),
        Origin::Catalog => format!("{pmu}/{}/", e.encoding),
    };
    let cfg = if e.required_params.is_empty() {
        event_spec::resolve(&spec, &sys.pmus).ok().map(|r| r.config)
    } else {
        None
    };
    let hex = |i: usize| cfg.map(|c| format!("{:#x}", c[i]));
    EventListing {
        event: e.clone(),
        config: hex(0),
        config1: hex(1),
        config2: hex(2),
        spec,
    }
}

#[cfg(test)]
mod tests {
    use crate::fixture::{self, DwcVariant, Tree};
    use crate::topology::RootBusKind;
    use crate::System;

    #[test]
    fn ports_devices_metrics_and_configs_come_from_the_tree() {
        let t = Tree::new("listing");
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.root_port("0000:30:03.0", "0");
        t.nic_below("0000:30:03.0", "0000:31:00.0");
        fixture::dwc_pmu(&t, "dwc_rootport_13018", 28, "64", DwcVariant::Upstream);
        let l = System::discover(t.path()).unwrap().listing().unwrap();
        assert_eq!(l.other_pmus, ["cpu", "msr", "software"]);
        assert_eq!(l.pcie_pmus.len(), 2);
        let p = &l.pcie_pmus[0];
        assert_eq!((p.name.as_str(), p.family, p.type_id), ("dwc_rootport_3018", "dwc", 27));
        let rp = &p.root_ports[0];
        assert!(rp.in_sysfs);
        assert_eq!(rp.info.class.as_deref(), Some("060400"));
        let nic = &rp.devices[0];
        assert_eq!(nic.bdf.to_string(), "0000:31:00.0");
        assert_eq!(nic.info.id.as_deref(), Some("15b3:1017"));
        assert_eq!((nic.info.vendor, nic.info.device), (Some(0x15b3), Some(0x1017)));
        assert_eq!(
            nic.info.link.as_deref(),
            Some("16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)")
        );
        assert_eq!(
            (nic.info.current_link_width, nic.info.max_link_width),
            (Some(8), Some(16))
        );
        let rx = p
            .metrics
            .iter()
            .find(|m| m.metric == crate::PmuMetric::RxBytes)
            .unwrap();
        assert_eq!(rx.events, ["rx_pcie_tlp_data_payload"]);
        let ev = p
            .events
            .iter()
            .find(|e| e.event.name == "rx_pcie_tlp_data_payload")
            .unwrap();
        assert_eq!(ev.spec, "dwc_rootport_3018/rx_pcie_tlp_data_payload/");
        assert_eq!(ev.config.as_deref(), Some("0x21"));
        let lane = p.events.iter().find(|e| e.event.name == "rx_memory_read").unwrap();
        assert!(lane.config.is_none(), "needs lane=N first");

        // The second PMU names root port 0001:30:03.0, which the tree lacks.
        let missing = &l.pcie_pmus[1].root_ports[0];
        assert_eq!(missing.bdf.to_string(), "0001:30:03.0");
        assert!(!missing.in_sysfs && missing.info.id.is_none() && missing.devices.is_empty());
    }

    /// Integrated endpoints and event collectors on root buses and a root port no PMU names (with
    /// its device) are listed apart; what a watched port holds is not.
    #[test]
    fn functions_outside_every_watched_root_port() {
        let t = Tree::new("listing-unwatched");
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.root_port("0000:30:03.0", "0");
        t.nic_below("0000:30:03.0", "0000:31:00.0");
        t.root_port("0000:40:00.0", "1");
        t.nic_below("0000:40:00.0", "0000:41:00.0");
        t.pci(&[], "0000:7c:00.0", &[("class", "0x120000"), ("numa_node", "0")], None);
        t.pci(&[], "0000:7c:0a.0", &[("class", "0x080700")], Some("pcieport"));
        // A bridge class, but config space (read as root) says integrated endpoint.
        t.pci(&[], "0000:7d:00.0", &[("class", "0x060400")], None);
        let mut config = pcie_sysfs::fixture::config_with_pcie_capability(0, 0, 256);
        config[0x72] = 9 << 4;
        std::fs::write(t.path().join("sys/bus/pci/devices/0000:7d:00.0/config"), config).unwrap();

        let l = System::discover(t.path()).unwrap().listing().unwrap();
        let got: Vec<(String, RootBusKind, Vec<String>)> = l
            .unwatched
            .iter()
            .map(|u| {
                let below = u.devices.iter().map(|d| d.bdf.to_string()).collect();
                (u.bdf.to_string(), u.kind, below)
            })
            .collect();
        let want = |b: &str, k, below: &[&str]| (b.to_string(), k, below.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            got,
            [
                want("0000:40:00.0", RootBusKind::RootPort, &["0000:41:00.0"]),
                want("0000:7c:00.0", RootBusKind::Rciep, &[]),
                want("0000:7c:0a.0", RootBusKind::Rcec, &[]),
                want("0000:7d:00.0", RootBusKind::Rciep, &[]),
            ]
        );
        let rciep = &l.unwatched[1].info;
        assert_eq!(
            (rciep.class.as_deref(), rciep.driver.as_deref(), rciep.numa_node),
            (Some("120000"), None, Some(0))
        );
        assert_eq!(l.unwatched[2].info.driver.as_deref(), Some("pcieport"));
        assert_eq!(l.unwatched[0].devices[0].info.id.as_deref(), Some("15b3:1017"));

        // With the second port watched too, only the root complex's own functions remain.
        fixture::dwc_pmu(&t, "dwc_rootport_4000", 28, "0", DwcVariant::Upstream);
        let l = System::discover(t.path()).unwrap().listing().unwrap();
        let bdfs: Vec<String> = l.unwatched.iter().map(|u| u.bdf.to_string()).collect();
        assert_eq!(bdfs, ["0000:7c:00.0", "0000:7c:0a.0", "0000:7d:00.0"]);
    }

    /// An Intel IIO stack counts everything on its root bus, integrated functions too.
    #[test]
    fn functions_on_an_iio_stacks_root_bus_are_watched() {
        let t = Tree::new("listing-iio");
        fixture::common_pmus(&t);
        t.intel_cpu(106);
        fixture::intel_iio_pmus(&t, 0, 40, "0.0000305", &["0000:00"]);
        t.root_port("0000:00:01.0", "0");
        t.pci(&[], "0000:00:04.0", &[("class", "0x088000")], Some("ioatdma"));
        t.pci(&[], "0000:7e:00.0", &[("class", "0x088000")], None);
        let l = System::discover(t.path()).unwrap().listing().unwrap();
        let ports: Vec<String> = l.pcie_pmus[0].root_ports.iter().map(|r| r.bdf.to_string()).collect();
        assert_eq!(ports, ["0000:00:01.0"]);
        let bdfs: Vec<String> = l.unwatched.iter().map(|u| u.bdf.to_string()).collect();
        assert_eq!(bdfs, ["0000:7e:00.0"]);
    }

    #[test]
    fn without_a_pcie_pmu_nothing_is_listed_as_unwatched() {
        let t = Tree::new("listing-no-pmu");
        fixture::common_pmus(&t);
        t.root_port("0000:30:03.0", "0");
        t.pci(&[], "0000:7c:00.0", &[("class", "0x120000")], None);
        let l = System::discover(t.path()).unwrap().listing().unwrap();
        assert!(l.pcie_pmus.is_empty() && l.unwatched.is_empty(), "{l:?}");
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json.as_object().unwrap().len(), 2, "no unwatched key: {json}");
    }
}
