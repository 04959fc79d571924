//! Reading a host's PCI functions once: sysfs attributes, link files, the PCI Express
//! capability's registers, power and AER files. Everything later works on these records, so
//! each file is read once per check.

use crate::report::LinkEnd;
use pcie_sysfs::{
    Acs, AerFiles, AerStatus, AtomicOps, Bdf, ConfigSpaceError, LinkFiles, LinkSpeed, LinkWidth, PciDevice,
    PcieCapability, SysfsError,
};

/// One function as read.
pub(crate) struct Func {
    pub dev: PciDevice,
    pub files: LinkFiles,
    pub cap: Result<PcieCapability, ConfigSpaceError>,
    pub has_aer: Option<bool>,
    /// The AER capability's status registers, where config space shows them.
    pub aer_status: Option<AerStatus>,
    /// AtomicOp routing and controls (Device Capabilities/Control 2), and the ACS registers.
    pub atomics: Option<AtomicOps>,
    pub acs: Option<Acs>,
    pub power_state: Option<String>,
    pub runtime_status: Option<String>,
    /// The type of the function's IOMMU group (`DMA`, `DMA-FQ`: translated; `identity`).
    pub iommu_group_type: Option<String>,
    pub local_cpus: Option<String>,
    pub aer: AerFiles,
    /// What it alone can use of its link, where a ceiling is known (crate::demand).
    pub demand: Option<crate::demand::Demand>,
}

impl Func {
    pub fn read(dev: PciDevice) -> Result<Func, SysfsError> {
        let files = dev.link_files();
        let dir = dev.files()?;
        let config = dir.config_registers();
        let (cap, has_aer, aer_status) = match &config {
            Ok(bytes) => (
                PcieCapability::decode(bytes),
                pcie_sysfs::has_aer(bytes),
                AerStatus::decode(bytes),
            ),
            Err(e) => (Err(e.clone()), None, None),
        };
        let bytes = config.as_deref().unwrap_or_default();
        let (atomics, acs) = (AtomicOps::decode(bytes), Acs::decode(bytes));
        let short = |t: Option<String>| t.map(|t| t.chars().take(64).collect::<String>());
        Ok(Func {
            power_state: short(dir.attr("power_state")?),
            runtime_status: short(dir.attr("power/runtime_status")?),
            iommu_group_type: short(dir.attr("iommu_group/type")?),
            local_cpus: short(dir.attr("local_cpulist")?),
            aer: dir.aer_files()?,
            demand: crate::demand::own(&dev),
            files,
            cap,
            has_aer,
            aer_status,
            atomics,
            acs,
            dev,
        })
    }

    pub fn bdf(&self) -> Bdf {
        self.dev.bdf
    }

    /// Whether files or registers describe a link of this function.
    pub fn has_link(&self) -> bool {
        !self.files.is_empty() || self.cap.as_ref().is_ok_and(|c| c.link.is_some())
    }

    /// This function's end of its link: the files where they exist, the registers otherwise.
    pub fn end(&self) -> LinkEnd {
        let regs = self.cap.as_ref().ok().and_then(|c| c.link);
        let speed = |f: &Option<LinkSpeed>, r: Option<f64>| match f {
            Some(s) => s.gts(),
            None => r,
        };
        let width = |f: &Option<LinkWidth>, r: Option<u32>| match f {
            Some(w) => w.lanes(),
            None => r.filter(|w| (1..=pcie_sysfs::MAX_WIDTH).contains(w)),
        };
        LinkEnd {
            bdf: Some(self.bdf()),
            current_gts: speed(&self.files.current_speed, regs.and_then(|r| r.speed)),
            current_width: width(&self.files.current_width, regs.map(|r| r.width)),
            max_gts: speed(&self.files.max_speed, regs.and_then(|r| r.max_speed)),
            max_width: width(&self.files.max_width, regs.map(|r| r.max_width)),
            target_gts: regs.and_then(|r| r.target_speed),
        }
    }

    /// The link files whose text means nothing, as `name "text": cannot tell` lines.
    pub fn cannot_tell(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut speed = |name: &str, s: &Option<LinkSpeed>| match s {
            Some(LinkSpeed::CannotTell(t)) => out.push(format!("{name} {t:?}: cannot tell the speed")),
            Some(LinkSpeed::Unknown) => out.push(format!("{name} \"Unknown\": the kernel cannot tell the speed")),
            _ => {}
        };
        speed("current_link_speed", &self.files.current_speed);
        speed("max_link_speed", &self.files.max_speed);
        for (name, w) in [
            ("current_link_width", &self.files.current_width),
            ("max_link_width", &self.files.max_width),
        ] {
            if let Some(LinkWidth::CannotTell(t)) = w {
                out.push(format!(
                    "{name} {t:?}: cannot tell the width (0 is a link that is down, 255 a device that does not answer)"
                ));
            }
        }
        if let Err(e @ ConfigSpaceError::CapabilityLoop(_)) = &self.cap {
            out.push(e.to_string());
        }
        for (name, f) in [
            ("aer_dev_correctable", &self.aer.correctable),
            ("aer_dev_nonfatal", &self.aer.nonfatal),
            ("aer_dev_fatal", &self.aer.fatal),
        ] {
            if let Some(Err(e)) = f {
                out.push(format!("{name}: {e}: cannot tell the counts"));
            }
        }
        out
    }

    /// In a low-power state: a D-state other than D0, or runtime-suspended.
    pub fn low_power(&self) -> bool {
        self.power_state
            .as_deref()
            .is_some_and(|s| s.starts_with('D') && s != "D0")
            || self.runtime_status.as_deref() == Some("suspended")
    }
}
