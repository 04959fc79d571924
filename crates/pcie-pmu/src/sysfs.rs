//! A Linux sysfs/procfs tree rooted at a directory (`/` on a real host, a temporary directory in
//! tests) as the PMU tools see it: PMUs under `ROOT/sys/bus/event_source/devices/*` and
//! `ROOT/proc/cpuinfo`. PCI functions are pcie-sysfs's to read; its file conventions
//! ([`pcie_sysfs::files`]) are used here too, with its errors turned into [`PmuError::Sysfs`].

use crate::error::PmuError;
/// Numbers in PMU files follow the sysfs convention too (event_spec.rs reads them through here).
pub(crate) use pcie_sysfs::files::parse_u64;
use pcie_sysfs::files::read_attr;
use pcie_sysfs::SysfsError;
use std::path::{Path, PathBuf};

/// A sysfs tree that exists and has an event_source bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysfsRoot {
    root: PathBuf,
}

pub(crate) const EVENT_SOURCE: &str = "sys/bus/event_source/devices";

impl SysfsRoot {
    /// Open a root; fails when the directory or its `sys/bus/event_source/devices` is missing.
    pub fn open(root: impl AsRef<Path>) -> Result<SysfsRoot, PmuError> {
        let root = root.as_ref().to_path_buf();
        if !root.is_dir() {
            return Err(PmuError::NoRoot(root));
        }
        if !root.join(EVENT_SOURCE).is_dir() {
            return Err(PmuError::NoEventSource(root));
        }
        Ok(SysfsRoot { root })
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The PMU directories' names, sorted.
    pub fn pmu_names(&self) -> Result<Vec<String>, PmuError> {
        Ok(pcie_sysfs::files::list_dir(&self.root.join(EVENT_SOURCE))?)
    }

    /// `ROOT/proc/cpuinfo`, or `None` when the file does not exist.
    pub fn cpuinfo(&self) -> Result<Option<String>, PmuError> {
        Ok(pcie_sysfs::files::read_text(
            &self.root.join("proc/cpuinfo"),
            pcie_output::read::Limit::PROC_FILE,
        )?)
    }
}

impl From<SysfsError> for PmuError {
    fn from(e: SysfsError) -> PmuError {
        match e {
            SysfsError::Io { path, message } => PmuError::Sysfs { path, message },
            SysfsError::NoDevice { ref dir, .. } => PmuError::Sysfs {
                path: dir.clone(),
                message: e.to_string(),
            },
        }
    }
}

/// A file that must exist.
pub(crate) fn read_required(path: &Path) -> Result<String, PmuError> {
    read_attr(path)?.ok_or_else(|| PmuError::Sysfs {
        path: path.to_path_buf(),
        message: "missing".into(),
    })
}

pub(crate) fn parse_err(path: &Path, message: impl Into<String>) -> PmuError {
    PmuError::Sysfs {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The longest `format/` or `events/` text (a page: what the kernel's sysfs prints at most) and
/// event string taken; longer is corrupt, and refusing it keeps error messages that quote the
/// text short.
pub const TEXT_MAX: usize = 4096;

/// `Err` naming the length when `text` is longer than [`TEXT_MAX`].
pub(crate) fn check_len(text: &str) -> Result<(), String> {
    match text.len() {
        n if n > TEXT_MAX => Err(format!("{n} bytes: longer than {TEXT_MAX}")),
        _ => Ok(()),
    }
}

/// The CPU model, from `/proc/cpuinfo`: x86 vendor/family/model, or the Arm implementer/part.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuModel {
    pub vendor: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub model_name: Option<String>,
    pub arm_implementer: Option<u32>,
    pub arm_part: Option<u32>,
}

impl CpuModel {
    /// The first processor's fields of a cpuinfo text.
    pub fn parse(cpuinfo: &str) -> CpuModel {
        let mut m = CpuModel::default();
        for line in cpuinfo.lines() {
            if line.trim().is_empty() && m != CpuModel::default() {
                break; // end of the first processor's block
            }
            let Some((k, v)) = line.split_once(':') else { continue };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "vendor_id" => m.vendor = Some(v.to_string()),
                "cpu family" => m.family = v.parse().ok(),
                "model" => m.model = v.parse().ok(),
                "model name" => m.model_name = Some(v.to_string()),
                "CPU implementer" => m.arm_implementer = parse_u64(v).and_then(|x| u32::try_from(x).ok()),
                "CPU part" => m.arm_part = parse_u64(v).and_then(|x| u32::try_from(x).ok()),
                _ => {}
            }
        }
        m
    }

    /// Intel family 6 model number, when this is an Intel CPU.
    pub fn intel_model(&self) -> Option<u32> {
        (self.vendor.as_deref() == Some("GenuineIntel") && self.family == Some(6))
            .then_some(self.model)
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_first_processor() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Xeon\n\nprocessor\t: 1\nmodel\t\t: 1\n";
        let m = CpuModel::parse(x86);
        assert_eq!(m.intel_model(), Some(143));
        let arm = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd49\n";
        let m = CpuModel::parse(arm);
        assert_eq!(
            (m.arm_implementer, m.arm_part, m.intel_model()),
            (Some(0x41), Some(0xd49), None)
        );
        // A value wider than 32 bits is unknown, not truncated to a real part number.
        let wide = CpuModel::parse("CPU implementer\t: 0x100000041\nCPU part\t: 0x100000d49\n");
        assert_eq!((wide.arm_implementer, wide.arm_part), (None, None));
    }
}
