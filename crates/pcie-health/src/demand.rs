//! What a device's own traffic can ask of its link, where that is known to be less than any
//! link could carry: a NIC moves no more than its ports' line rate, a SATA controller no more
//! than its disks' links, a USB controller no more than its root hubs' ports, an HD Audio
//! controller a few Mb/s. Link, MPS, MRRS and tag findings are priced against the lesser of
//! this and what the path carries, so that a warning is a loss the device can feel.
//!
//! Each figure is read from the host where it can be (sysfs: `net/<if>/speed`, the ATA links'
//! `sata_spd`, the USB root hubs' `speed` and `maxchild`) and taken from the PCI class where it
//! cannot (an `lspci` dump, no driver bound), each constant citing what fixes it. GPUs, NVMe,
//! accelerators and classes not listed have no ceiling below their link: `None`.

use pcie_sysfs::PciDevice;
use serde::Serialize;

/// Where a demand figure comes from (JSON `demand.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DemandSource {
    /// The network interfaces' `speed` (Mb/s, as ethtool reports it).
    NetSpeed,
    /// The SATA links' negotiated speeds (`ata*/link*/ata_link/link*/sata_spd`).
    SataLinks,
    /// The USB root hubs' `speed` and `maxchild`.
    UsbRootHubs,
    /// The PCI class alone fixes it (HD Audio, SMBus, USB 1.1/2.0 controllers, ...).
    Class,
    /// The part's vendor and device ids name a controller whose ports' line rate is fixed
    /// (a 1 GbE NIC in a dump, where no interface shows its speed).
    Part,
    /// The class with an assumption the host could not check (ports and speeds of an AHCI or
    /// xHCI controller in an `lspci` dump): the basis says what is assumed.
    Assumed,
    /// The functions of one device on one link have different sources.
    Mixed,
}

impl DemandSource {
    /// The JSON and CSV name (`sata_links`).
    pub fn name(self) -> &'static str {
        match self {
            DemandSource::NetSpeed => "net_speed",
            DemandSource::SataLinks => "sata_links",
            DemandSource::UsbRootHubs => "usb_root_hubs",
            DemandSource::Class => "class",
            DemandSource::Part => "part",
            DemandSource::Assumed => "assumed",
            DemandSource::Mixed => "mixed",
        }
    }
}

/// What a device can use of its link, Gb/s of payload each way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Demand {
    pub gbps: f64,
    pub source: DemandSource,
    /// In words, for messages: "its 2 SATA links' data rate (6.0 Gbps each, 8b/10b)".
    pub basis: String,
}

/// The data rate of a line rate under 8b/10b, SATA's and SuperSpeed USB's line code: a SATA
/// link of 6 Gb/s carries 4.8 Gb/s (600 MB/s) of data (Serial ATA revision 3.0, §7), a 5 Gb/s
/// USB port 4 Gb/s (USB 3.0 specification, §6.3).
fn of_8b10b(line: f64) -> f64 {
    line * 8.0 / 10.0
}
/// SATA III's line rate, Gb/s: what a port with no disk linked could train to.
const SATA3_GBPS: f64 = 6.0;
/// An AHCI controller's ports where a dump cannot show them: 6, the count of Intel chipsets'
/// AHCI and of the common 6-port add-in cards (ASMedia ASM1166); each at SATA III.
const AHCI_ASSUMED_PORTS: u32 = 6;
/// An xHCI controller's reach where a dump cannot show its root hubs: 20 Gb/s of line rate,
/// one USB 3.2 Gen 2x2 port or two Gen 2 ports (what add-in xHCI cards carry), 128b/132b.
const XHCI_ASSUMED_MBPS: f64 = 20_000.0;
/// USB 1.1 full speed, 12 Mb/s, one bus shared by a UHCI or OHCI controller's ports (USB 2.0
/// specification, §7.1.11).
const USB11_MBPS: f64 = 12.0;
/// USB 2.0 high speed, 480 Mb/s, one bus shared by an EHCI controller's ports (USB 2.0
/// specification, §7.1.11; EHCI 1.0, §4: one periodic and one asynchronous schedule).
const USB2_MBPS: f64 = 480.0;
/// HD Audio: the codec link's SDO runs at 48 Mb/s, each SDI at 24 Mb/s (Intel High Definition
/// Audio Specification 1.0a, §5.1: a 24 MHz BCLK, SDO double-pumped).
const HDA_MBPS: f64 = 48.0;
/// SMBus 3.0's fastest class, 1 MHz (System Management Bus Specification 3.0, §3.1).
const SMBUS_MBPS: f64 = 1.0;
/// Serial and parallel port controllers: 8 UARTs at up to 25 Mb/s each on the fastest PCIe
/// UART (MaxLinear/Exar XR17V358 datasheet), 200 Mb/s.
const SERIAL_MBPS: f64 = 200.0;
/// SD host controllers: UHS-III's FD624 bus, 624 MB/s (SD Physical Layer Specification 6.0);
/// SD Express cards are NVMe devices of their own.
const SD_MBPS: f64 = 4992.0;
/// IEEE 1394b S800, 800 Mb/s, behind a 1394 OHCI controller.
const FIREWIRE_MBPS: f64 = 800.0;

/// USB's data rate for a `speed` in Mb/s: USB 1.1 and 2.0 as signalled (NRZI bit stuffing only
/// lowers it), SuperSpeed's 8b/10b (5 Gb/s: 4 Gb/s of data), SuperSpeedPlus's 128b/132b.
fn usb_data_mbps(speed: f64) -> f64 {
    if speed <= USB2_MBPS {
        speed
    } else if speed <= 5000.0 {
        of_8b10b(speed)
    } else {
        speed * 128.0 / 132.0
    }
}

fn of(mbps: f64, source: DemandSource, basis: String) -> Option<Demand> {
    Some(Demand {
        gbps: mbps / 1000.0,
        source,
        basis,
    })
}

/// What function `dev` alone can use: read from its sysfs directory where the host shows it,
/// from its class otherwise; `None` where no ceiling below the link is known.
pub(crate) fn own(dev: &PciDevice) -> Option<Demand> {
    let class = dev.class?;
    match (class >> 8, class & 0xff) {
        (0x0200..=0x02ff, _) => match pcie_sysfs::line_rate_mbps(dev.dir()) {
            Some(mbps) => of(
                mbps as f64,
                DemandSource::NetSpeed,
                "its network interfaces' line rate".into(),
            ),
            None => gigabit_part(dev),
        },
        (0x0101 | 0x0106, _) => sata(dev, class >> 8 == 0x0106),
        (0x0c03, 0x00 | 0x10) => of(
            USB11_MBPS,
            DemandSource::Class,
            "a USB 1.1 controller's bus (12 Mb/s)".into(),
        ),
        (0x0c03, 0x20) => of(
            USB2_MBPS,
            DemandSource::Class,
            "a USB 2.0 controller's bus (480 Mb/s)".into(),
        ),
        (0x0c03, 0x30) => xhci(dev),
        (0x0403, _) => of(
            HDA_MBPS,
            DemandSource::Class,
            "an HD Audio controller's codec link (48 Mb/s)".into(),
        ),
        (0x0c05, _) => of(
            SMBUS_MBPS,
            DemandSource::Class,
            "an SMBus controller's bus (1 Mb/s)".into(),
        ),
        (0x0700 | 0x0701, _) => of(
            SERIAL_MBPS,
            DemandSource::Class,
            "a serial or parallel port controller's ports (at most 200 Mb/s)".into(),
        ),
        (0x0805, _) => of(
            SD_MBPS,
            DemandSource::Class,
            "an SD host controller's card bus (UHS-III, 624 MB/s)".into(),
        ),
        (0x0c00, 0x10) => of(
            FIREWIRE_MBPS,
            DemandSource::Class,
            "a FireWire controller's bus (S800)".into(),
        ),
        _ => None,
    }
}

/// Ethernet controllers that pci.ids names "Gigabit" (1000BASE-T/-X, one port per PCI
/// function), by vendor and device id: the parts most servers and desktops carry on board.
/// Where no interface shows its speed (an `lspci` dump, no driver bound), each function of one
/// moves at most 1 Gb/s each way. 10/25 GbE and 2.5 GbE parts are not listed: no ceiling.
const GIGABIT_PARTS: &[(u16, &[u16], &str)] = &[
    // 82571EB/82572EI, 82574L, 82575, 82576, 82583V, I350, I210, I211.
    (
        0x8086,
        &[0x105e, 0x105f, 0x10a4, 0x10bc, 0x107d, 0x107e, 0x107f, 0x10b9],
        "Intel 82571/82572",
    ),
    (0x8086, &[0x10d3], "Intel 82574L"),
    (0x8086, &[0x10a7, 0x10a9, 0x10d6], "Intel 82575"),
    (
        0x8086,
        &[0x10c9, 0x10e6, 0x10e7, 0x10e8, 0x150a, 0x150d, 0x1518, 0x1526],
        "Intel 82576",
    ),
    (0x8086, &[0x150c], "Intel 82583V"),
    (0x8086, &[0x1521, 0x1522, 0x1523, 0x1524], "Intel I350"),
    (0x8086, &[0x1533, 0x1536, 0x1537, 0x1538], "Intel I210"),
    (0x8086, &[0x1539], "Intel I211"),
    // NetXtreme BCM5717/5718/5719/5720 and BCM5721/5722/5723, NetXtreme II BCM5709/5716.
    (0x14e4, &[0x1655, 0x1656, 0x1657, 0x165f], "Broadcom BCM5717-5720"),
    (0x14e4, &[0x1659, 0x165a, 0x165b], "Broadcom BCM5721-5723"),
    (0x14e4, &[0x1639, 0x163a, 0x163b], "Broadcom BCM5709/5716"),
    // RTL8111/8168/8411.
    (0x10ec, &[0x8168], "Realtek RTL8111/8168"),
];

/// A 1 GbE port by its part (see [`GIGABIT_PARTS`]).
fn gigabit_part(dev: &PciDevice) -> Option<Demand> {
    let (vendor, device) = (dev.vendor?, dev.device?);
    let (_, _, name) = GIGABIT_PARTS
        .iter()
        .find(|(v, ids, _)| *v == vendor && ids.contains(&device))?;
    of(
        1000.0,
        DemandSource::Part,
        format!("its ports' line rate (1 Gb/s a port: [{vendor:04x}:{device:04x}] is an {name} Gigabit Ethernet controller)"),
    )
}

/// A SATA (or IDE-mode) controller: its linked ports at their negotiated speed; with ports but
/// no disk linked, each port at SATA III; without ports to read, an AHCI controller is assumed
/// to have [`AHCI_ASSUMED_PORTS`] at SATA III (an IDE one has no figure).
fn sata(dev: &PciDevice, ahci: bool) -> Option<Demand> {
    let links = pcie_sysfs::sata_links(dev.dir());
    let up: Vec<f64> = links.iter().flatten().copied().collect();
    let (line_gbps, basis, source) = if !up.is_empty() {
        let speeds: Vec<String> = up.iter().map(|g| format!("{g:.1}")).collect();
        let n = up.len();
        (
            up.iter().sum::<f64>(),
            format!(
                "its {n} linked SATA {} data rate ({} Gb/s, 8b/10b)",
                if n == 1 { "port's" } else { "ports'" },
                speeds.join(" + ")
            ),
            DemandSource::SataLinks,
        )
    } else if !links.is_empty() {
        let n = links.len();
        (
            n as f64 * SATA3_GBPS,
            format!("its {n} SATA ports, no disk linked, each at SATA III (6.0 Gb/s, 8b/10b)"),
            DemandSource::SataLinks,
        )
    } else if ahci {
        (
            f64::from(AHCI_ASSUMED_PORTS) * SATA3_GBPS,
            format!(
                "an AHCI controller's ports, assumed {AHCI_ASSUMED_PORTS} at SATA III (6.0 Gb/s, 8b/10b; the host's ATA links are not read here)"
            ),
            DemandSource::Assumed,
        )
    } else {
        return None;
    };
    of(of_8b10b(line_gbps * 1000.0), source, basis)
}

/// An xHCI controller: every port of each root hub at the hub's speed; without root hubs to
/// read, [`XHCI_ASSUMED_MBPS`].
fn xhci(dev: &PciDevice) -> Option<Demand> {
    let hubs: Vec<(f64, u32)> = pcie_sysfs::usb_root_hubs(dev.dir())
        .iter()
        .filter_map(|h| Some((h.mbps?, h.ports.unwrap_or(1))))
        .collect();
    if hubs.is_empty() {
        return of(
            usb_data_mbps(XHCI_ASSUMED_MBPS),
            DemandSource::Assumed,
            "an xHCI controller's ports, assumed one USB 3.2 Gen 2x2 or two Gen 2 (20 Gb/s, 128b/132b; its root hubs are not read here)".into(),
        );
    }
    let mbps = hubs.iter().map(|&(s, p)| usb_data_mbps(s) * f64::from(p)).sum();
    let each: Vec<String> = hubs.iter().map(|(s, p)| format!("{p} x {s} Mb/s")).collect();
    of(
        mbps,
        DemandSource::UsbRootHubs,
        format!("its USB root hubs' ports' data rate ({})", each.join(" + ")),
    )
}

/// What the device on a link can use: the sum over its `functions` (those sharing its link);
/// `None` where any of them has no known ceiling.
pub(crate) fn of_link<'a>(functions: impl IntoIterator<Item = Option<&'a Demand>>) -> Option<Demand> {
    let mut total: Option<Demand> = None;
    for d in functions {
        let d = d?;
        total = Some(match total {
            None => d.clone(),
            Some(t) => Demand {
                gbps: t.gbps + d.gbps,
                source: if t.source == d.source {
                    t.source
                } else {
                    DemandSource::Mixed
                },
                basis: if t.basis == d.basis || t.basis.ends_with(&format!(" + {}", d.basis)) {
                    t.basis
                } else {
                    format!("{} + {}", t.basis, d.basis)
                },
            },
        });
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usb_data_rates_follow_each_line_code() {
        assert_eq!(usb_data_mbps(480.0), 480.0);
        assert_eq!(usb_data_mbps(5000.0), 4000.0);
        assert!((usb_data_mbps(10_000.0) - 9696.97).abs() < 0.01);
        assert!((usb_data_mbps(20_000.0) - 19_393.94).abs() < 0.01);
    }

    #[test]
    fn a_link_sums_its_functions_and_any_unbounded_one_leaves_it_unknown() {
        let nic = |g: f64| Demand {
            gbps: g,
            source: DemandSource::NetSpeed,
            basis: "its network interfaces' line rate".into(),
        };
        let audio = Demand {
            gbps: 0.048,
            source: DemandSource::Class,
            basis: "an HD Audio controller's codec link (48 Mb/s)".into(),
        };
        let two = of_link([Some(&nic(1.0)), Some(&nic(1.0))]).unwrap();
        assert_eq!(two, nic(2.0));
        let mixed = of_link([Some(&nic(1.0)), Some(&audio), Some(&audio)]).unwrap();
        assert!((mixed.gbps - 1.096).abs() < 1e-12);
        assert_eq!(mixed.source, DemandSource::Mixed);
        assert_eq!(
            mixed.basis,
            "its network interfaces' line rate + an HD Audio controller's codec link (48 Mb/s)"
        );
        // A GPU and its HDMI audio: the GPU has no ceiling below its link.
        assert_eq!(of_link([None, Some(&audio)]), None);
        assert_eq!(of_link(std::iter::empty()), None);
    }
}
