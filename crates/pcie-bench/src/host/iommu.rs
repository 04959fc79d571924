//! The IOMMU mode a real device's DMAs meet on this host. For the simulator `--iommu` is a
//! setting; for a real device it is a fact of the host, and `run.json` must record what the
//! hardware did (`sim fit` reads it). Translation: the device's IOMMU group type (`identity`:
//! none; `DMA`, `DMA-FQ`: translated), else the IOMMU units the kernel registered and the
//! command line's off or passthrough. IO page size: 4 KB with `sp_off` (pcie-bench's
//! "iommu-nosp") or when the DMA buffer itself is on 4 KiB pages (its pages are not physically
//! contiguous, so no 2 MB IO page can map them); otherwise 2 MB super pages are what the
//! IOMMU uses by default, and 4 KB is what a driver may still choose.

use crate::params::Iommu;
use pcie_sysfs::KernelIommu;

/// The modes this host allows a device's DMAs, the first the one to record by default, and
/// what showed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIommu {
    pub allowed: Vec<Iommu>,
    pub why: String,
}

/// The mode a kernel command line alone sets (a pcie-bench data directory's): on with `sp_off`
/// is 4 KB pages, on otherwise 2 MB super pages, off when not on or in passthrough.
pub fn cmdline_mode(k: &KernelIommu) -> Iommu {
    if k.enabled != Some(true) || k.passthrough == Some(true) {
        Iommu::Off
    } else if super_pages_off(k) {
        Iommu::Pages4K
    } else {
        Iommu::Super2M
    }
}

fn super_pages_off(k: &KernelIommu) -> bool {
    k.params.values().any(|v| v.split(',').any(|f| f == "sp_off"))
}

impl HostIommu {
    /// The modes a device in an IOMMU group of `group_type` (sysfs `iommu_group/type`, when
    /// known) can meet on a host of kernel settings `k`, its DMA buffer on pages of
    /// `buffer_page_bytes`.
    pub fn of(k: &KernelIommu, group_type: Option<&str>, buffer_page_bytes: u64) -> HostIommu {
        let off = |why: String| HostIommu {
            allowed: vec![Iommu::Off],
            why,
        };
        let translated = match group_type {
            Some("identity") => return off("the device's IOMMU group is identity-mapped (no translation)".into()),
            Some(t) if t.starts_with("DMA") => format!("the device's IOMMU group translates (type {t})"),
            _ if k.passthrough == Some(true) => {
                return off("the kernel command line puts the IOMMU in passthrough".into())
            }
            _ if k.enabled == Some(false) => return off("the kernel command line turns the IOMMU off".into()),
            _ if k.units.is_empty() => return off("no IOMMU unit is registered in sys/class/iommu".into()),
            _ => format!("IOMMU units {} translate", k.units.join(", ")),
        };
        if super_pages_off(k) {
            HostIommu {
                allowed: vec![Iommu::Pages4K],
                why: format!("{translated}, super pages off (sp_off)"),
            }
        } else if buffer_page_bytes <= 4096 {
            HostIommu {
                allowed: vec![Iommu::Pages4K],
                why: format!("{translated}; the DMA buffer is on 4 KiB pages, so are its IO pages"),
            }
        } else {
            HostIommu {
                allowed: vec![Iommu::Super2M, Iommu::Pages4K],
                why: format!("{translated}; the DMA buffer is on huge pages, mapped with 2 MB IO pages unless the driver chooses 4 KB"),
            }
        }
    }

    /// The mode the run records: `asked` when the host allows it, by default the host's.
    pub fn choose(&self, asked: Option<Iommu>) -> Result<Iommu, String> {
        match asked {
            None => Ok(self.allowed[0]),
            Some(m) if self.allowed.contains(&m) => Ok(m),
            Some(m) => {
                let allowed: Vec<&str> = self.allowed.iter().map(|a| a.name()).collect();
                Err(format!(
                    "iommu {}: a real device runs under the host's IOMMU, which allows {} here ({}); \
                     the option states the host's setting and cannot change it (the kernel command \
                     line does: intel_iommu=on or amd_iommu=on; 4k with intel_iommu=sp_off or a DMA \
                     buffer without huge pages)",
                    m.name(),
                    allowed.join(" or "),
                    self.why
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(cmdline: &str) -> KernelIommu {
        KernelIommu::parse(cmdline, vec!["dmar0".into(), "dmar1".into()])
    }

    #[test]
    fn pcie_bench_s_command_lines_give_its_directories_modes() {
        let cmdline = |c: &str| cmdline_mode(&KernelIommu::parse(c, vec![]));
        assert_eq!(cmdline("ro intel_iommu=on,sp_off quiet"), Iommu::Pages4K);
        assert_eq!(cmdline("intel_iommu=on"), Iommu::Super2M);
        assert_eq!(cmdline("intel_iommu=on iommu=pt"), Iommu::Off);
        assert_eq!(cmdline("quiet"), Iommu::Off);
    }

    #[test]
    fn a_live_host_allows_what_its_groups_units_and_buffer_pages_allow() {
        let huge = 2 << 20;
        let modes = |k: &KernelIommu, group: Option<&str>, page: u64| HostIommu::of(k, group, page).allowed;
        // Translation off, by each of the signs.
        let none = KernelIommu::parse("quiet", vec![]);
        assert_eq!(modes(&none, None, huge), [Iommu::Off]);
        assert_eq!(modes(&on("iommu=pt"), None, huge), [Iommu::Off]);
        assert_eq!(modes(&on("intel_iommu=off"), None, huge), [Iommu::Off]);
        assert_eq!(modes(&on("quiet"), Some("identity"), huge), [Iommu::Off]);
        // Translated: the group says so even where the command line would not.
        assert_eq!(modes(&on("iommu=pt"), Some("DMA-FQ"), 4096), [Iommu::Pages4K]);
        assert_eq!(modes(&on("intel_iommu=on,sp_off"), None, huge), [Iommu::Pages4K]);
        assert_eq!(modes(&on("quiet"), Some("DMA"), huge), [Iommu::Super2M, Iommu::Pages4K]);
        let why = HostIommu::of(&on("quiet"), None, 4096).why;
        assert_eq!(
            why,
            "IOMMU units dmar0, dmar1 translate; the DMA buffer is on 4 KiB pages, so are its IO pages"
        );
    }

    #[test]
    fn the_option_may_state_the_host_s_mode_not_change_it() {
        let host = HostIommu::of(&on("quiet"), Some("DMA"), 2 << 20);
        assert_eq!(host.choose(None), Ok(Iommu::Super2M));
        assert_eq!(host.choose(Some(Iommu::Pages4K)), Ok(Iommu::Pages4K));
        let e = host.choose(Some(Iommu::Off)).unwrap_err();
        assert!(
            e.starts_with("iommu off: a real device runs under the host's IOMMU, which allows 2m or 4k here (the device's IOMMU group translates (type DMA); "),
            "{e}"
        );
        let none = HostIommu::of(&KernelIommu::parse("quiet", vec![]), None, 4096);
        let e = none.choose(Some(Iommu::Pages4K)).unwrap_err();
        assert!(
            e.contains("which allows off here (no IOMMU unit is registered in sys/class/iommu)"),
            "{e}"
        );
    }
}
