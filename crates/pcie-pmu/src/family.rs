//! Which PCIe-related PMU family a PMU belongs to, recognised from its name (and, for the DWC
//! driver's kernel variants, from its event spellings), and the variant tags catalogs select
//! units by.

use crate::pmu::Pmu;
use pcie_sysfs::Bdf;
use serde::Serialize;

/// A PCIe-related PMU driver family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Synopsys DesignWare RAS-DES root-port PMU (`dwc_rootport_<sbdf>`, pre-upstream `pcie_bdf_<x>`).
    Dwc,
    /// HiSilicon PCIe core PMU (`hisi_pcie<sicl>_core<core>`).
    HisiPcie,
    /// Intel uncore IIO programmable counters (`uncore_iio_<n>`).
    IntelIio,
    /// Intel uncore IIO free-running counters (`uncore_iio_free_running_<n>`).
    IntelIioFreeRunning,
    /// Intel uncore IRP (`uncore_irp_<n>`).
    IntelIrp,
    /// NVIDIA Grace / Tegra410 PCIe PMU (`nvidia_pcie_pmu_<socket>[_rc_<rc>]`).
    NvidiaPcie,
    /// NVIDIA Tegra410 PCIe target PMU (`nvidia_pcie_tgt_pmu_<socket>_rc_<rc>`).
    NvidiaPcieTgt,
    /// Marvell Odyssey PEM PMU (`mrvl_pcie_rc_pmu_<addr>`).
    MarvellPem,
    /// Phytium PCIe PMU (out of tree; `phyt<die>_pcie_pmu<n>`).
    Phytium,
    /// Arm CMN mesh (RN-I/RN-D I/O requesters; not per root port).
    ArmCmn,
    /// AMD data fabric (IOM-level upstream DMA beats; not per root port).
    AmdDf,
}

impl Family {
    pub const ALL: [Family; 11] = [
        Family::Dwc,
        Family::HisiPcie,
        Family::IntelIio,
        Family::IntelIioFreeRunning,
        Family::IntelIrp,
        Family::NvidiaPcie,
        Family::NvidiaPcieTgt,
        Family::MarvellPem,
        Family::Phytium,
        Family::ArmCmn,
        Family::AmdDf,
    ];

    /// The catalog / machine name (`dwc`, `hisi_pcie`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Family::Dwc => "dwc",
            Family::HisiPcie => "hisi_pcie",
            Family::IntelIio => "intel_iio",
            Family::IntelIioFreeRunning => "intel_iio_free_running",
            Family::IntelIrp => "intel_irp",
            Family::NvidiaPcie => "nvidia_pcie",
            Family::NvidiaPcieTgt => "nvidia_pcie_tgt",
            Family::MarvellPem => "marvell_pem",
            Family::Phytium => "phytium_pcie",
            Family::ArmCmn => "arm_cmn",
            Family::AmdDf => "amd_df",
        }
    }

    pub fn from_key(key: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.key() == key)
    }

    /// A short description for people.
    pub fn title(self) -> &'static str {
        match self {
            Family::Dwc => "DesignWare PCIe root-port PMU",
            Family::HisiPcie => "HiSilicon PCIe core PMU",
            Family::IntelIio => "Intel uncore IIO",
            Family::IntelIioFreeRunning => "Intel uncore IIO free-running",
            Family::IntelIrp => "Intel uncore IRP",
            Family::NvidiaPcie => "NVIDIA PCIe PMU",
            Family::NvidiaPcieTgt => "NVIDIA PCIe target PMU",
            Family::MarvellPem => "Marvell PEM PMU",
            Family::Phytium => "Phytium PCIe PMU",
            Family::ArmCmn => "Arm CMN mesh (I/O requesters)",
            Family::AmdDf => "AMD data fabric (IOM)",
        }
    }
}

/// A recognised PMU: its family and variant tags (catalog entries select scales by tag).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FamilyMatch {
    pub family: Family,
    /// E.g. `["dwc_rootport", "sbdf", "lower_case"]` or `["pcie_bdf", "bdf_v1", "mixed_case"]`.
    pub variant: Vec<&'static str>,
}

fn suffix_hex(name: &str, prefix: &str) -> Option<u64> {
    let s = name.strip_prefix(prefix)?;
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn suffix_dec(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
}

/// The root port a DWC PMU name encodes, with the naming scheme: `dwc_rootport_<hex>` holds
/// `domain<<16 | bus<<8 | devfn` (16-bit BDF in early kernels, the same number when the domain
/// is 0); `pcie_bdf_<hex>` (v1 patch) holds `seg<<24 | bus<<16 | dev<<8 | func`.
pub fn dwc_root_port(name: &str) -> Option<(Bdf, &'static str)> {
    if let Some(x) = suffix_hex(name, "dwc_rootport_") {
        if x > 0xffff_ffff {
            return None;
        }
        let devfn = (x & 0xff) as u8;
        let bdf = Bdf {
            domain: (x >> 16) as u32,
            bus: ((x >> 8) & 0xff) as u8,
            dev: devfn >> 3,
            func: devfn & 7,
        };
        let naming = if x > 0xffff { "sbdf" } else { "bdf16" };
        return Some((bdf, naming));
    }
    let x = suffix_hex(name, "pcie_bdf_")?;
    let (dev, func) = (((x >> 8) & 0xff) as u8, (x & 0xff) as u8);
    if x > 0xffff_ffff || dev > 31 || func > 7 {
        return None;
    }
    Some((
        Bdf {
            domain: (x >> 24) as u32,
            bus: ((x >> 16) & 0xff) as u8,
            dev,
            func,
        },
        "bdf_v1",
    ))
}

/// Phytium's out-of-tree driver names `phyt<die>_pcie_pmu<n>` (and `phyt<die>_pcie<c>_pmu<n>`
/// in a later version); `phytium_pcie*` is accepted too.
fn is_phytium(n: &str) -> bool {
    let Some(rest) = n.strip_prefix("phyt") else {
        return false;
    };
    let rest = rest
        .strip_prefix("ium")
        .unwrap_or(rest)
        .trim_start_matches(|c: char| c.is_ascii_digit());
    rest.starts_with("_pcie") && (rest.contains("pmu") || n.starts_with("phytium_pcie"))
}

/// Recognise a PMU's family; `None` for PMUs that are not PCIe-related (cpu, software, msr, ...).
pub fn recognise(pmu: &Pmu) -> Option<FamilyMatch> {
    let n = pmu.name.as_str();
    let (family, mut variant): (Family, Vec<&'static str>) = if let Some((_, naming)) = dwc_root_port(n) {
        let kind = if n.starts_with("pcie_bdf_") {
            "pcie_bdf"
        } else {
            "dwc_rootport"
        };
        (Family::Dwc, vec![kind, naming])
    } else if n.starts_with("hisi_pcie") && n.contains("_core") {
        (Family::HisiPcie, vec![])
    } else if suffix_dec(n, "uncore_iio_free_running_") || n == "uncore_iio_free_running" {
        (Family::IntelIioFreeRunning, vec![])
    } else if suffix_dec(n, "uncore_iio_") || n == "uncore_iio" {
        (Family::IntelIio, vec![])
    } else if suffix_dec(n, "uncore_irp_") || n == "uncore_irp" {
        (Family::IntelIrp, vec![])
    } else if n.starts_with("nvidia_pcie_tgt_pmu_") {
        (Family::NvidiaPcieTgt, vec!["tegra410"])
    } else if let Some(rest) = n.strip_prefix("nvidia_pcie_pmu_") {
        (
            Family::NvidiaPcie,
            vec![if rest.contains("_rc_") { "tegra410" } else { "grace" }],
        )
    } else if n.starts_with("mrvl_pcie_rc_pmu_") {
        (Family::MarvellPem, vec![])
    } else if is_phytium(n) {
        (Family::Phytium, vec![])
    } else if n == "arm_cmn" || suffix_dec(n, "arm_cmn_") {
        (Family::ArmCmn, vec![])
    } else if n == "amd_df" {
        (Family::AmdDf, vec![])
    } else {
        return None;
    };
    match family {
        Family::Dwc => {
            // Group#1 spelling: early kernels `Rx_PCIe_TLP_Data_Payload`, later lower case.
            let mixed = pmu
                .events
                .iter()
                .any(|e| e.name == "Rx_PCIe_TLP_Data_Payload" || e.name == "Tx_PCIe_TLP_Data_Payload");
            variant.push(if mixed { "mixed_case" } else { "lower_case" });
        }
        Family::HisiPcie if pmu.attrs.contains_key("bdf_min") => variant.push("bdf_range"),
        _ => {}
    }
    Some(FamilyMatch { family, variant })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dwc_names_decode_to_root_ports() {
        let (b, n) = dwc_root_port("dwc_rootport_3018").unwrap();
        assert_eq!((b.to_string(), n), ("0000:30:03.0".to_string(), "bdf16"));
        let (b, n) = dwc_root_port("dwc_rootport_13018").unwrap();
        assert_eq!((b.to_string(), n), ("0001:30:03.0".to_string(), "sbdf"));
        let (b, n) = dwc_root_port("pcie_bdf_300300").unwrap();
        assert_eq!((b.to_string(), n), ("0000:30:03.0".to_string(), "bdf_v1"));
        assert!(dwc_root_port("dwc_rootport_").is_none());
        assert!(dwc_root_port("dwc_rootport_xyz").is_none());
        assert!(dwc_root_port("pcie_bdf_30ff00").is_none());
    }

    #[test]
    fn phytium_names() {
        for n in ["phyt0_pcie_pmu1", "phyt1_pcie2_pmu0", "phytium_pcie_pmu0"] {
            assert!(is_phytium(n), "{n}");
        }
        for n in ["phyt0_ddr_pmu0", "phyt", "phytpcie"] {
            assert!(!is_phytium(n), "{n}");
        }
    }

    #[test]
    fn keys_round_trip() {
        for f in Family::ALL {
            assert_eq!(Family::from_key(f.key()), Some(f));
        }
    }
}
