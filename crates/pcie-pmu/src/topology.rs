//! PCI functions as sysfs shows them, and which root ports (and devices below them) each PMU
//! watches.

use crate::error::PmuError;
use crate::family::{dwc_root_port, Family, FamilyMatch};
use crate::pmu::Pmu;
use crate::sysfs::{parse_u64, read_optional, SysfsRoot, PCI_DEVICES};
use serde::{Serialize, Serializer};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A PCI function address: domain (segment), bus, device, function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bdf {
    pub domain: u32,
    pub bus: u8,
    pub dev: u8,
    pub func: u8,
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.dev, self.func
        )
    }
}

impl Serialize for Bdf {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for Bdf {
    type Err = String;
    /// `0000:30:03.0` or `30:03.0` (domain 0).
    fn from_str(s: &str) -> Result<Bdf, String> {
        let bad = || format!("{s:?}: expected a PCI address like 0000:30:03.0");
        let (head, func) = s.rsplit_once('.').ok_or_else(bad)?;
        let parts: Vec<&str> = head.split(':').collect();
        let (domain, bus, dev) = match parts.as_slice() {
            [d, b, v] => (*d, *b, *v),
            [b, v] => ("0", *b, *v),
            _ => return Err(bad()),
        };
        let hex = |t: &str| u32::from_str_radix(t, 16).map_err(|_| bad());
        let (domain, bus, dev, func) = (hex(domain)?, hex(bus)?, hex(dev)?, hex(func)?);
        if bus > 0xff || dev > 31 || func > 7 {
            return Err(bad());
        }
        Ok(Bdf {
            domain,
            bus: bus as u8,
            dev: dev as u8,
            func: func as u8,
        })
    }
}

/// A PCI function from `sys/bus/pci/devices/<bdf>/`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PciDevice {
    pub bdf: Bdf,
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// 24-bit class code (`0x060400` is a PCI-to-PCI bridge / root port).
    pub class: Option<u32>,
    pub driver: Option<String>,
    pub current_link_speed: Option<String>,
    pub max_link_speed: Option<String>,
    pub current_link_width: Option<u32>,
    pub max_link_width: Option<u32>,
    /// `None` when the file is missing or reads -1 (no NUMA information).
    pub numa_node: Option<u32>,
    /// Bridges: the bus numbers behind them (`secondary_bus_number`, `subordinate_bus_number`).
    pub secondary_bus: Option<u8>,
    pub subordinate_bus: Option<u8>,
    #[serde(skip)]
    path: PathBuf,
}

impl PciDevice {
    fn read(root: &SysfsRoot, name: &str) -> Result<Option<PciDevice>, PmuError> {
        let Ok(bdf) = name.parse::<Bdf>() else {
            return Ok(None);
        };
        let dir = root.join(PCI_DEVICES).join(name);
        let attr = |f: &str| read_optional(&dir.join(f));
        let num = |f: &str| -> Result<Option<u64>, PmuError> { Ok(attr(f)?.as_deref().and_then(parse_u64)) };
        let driver = std::fs::read_link(dir.join("driver"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        let numa_node = attr("numa_node")?
            .and_then(|s| s.parse::<i64>().ok())
            .and_then(|n| u32::try_from(n).ok());
        Ok(Some(PciDevice {
            bdf,
            vendor: num("vendor")?.map(|v| v as u16),
            device: num("device")?.map(|v| v as u16),
            class: num("class")?.map(|v| v as u32),
            driver,
            current_link_speed: attr("current_link_speed")?.filter(|s| !s.is_empty()),
            max_link_speed: attr("max_link_speed")?.filter(|s| !s.is_empty()),
            current_link_width: num("current_link_width")?.map(|v| v as u32),
            max_link_width: num("max_link_width")?.map(|v| v as u32),
            numa_node,
            secondary_bus: num("secondary_bus_number")?.and_then(|v| u8::try_from(v).ok()),
            subordinate_bus: num("subordinate_bus_number")?.and_then(|v| u8::try_from(v).ok()),
            path: std::fs::canonicalize(&dir).unwrap_or(dir),
        }))
    }

    /// Every PCI function under the root, sorted by address.
    pub fn discover(root: &SysfsRoot) -> Result<Vec<PciDevice>, PmuError> {
        let mut out = Vec::new();
        for n in root.pci_addresses()? {
            out.extend(PciDevice::read(root, &n)?);
        }
        out.sort_by_key(|d| d.bdf);
        Ok(out)
    }

    /// A PCI-to-PCI bridge (root ports and switch ports).
    pub fn is_bridge(&self) -> bool {
        self.class.is_some_and(|c| c >> 8 == 0x0604)
    }

    /// `32.0 GT/s PCIe x16`, with `(max 32.0 GT/s PCIe x16)` when the link runs below its maximum.
    pub fn link_summary(&self) -> Option<String> {
        let show = |s: &Option<String>, w: Option<u32>| match (s, w) {
            (Some(s), Some(w)) => Some(format!("{s} x{w}")),
            (Some(s), None) => Some(s.clone()),
            (None, Some(w)) => Some(format!("x{w}")),
            (None, None) => None,
        };
        let cur = show(&self.current_link_speed, self.current_link_width);
        let max = show(&self.max_link_speed, self.max_link_width);
        match (cur, max) {
            (Some(c), Some(m)) if c != m => Some(format!("{c} (max {m})")),
            (Some(c), _) => Some(c),
            (None, Some(m)) => Some(format!("max {m}")),
            (None, None) => None,
        }
    }

    /// True when this function sits below `port`: its sysfs path nests in the port's
    /// (`/sys/devices/pci0000:30/0000:30:03.0/0000:31:00.0`), or its bus lies in the port's
    /// secondary..subordinate bus range (for trees whose device directories are not nested).
    pub fn is_below(&self, port: &PciDevice) -> bool {
        if self.bdf == port.bdf {
            return false;
        }
        if self.path.starts_with(&port.path) {
            return true;
        }
        match (port.secondary_bus, port.subordinate_bus) {
            (Some(lo), Some(hi)) => {
                self.bdf.domain == port.bdf.domain && (lo..=hi).contains(&self.bdf.bus) && lo > port.bdf.bus
            }
            _ => false,
        }
    }
}

/// A root port a PMU watches, with the functions below it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RootPort {
    pub bdf: Bdf,
    /// `None` when the PMU names a port that sysfs does not list.
    pub port: Option<PciDevice>,
    pub devices: Vec<PciDevice>,
}

/// Root ports a PMU covers, as its family tells: DWC by its name, HiSilicon by `bdf_min`/
/// `bdf_max` or `bus`, Intel IIO by the `dieN` root buses of `uncore_iio_<n>` (free-running and
/// IRP box `n` serve the same stack). Empty when the family does not say. `pmus` are all PMUs.
pub fn root_ports(pmu: &Pmu, family: &FamilyMatch, pci: &[PciDevice], pmus: &[Pmu]) -> Vec<RootPort> {
    let with_below = |bdf: Bdf| {
        let port = pci.iter().find(|d| d.bdf == bdf).cloned();
        let devices = match &port {
            Some(p) => pci.iter().filter(|d| d.is_below(p)).cloned().collect(),
            None => Vec::new(),
        };
        RootPort { bdf, port, devices }
    };
    let bridges_on = |domain: u32, bus: u8| -> Vec<Bdf> {
        pci.iter()
            .filter(|d| d.is_bridge() && d.bdf.domain == domain && d.bdf.bus == bus)
            .map(|d| d.bdf)
            .collect()
    };
    let ports: Vec<Bdf> = match family.family {
        Family::Dwc => dwc_root_port(&pmu.name).map(|(b, _)| vec![b]).unwrap_or_default(),
        Family::HisiPcie => {
            let range = |k: &str| pmu.attrs.get(k).and_then(|v| hisi_bdf(v));
            match (range("bdf_min"), range("bdf_max")) {
                (Some(lo), Some(hi)) => pci
                    .iter()
                    .filter(|d| d.is_bridge() && d.bdf >= lo && d.bdf <= hi)
                    .map(|d| d.bdf)
                    .collect(),
                _ => match pmu.attrs.get("bus").and_then(|b| parse_u64(b)) {
                    Some(bus) if bus <= 0xff => bridges_on(0, bus as u8),
                    _ => Vec::new(),
                },
            }
        }
        Family::IntelIio | Family::IntelIioFreeRunning | Family::IntelIrp => {
            let box_id = pmu.name.rsplit('_').next().unwrap_or("");
            let iio_name = format!("uncore_iio_{box_id}");
            let mapping = if pmu.attrs.keys().any(|k| k.starts_with("die")) {
                pmu
            } else {
                pmus.iter().find(|p| p.name == iio_name).unwrap_or(pmu)
            };
            let mut v = Vec::new();
            for (k, val) in &mapping.attrs {
                if !k.starts_with("die") {
                    continue;
                }
                if let Some((d, b)) = val.split_once(':') {
                    if let (Ok(d), Ok(b)) = (u32::from_str_radix(d.trim(), 16), u8::from_str_radix(b.trim(), 16)) {
                        v.extend(bridges_on(d, b));
                    }
                }
            }
            v
        }
        _ => Vec::new(),
    };
    ports.into_iter().map(with_below).collect()
}

/// HiSilicon `bdf_min`/`bdf_max`: a 16-bit number (`0x3000`) or `bb:dd.f` (print format not
/// verified on hardware, so both are accepted).
fn hisi_bdf(v: &str) -> Option<Bdf> {
    if let Ok(b) = v.parse::<Bdf>() {
        return Some(b);
    }
    let x = parse_u64(v).or_else(|| u64::from_str_radix(v, 16).ok())?;
    (x <= 0xffff).then_some(Bdf {
        domain: 0,
        bus: (x >> 8) as u8,
        dev: ((x & 0xff) >> 3) as u8,
        func: (x & 7) as u8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_print() {
        let b: Bdf = "0001:30:03.0".parse().unwrap();
        assert_eq!((b.domain, b.bus, b.dev, b.func), (1, 0x30, 3, 0));
        assert_eq!("30:03.1".parse::<Bdf>().unwrap().to_string(), "0000:30:03.1");
        for bad in [
            "",
            "30:03",
            "0000:30:20.0",
            "0000:30:03.8",
            "0000:300:03.0",
            "x:30:03.0",
        ] {
            assert!(bad.parse::<Bdf>().is_err(), "{bad}");
        }
        assert_eq!(hisi_bdf("0x3018").unwrap().to_string(), "0000:30:03.0");
        assert_eq!(hisi_bdf("30:04.0").unwrap().to_string(), "0000:30:04.0");
    }
}
