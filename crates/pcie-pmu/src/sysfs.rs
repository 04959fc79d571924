//! A reader of a Linux sysfs/procfs tree rooted at a directory (`/` on a real host, a temporary
//! directory in tests). Only the files the PMU tools need are read: PMUs under
//! `ROOT/sys/bus/event_source/devices/*`, PCI functions under `ROOT/sys/bus/pci/devices/*` and
//! `ROOT/proc/cpuinfo`.

use crate::error::PmuError;
use std::fs;
use std::path::{Path, PathBuf};

/// A sysfs tree that exists and has an event_source bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysfsRoot {
    root: PathBuf,
}

pub(crate) const EVENT_SOURCE: &str = "sys/bus/event_source/devices";
pub(crate) const PCI_DEVICES: &str = "sys/bus/pci/devices";

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

    /// `ROOT/<rel>`.
    pub(crate) fn join(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Names of the entries of a directory below the root, sorted; empty when it is missing.
    pub(crate) fn entries(&self, rel: &str) -> Result<Vec<String>, PmuError> {
        list_dir(&self.join(rel))
    }

    /// The PMU directories' names, sorted.
    pub fn pmu_names(&self) -> Result<Vec<String>, PmuError> {
        self.entries(EVENT_SOURCE)
    }

    /// The PCI functions' addresses (`0000:30:03.0`), sorted.
    pub fn pci_addresses(&self) -> Result<Vec<String>, PmuError> {
        self.entries(PCI_DEVICES)
    }

    /// `ROOT/proc/cpuinfo`, or `None` when the file does not exist.
    pub fn cpuinfo(&self) -> Result<Option<String>, PmuError> {
        read_optional(&self.join("proc/cpuinfo"))
    }
}

/// Sorted entry names of a directory; a missing directory has none.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<String>, PmuError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(dir, e)),
    };
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// A file's contents with surrounding whitespace removed (sysfs files end in a newline, some
/// old drivers print none or pad with spaces); `None` when the file does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, PmuError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path, e)),
    }
}

/// A file that must exist.
pub(crate) fn read_required(path: &Path) -> Result<String, PmuError> {
    read_optional(path)?.ok_or_else(|| PmuError::Sysfs {
        path: path.to_path_buf(),
        message: "missing".into(),
    })
}

pub(crate) fn io_err(path: &Path, e: std::io::Error) -> PmuError {
    PmuError::Sysfs {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
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

/// A decimal or `0x` hexadecimal unsigned integer.
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// The most CPUs a list may name (Linux's NR_CPUS is at most 8192; a longer list is corrupt).
const MAX_CPUS: usize = 65536;

/// A CPU list such as `0`, `0,28` or `0-3,8`, naming at most [`MAX_CPUS`] CPUs.
pub(crate) fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || (b - a) as usize >= MAX_CPUS - cpus.len().min(MAX_CPUS) {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
        if cpus.len() > MAX_CPUS {
            return None;
        }
    }
    Some(cpus)
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
    fn numbers_and_cpu_lists() {
        assert_eq!(parse_u64("0x1f"), Some(31));
        assert_eq!(parse_u64(" 27\n"), Some(27));
        assert_eq!(parse_u64("zz"), None);
        assert_eq!(parse_cpu_list("0,28"), Some(vec![0, 28]));
        assert_eq!(parse_cpu_list("0-2,8"), Some(vec![0, 1, 2, 8]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("0-65535").map(|c| c.len()), Some(65536));
        assert_eq!(parse_cpu_list("0-65535,0"), None, "more CPUs than any kernel has");
        assert_eq!(parse_cpu_list(&vec!["0-4095"; 17].join(",")), None);
        assert_eq!(parse_cpu_list("4294967296"), None);
        assert_eq!(parse_cpu_list("0-4294967295"), None, "refused before it is expanded");
    }

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
