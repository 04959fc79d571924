//! What can go wrong reading a sysfs tree: a device that is not there, or a file or directory
//! that exists but cannot be read.

use std::fmt;
use std::path::PathBuf;

/// A failed read below a sysfs root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysfsError {
    /// `sys/bus/pci/devices/<bdf>` does not exist (`dir` is the devices directory).
    NoDevice { bdf: String, dir: PathBuf },
    /// A file or directory that exists could not be read (the I/O error's text).
    Io { path: PathBuf, message: String },
}

impl fmt::Display for SysfsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SysfsError::NoDevice { bdf, dir } => write!(f, "no PCI device {bdf} in {}", dir.display()),
            SysfsError::Io { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for SysfsError {}
