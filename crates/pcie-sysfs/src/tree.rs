//! Writing the PCI part of a sysfs tree in a directory, laid out as [`crate::PciDevice`] reads
//! it: the function's real directory nested below its bridges under `sys/devices/pci<domain:bus>/`,
//! its attribute files, its driver link, and the `sys/bus/pci/devices/<bdf>` link. A simulated
//! host presents its devices this way, and tests build fake trees with it.

use std::fs;
use std::io;
use std::path::Path;

/// A PCI function below `chain` (its upstream bridges, root port first) in the tree at `root`,
/// with attribute files (`content` plus the newline the kernel prints) and an optional driver.
pub fn write_pci_function(
    root: &Path,
    chain: &[&str],
    bdf: &str,
    attrs: &[(&str, &str)],
    driver: Option<&str>,
) -> io::Result<()> {
    let first = chain.first().copied().unwrap_or(bdf);
    let host = format!("pci{}", first.get(..7).unwrap_or(first)); // pci0000:30
    let mut dir = format!("sys/devices/{host}");
    for c in chain {
        dir.push('/');
        dir.push_str(c);
    }
    dir.push('/');
    dir.push_str(bdf);
    for (k, v) in attrs {
        let p = root.join(&dir).join(k);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&p, format!("{v}\n"))?;
    }
    fs::create_dir_all(root.join(&dir))?;
    if let Some(d) = driver {
        fs::create_dir_all(root.join(format!("sys/bus/pci/drivers/{d}")))?;
        let up = "../".repeat(dir.split('/').count());
        symlink(root, &format!("{dir}/driver"), &format!("{up}sys/bus/pci/drivers/{d}"))?;
    }
    symlink(
        root,
        &format!("sys/bus/pci/devices/{bdf}"),
        &format!("../../../../{dir}"),
    )
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
