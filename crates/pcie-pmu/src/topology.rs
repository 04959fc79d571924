//! Which root ports (and the PCI functions below them, as pcie-sysfs reads them) each PMU
//! watches, and which functions on root buses none does.

use crate::family::{dwc_root_port, Family, FamilyMatch};
use crate::pmu::Pmu;
use pcie_sysfs::files::parse_u64;
use pcie_sysfs::{Bdf, PciDevice, PortType};
use serde::Serialize;

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
        let devices = port.as_ref().map(|p| below(pci, p)).unwrap_or_default();
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
        Family::IntelIio | Family::IntelIioFreeRunning | Family::IntelIrp => stack_buses(pmu, family, pmus)
            .into_iter()
            .flat_map(|(d, b)| bridges_on(d, b))
            .collect(),
        _ => Vec::new(),
    };
    ports.into_iter().map(with_below).collect()
}

/// The root buses (domain, bus) of the stack an Intel IIO-family PMU counts at: the `dieN`
/// files of `uncore_iio_<n>` (free-running and IRP box `n` serve the same stack). The PMU sees
/// every function on them, integrated ones too. Empty for other families, which count at root
/// ports.
pub fn stack_buses(pmu: &Pmu, family: &FamilyMatch, pmus: &[Pmu]) -> Vec<(u32, u8)> {
    if !matches!(
        family.family,
        Family::IntelIio | Family::IntelIioFreeRunning | Family::IntelIrp
    ) {
        return Vec::new();
    }
    let box_id = pmu.name.rsplit('_').next().unwrap_or("");
    let iio_name = format!("uncore_iio_{box_id}");
    let mapping = if pmu.attrs.keys().any(|k| k.starts_with("die")) {
        pmu
    } else {
        pmus.iter().find(|p| p.name == iio_name).unwrap_or(pmu)
    };
    mapping
        .attrs
        .iter()
        .filter(|(k, _)| k.starts_with("die"))
        .filter_map(|(_, val)| {
            let (d, b) = val.split_once(':')?;
            Some((
                u32::from_str_radix(d.trim(), 16).ok()?,
                u8::from_str_radix(b.trim(), 16).ok()?,
            ))
        })
        .collect()
}

fn below(pci: &[PciDevice], port: &PciDevice) -> Vec<PciDevice> {
    pci.iter().filter(|d| d.is_below(port)).cloned().collect()
}

/// What a function on a root bus is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootBusKind {
    RootPort,
    /// A root complex integrated endpoint: its DMA crosses no root port.
    Rciep,
    /// A root complex event collector (error and PME messages of integrated endpoints).
    Rcec,
}

impl RootBusKind {
    /// From the PCIe capability's device/port type where config space shows it (usually only to
    /// root), else from the class code: a bridge is a root port, class 0807 an event collector
    /// (the class the PCIe specification gives them), anything else an integrated endpoint.
    fn of(d: &PciDevice) -> RootBusKind {
        match d.port_type() {
            Ok(PortType::RootPort) => RootBusKind::RootPort,
            Ok(PortType::IntegratedEndpoint) => RootBusKind::Rciep,
            Ok(PortType::EventCollector) => RootBusKind::Rcec,
            _ if d.is_bridge() => RootBusKind::RootPort,
            _ if d.class.is_some_and(|c| c >> 8 == 0x0807) => RootBusKind::Rcec,
            _ => RootBusKind::Rciep,
        }
    }
}

/// A function on a root bus that is not a watched root port, with the functions below it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unwatched {
    pub kind: RootBusKind,
    pub function: PciDevice,
    pub devices: Vec<PciDevice>,
}

/// The functions on root buses (below no other function) that are neither one of the `watched`
/// root ports nor on a watched stack's root bus ([`stack_buses`]), in address order: no PMU
/// counts their traffic or their devices'.
pub fn unwatched(pci: &[PciDevice], watched: &[Bdf], stacks: &[(u32, u8)]) -> Vec<Unwatched> {
    pci.iter()
        .filter(|d| {
            !watched.contains(&d.bdf)
                && !stacks.contains(&(d.bdf.domain, d.bdf.bus))
                && !pci.iter().any(|p| d.is_below(p))
        })
        .map(|d| Unwatched {
            kind: RootBusKind::of(d),
            function: d.clone(),
            devices: below(pci, d),
        })
        .collect()
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
    use super::hisi_bdf;

    /// (Parsing and printing addresses is pcie-sysfs's `addresses_parse_and_print`.)
    #[test]
    fn hisi_ranges_are_addresses_or_16_bit_numbers() {
        assert_eq!(hisi_bdf("0x3018").unwrap().to_string(), "0000:30:03.0");
        assert_eq!(hisi_bdf("30:04.0").unwrap().to_string(), "0000:30:04.0");
    }
}
