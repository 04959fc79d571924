//! Which root ports (and the PCI functions below them, as pcie-sysfs reads them) each PMU
//! watches.

use crate::family::{dwc_root_port, Family, FamilyMatch};
use crate::pmu::Pmu;
use pcie_sysfs::files::parse_u64;
use pcie_sysfs::{Bdf, PciDevice};
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
    use super::hisi_bdf;

    /// (Parsing and printing addresses is pcie-sysfs's `addresses_parse_and_print`.)
    #[test]
    fn hisi_ranges_are_addresses_or_16_bit_numbers() {
        assert_eq!(hisi_bdf("0x3018").unwrap().to_string(), "0000:30:03.0");
        assert_eq!(hisi_bdf("30:04.0").unwrap().to_string(), "0000:30:04.0");
    }
}
