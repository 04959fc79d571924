//! What the ports behind a storage or USB controller negotiated, read below the controller's
//! PCI function directory: each ATA port's SATA link speed (libata's `ata_link` class) and
//! each USB root hub's speed and port count. A controller moves no more than its ports carry,
//! so these bound what its traffic can ask of its PCIe link (`check`'s demand).
//!
//! Layout (the kernel's `drivers/ata/libata-transport.c` and `drivers/usb/core/sysfs.c`):
//! `<fn>/ataN/linkN/ata_link/linkN/sata_spd` reads `1.5 Gbps`, `3.0 Gbps`, `6.0 Gbps` or
//! `<unknown>` (no link trained); `linkN.M` are a port multiplier's links, which share the host
//! link `linkN`, so only that is read. `<fn>/usbN` is a root hub: `speed` in Mb/s (`12`, `480`,
//! `5000`, `10000`, `20000`) and `maxchild`, its number of ports.

use crate::files::{list_dir, read_attr};
use std::path::{Path, PathBuf};

/// At most this many ATA ports or USB root hubs are read below one function (AHCI has at most
/// 32 ports; a controller has a few root hubs): a hostile tree cannot make a check read more.
const MOST: usize = 64;

/// The numbered entries `prefix<N>` of `dir`, in order, at most [`MOST`].
fn numbered(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<(u32, String)> = list_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| Some((n.strip_prefix(prefix)?.parse().ok()?, n)))
        .collect();
    names.sort();
    names.into_iter().take(MOST).map(|(_, n)| n).collect()
}

/// Each ATA port's host link file below `function_dir`, relative to it.
fn sata_spd_files(function_dir: &Path) -> Vec<PathBuf> {
    numbered(function_dir, "ata")
        .iter()
        .map(|port| {
            let link = format!("link{}", &port[3..]);
            Path::new(port)
                .join(&link)
                .join("ata_link")
                .join(&link)
                .join("sata_spd")
        })
        .collect()
}

/// The negotiated line rate in Gb/s of each ATA port's link below the controller at
/// `function_dir`, in port order: `None` for a port whose link is down (`<unknown>`) or whose
/// file says nothing readable. Empty where the function has no ATA port (no libata driver
/// bound, or no ATA controller).
pub fn sata_links(function_dir: &Path) -> Vec<Option<f64>> {
    sata_spd_files(function_dir)
        .iter()
        .filter_map(|f| match read_attr(&function_dir.join(f)) {
            Ok(Some(t)) => Some(sata_gbps(&t)),
            _ => None,
        })
        .collect()
}

/// `6.0 Gbps` as 6.0; the kernel prints only 1.5, 3.0 and 6.0 (SATA revisions 1-3).
fn sata_gbps(text: &str) -> Option<f64> {
    let g: f64 = text.strip_suffix(" Gbps")?.parse().ok()?;
    [1.5, 3.0, 6.0].contains(&g).then_some(g)
}

/// One USB root hub below a host controller.
#[derive(Debug, Clone, PartialEq)]
pub struct UsbRootHub {
    /// `usb3`: the bus it roots.
    pub name: String,
    /// Its `speed` in Mb/s (1.5, 12, 480, 5000, 10000, 20000); `None` where unreadable.
    pub mbps: Option<f64>,
    /// Its `maxchild`: how many ports it has; `None` where unreadable.
    pub ports: Option<u32>,
}

/// The USB root hubs below the host controller at `function_dir`, in bus order; empty where
/// it has none (no USB driver bound, or no USB controller).
pub fn usb_root_hubs(function_dir: &Path) -> Vec<UsbRootHub> {
    numbered(function_dir, "usb")
        .into_iter()
        .map(|name| {
            let attr = |a: &str| read_attr(&function_dir.join(&name).join(a)).ok().flatten();
            UsbRootHub {
                mbps: attr("speed")
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|m| m.is_finite() && *m > 0.0 && *m <= 1e6),
                ports: attr("maxchild").and_then(|p| p.parse().ok()),
                name,
            }
        })
        .collect()
}

/// The files below a PCI function's directory that [`sata_links`] and [`usb_root_hubs`] read,
/// relative to it: what a snapshot copies for them.
pub fn port_files(function_dir: &Path) -> Vec<PathBuf> {
    let mut files = sata_spd_files(function_dir);
    for hub in numbered(function_dir, "usb") {
        files.extend(["speed", "maxchild"].map(|a| Path::new(&hub).join(a)));
    }
    files
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::tree::TreeOut;

    fn write_file(root: &Path, rel: &str, text: &str) -> std::io::Result<()> {
        root.file(rel, text.as_bytes())
    }

    fn tree(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("pcie-sysfs-ports-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        root
    }

    #[test]
    fn sata_links_are_read_per_port_and_a_port_multipliers_links_are_not() {
        let f = tree("sata");
        write_file(&f, "ata1/link1/ata_link/link1/sata_spd", "6.0 Gbps\n").unwrap();
        write_file(&f, "ata2/link2/ata_link/link2/sata_spd", "<unknown>\n").unwrap();
        write_file(&f, "ata10/link10/ata_link/link10/sata_spd", "3.0 Gbps\n").unwrap();
        write_file(&f, "ata10/link10.1/ata_link/link10.1/sata_spd", "6.0 Gbps\n").unwrap();
        write_file(&f, "ata3/link3/ata_link/link3/sata_spd", "7.5 Gbps\n").unwrap();
        std::fs::create_dir_all(f.join("ata4")).unwrap();
        std::fs::create_dir_all(f.join("atapi")).unwrap();
        // ata4 has no link file: not a port this reads.
        assert_eq!(sata_links(&f), [Some(6.0), None, None, Some(3.0)]);
        assert_eq!(port_files(&f).len(), 5);
        assert!(port_files(&f).contains(&PathBuf::from("ata10/link10/ata_link/link10/sata_spd")));
        let _ = std::fs::remove_dir_all(&f);
    }

    #[test]
    fn root_hubs_give_speed_and_ports_and_garbage_gives_none() {
        let f = tree("usb");
        write_file(&f, "usb1/speed", "480\n").unwrap();
        write_file(&f, "usb1/maxchild", "12\n").unwrap();
        write_file(&f, "usb2/speed", "10000\n").unwrap();
        write_file(&f, "usb2/maxchild", "4\n").unwrap();
        write_file(&f, "usb3/speed", "fast\n").unwrap();
        write_file(&f, "usbmon/speed", "480\n").unwrap();
        let hubs = usb_root_hubs(&f);
        let got: Vec<_> = hubs.iter().map(|h| (h.name.as_str(), h.mbps, h.ports)).collect();
        assert_eq!(
            got,
            [
                ("usb1", Some(480.0), Some(12)),
                ("usb2", Some(10000.0), Some(4)),
                ("usb3", None, None)
            ]
        );
        assert_eq!(port_files(&f).len(), 6);
        assert!(sata_links(&f).is_empty());
        let _ = std::fs::remove_dir_all(&f);
    }
}
