//! Writing the PCI part of a sysfs tree in a directory, laid out as [`crate::PciDevice`] reads
//! it: the function's real directory nested below its bridges under `sys/devices/pci<domain:bus>/`,
//! its attribute files, its driver link, and the `sys/bus/pci/devices/<bdf>` link. A simulated
//! host presents its devices this way, and tests build fake trees with it; a snapshot laid out
//! from an lspci dump writes the same layout into an [`OutDir`] ([`TreeOut`]).

use pcie_output::OutDir;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where a tree is laid out: a directory by path (fixtures, simulated hosts), or an output
/// directory held open whose files are made without following links (a snapshot).
pub trait TreeOut {
    /// The file `rel` with `bytes`, parents made.
    fn file(&self, rel: &str, bytes: &[u8]) -> io::Result<()>;
    /// The directory `rel`, parents made.
    fn dir(&self, rel: &str) -> io::Result<()>;
    /// A symlink at `rel` to `target`, parents made.
    fn link(&self, rel: &str, target: &str) -> io::Result<()>;
}

impl TreeOut for Path {
    fn file(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&p, bytes)
    }

    fn dir(&self, rel: &str) -> io::Result<()> {
        fs::create_dir_all(self.join(rel))
    }

    fn link(&self, rel: &str, target: &str) -> io::Result<()> {
        symlink(self, rel, target)
    }
}

impl TreeOut for PathBuf {
    fn file(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        self.as_path().file(rel, bytes)
    }

    fn dir(&self, rel: &str) -> io::Result<()> {
        self.as_path().dir(rel)
    }

    fn link(&self, rel: &str, target: &str) -> io::Result<()> {
        self.as_path().link(rel, target)
    }
}

impl TreeOut for OutDir {
    fn file(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        self.write_new(rel, bytes)
    }

    fn dir(&self, rel: &str) -> io::Result<()> {
        self.subdir(rel).map(|_| ())
    }

    fn link(&self, rel: &str, target: &str) -> io::Result<()> {
        self.symlink(rel, target)
    }
}

/// The real directory of a function below `chain`, relative to the root
/// (`sys/devices/pci0000:30/0000:30:03.0/0000:31:00.0`).
pub fn function_dir(chain: &[&str], bdf: &str) -> String {
    let first = chain.first().copied().unwrap_or(bdf);
    let host = format!("pci{}", first.get(..7).unwrap_or(first)); // pci0000:30
    let mut dir = format!("sys/devices/{host}");
    for c in chain {
        dir.push('/');
        dir.push_str(c);
    }
    dir.push('/');
    dir.push_str(bdf);
    dir
}

/// A PCI function below `chain` (its upstream bridges, root port first) in the tree at `root`,
/// with attribute files (`content` plus the newline the kernel prints) and an optional driver.
pub fn write_pci_function(
    root: &(impl TreeOut + ?Sized),
    chain: &[&str],
    bdf: &str,
    attrs: &[(&str, &str)],
    driver: Option<&str>,
) -> io::Result<()> {
    let dir = function_dir(chain, bdf);
    for (k, v) in attrs {
        root.file(&format!("{dir}/{k}"), format!("{v}\n").as_bytes())?;
    }
    root.dir(&dir)?;
    if let Some(d) = driver {
        root.dir(&format!("sys/bus/pci/drivers/{d}"))?;
        let up = "../".repeat(dir.split('/').count());
        root.link(&format!("{dir}/driver"), &format!("{up}sys/bus/pci/drivers/{d}"))?;
    }
    root.link(&format!("sys/bus/pci/devices/{bdf}"), &format!("../../../../{dir}"))
}

/// A symlink at `rel` below `root` pointing to `target` (relative to the link's directory, as
/// in sysfs), creating parent directories.
pub fn symlink(root: &Path, rel: &str, target: &str) -> io::Result<()> {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent)?;
    }
    std::os::unix::fs::symlink(target, &p)
}

/// A function's `config` file (binary, as the kernel shows it to root), through the
/// `sys/bus/pci/devices/<bdf>` link [`write_pci_function`] made.
pub fn write_config(root: &Path, bdf: &str, config: &[u8]) -> io::Result<()> {
    fs::write(root.join("sys/bus/pci/devices").join(bdf).join("config"), config)
}
