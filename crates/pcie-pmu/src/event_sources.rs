//! A Linux sysfs/procfs tree rooted at a directory (`/` on a real host, a temporary directory in
//! tests) as the PMU tools see it: PMUs under `ROOT/sys/bus/event_source/devices/*`. PCI
//! functions and `ROOT/proc/cpuinfo` ([`pcie_sysfs::host::CpuInfo`]) are pcie-sysfs's to read;
//! its file conventions ([`pcie_sysfs::files`]) are used here too, with its errors turned into
//! [`PmuError::Sysfs`].

use crate::error::PmuError;
/// Numbers in PMU files follow the sysfs convention too (event_spec.rs reads them through here).
pub(crate) use pcie_sysfs::files::parse_u64;
use pcie_sysfs::files::read_attr;
/// The CPU model picks a PMU's catalog; pcie-sysfs reads `/proc/cpuinfo` for every crate.
pub use pcie_sysfs::host::CpuModel;
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
