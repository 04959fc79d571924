//! Writing sysfs trees: the layout `System::discover` reads (`sys/bus/event_source/devices`,
//! `sys/devices/...` PCI functions with their attributes, `proc/cpuinfo`), in a directory. The
//! simulated host presents itself through such a tree, and test fixtures are built with it. The
//! PMU part is here; PCI functions are written by pcie-sysfs, next to their reader.

use pcie_output::PrivateDir;
use std::fs;
use std::io;
use std::path::Path;

/// A directory laid out like `/` (`sys/...`, `proc/...`), private to this user (see
/// [`PrivateDir`]) and removed on drop.
#[derive(Debug)]
pub struct SysfsWriter {
    dir: PrivateDir,
}

impl SysfsWriter {
    /// A new, empty tree in a temporary directory, named after `tag` and this process
    /// (`pcie-pmu-TAG-PID-RANDOM`), with `sys/bus/event_source/devices` and
    /// `sys/bus/pci/devices`. A tree is a thousand small files: it goes where
    /// [`pcie_output::tree_bases`] says (memory-backed `/dev/shm` when it exists and `TMPDIR` is
    /// not set).
    pub fn temporary(tag: &str) -> io::Result<SysfsWriter> {
        let mut last = None;
        for base in pcie_output::tree_bases() {
            remove_abandoned(&base);
            let made = PrivateDir::new_in(&base, &format!("pcie-pmu-{tag}-{}", std::process::id())).and_then(|dir| {
                let w = SysfsWriter { dir };
                [
                    "sys/bus/event_source/devices",
                    "sys/bus/pci/devices",
                    "sys/devices",
                    "proc",
                ]
                .iter()
                .try_for_each(|d| fs::create_dir_all(w.path().join(d)))
                .map(|()| w)
            });
            match made {
                Ok(w) => return Ok(w),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one base directory was tried"))
    }

    /// Where [`SysfsWriter::temporary`] puts its trees, for tests.
    #[cfg(test)]
    fn base(&self) -> &Path {
        self.path().parent().expect("a temporary tree has a parent")
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write `rel` with exactly `content`, creating parent directories.
    pub fn raw(&self, rel: &str, content: &str) -> io::Result<()> {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&p, content)
    }

    /// Replace the file at `rel` with `content` at once: written beside it, then renamed over
    /// it, so that a reader sees the old text or the new one, never a part.
    pub fn replace(&self, rel: &str, content: &str) -> io::Result<()> {
        let p = self.path().join(rel);
        let tmp = p.with_extension("new");
        fs::write(&tmp, content)?;
        fs::rename(&tmp, &p)
    }

    /// Write a sysfs attribute: `content` plus the newline the kernel prints.
    pub fn attr(&self, rel: &str, content: &str) -> io::Result<()> {
        self.raw(rel, &format!("{content}\n"))
    }

    /// A symlink at `rel` pointing to `target` (relative to the link's directory, as in sysfs).
    pub fn symlink(&self, rel: &str, target: &str) -> io::Result<()> {
        pcie_sysfs::tree::symlink(self.path(), rel, target)
    }

    /// A PMU: the real directory under `sys/devices/<parent>/<name>` and the bus symlink.
    /// `events` entries may be `name.scale` / `name.unit` files too.
    pub fn pmu(
        &self,
        parent: &str,
        name: &str,
        type_id: u32,
        cpumask: Option<&str>,
        formats: &[(&str, &str)],
        events: &[(&str, &str)],
    ) -> io::Result<()> {
        let dir = format!("sys/devices/{parent}/{name}");
        self.attr(&format!("{dir}/type"), &type_id.to_string())?;
        self.attr(&format!("{dir}/perf_event_mux_interval_ms"), "4")?;
        self.raw(&format!("{dir}/uevent"), "")?;
        fs::create_dir_all(self.path().join(&dir).join("power"))?;
        if let Some(c) = cpumask {
            self.attr(&format!("{dir}/cpumask"), c)?;
        }
        for (f, v) in formats {
            self.attr(&format!("{dir}/format/{f}"), v)?;
        }
        for (e, v) in events {
            self.attr(&format!("{dir}/events/{e}"), v)?;
        }
        let depth = parent.split('/').filter(|s| !s.is_empty()).count();
        let target = format!(
            "../../../devices/{}{name}",
            if depth == 0 {
                String::new()
            } else {
                format!("{parent}/")
            }
        );
        self.symlink(&format!("sys/bus/event_source/devices/{name}"), &target)
    }

    /// Write a file inside an existing PMU's directory (`identifier`, `bus`, `die0`, ...).
    pub fn pmu_attr(&self, name: &str, file: &str, content: &str) -> io::Result<()> {
        self.attr(&format!("sys/bus/event_source/devices/{name}/{file}"), content)
    }

    /// A PCI function below `chain` (its upstream bridges, root port first), with attribute
    /// files and an optional driver ([`pcie_sysfs::tree::write_pci_function`]).
    pub fn pci(&self, chain: &[&str], bdf: &str, attrs: &[(&str, &str)], driver: Option<&str>) -> io::Result<()> {
        pcie_sysfs::tree::write_pci_function(self.path(), chain, bdf, attrs, driver)
    }
}

/// Kernel variants of the DWC PMU's sysfs layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DwcVariant {
    /// v1 patch / Yitian article: `pcie_bdf_*`, `eventid=0x21, type=0x1` (space, time events
    /// without newline), lane events `type=0x2, lane=0x0`, 16-byte units.
    V1,
    /// Early upstream: mixed-case Group#1 names, typo'd lane names, 16-bit BDF names.
    EarlyUpstream,
    /// Current upstream (§6.1): lower-case names.
    Upstream,
    /// Newest: L1_AUX = 0x8, TX_RX_L0S = 0x9.
    Newest,
}

const DWC_GROUP0: [(&str, u32); 10] = [
    ("one_cycle", 0x0),
    ("TX_L0S", 0x1),
    ("RX_L0S", 0x2),
    ("L0", 0x3),
    ("L1", 0x4),
    ("L1_1", 0x5),
    ("L1_2", 0x6),
    ("CFG_RCVRY", 0x7),
    ("TX_RX_L0S", 0x8),
    ("L1_AUX", 0x9),
];

const DWC_LANE: [(&str, u32); 29] = [
    ("tx_ack_dllp", 0x600),
    ("tx_update_fc_dllp", 0x601),
    ("rx_ack_dllp", 0x602),
    ("rx_update_fc_dllp", 0x603),
    ("rx_nullified_tlp", 0x604),
    ("tx_nullified_tlp", 0x605),
    ("rx_duplicate_tlp", 0x606),
    ("tx_memory_write", 0x700),
    ("tx_memory_read", 0x701),
    ("tx_configuration_write", 0x702),
    ("tx_configuration_read", 0x703),
    ("tx_io_write", 0x704),
    ("tx_io_read", 0x705),
    ("tx_completion_without_data", 0x706),
    ("tx_completion_with_data", 0x707),
    ("tx_message_tlp", 0x708),
    ("tx_atomic", 0x709),
    ("tx_tlp_with_prefix", 0x70a),
    ("rx_memory_write", 0x70b),
    ("rx_memory_read", 0x70c),
    ("rx_io_write", 0x70f),
    ("rx_io_read", 0x710),
    ("rx_completion_without_data", 0x711),
    ("rx_completion_with_data", 0x712),
    ("rx_message_tlp", 0x713),
    ("rx_atomic", 0x714),
    ("rx_tlp_with_prefix", 0x715),
    ("tx_ccix_tlp", 0x716),
    ("rx_ccix_tlp", 0x717),
];

/// The DWC format terms (every variant).
pub const DWC_FORMATS: [(&str, &str); 3] = [
    ("eventid", "config:0-15"),
    ("type", "config:16-19"),
    ("lane", "config:20-27"),
];

/// A DWC PMU of `variant` named `name` (e.g. `dwc_rootport_3018`, `pcie_bdf_300300`).
pub fn dwc_pmu(tree: &SysfsWriter, name: &str, type_id: u32, cpumask: &str, variant: DwcVariant) -> io::Result<()> {
    let mut events: Vec<(String, String)> = Vec::new();
    let (time_type, lane_type, lane) = match variant {
        DwcVariant::V1 => (1, 2, "0x0"),
        _ => (0, 1, "?"),
    };
    let sep = if variant == DwcVariant::V1 { ", " } else { "," };
    for (n, id) in DWC_GROUP0 {
        let id = match (variant, n) {
            (DwcVariant::Newest, "TX_RX_L0S") => 0x9,
            (DwcVariant::Newest, "L1_AUX") => 0x8,
            _ => id,
        };
        events.push((n.to_string(), format!("eventid={id:#x}{sep}type={time_type:#x}")));
    }
    let payload: [(&str, u32); 4] = match variant {
        DwcVariant::V1 | DwcVariant::EarlyUpstream => [
            ("Tx_PCIe_TLP_Data_Payload", 0x20),
            ("Rx_PCIe_TLP_Data_Payload", 0x21),
            ("Tx_CCIX_TLP_Data_Payload", 0x22),
            ("Rx_CCIX_TLP_Data_Payload", 0x23),
        ],
        _ => [
            ("tx_pcie_tlp_data_payload", 0x20),
            ("rx_pcie_tlp_data_payload", 0x21),
            ("tx_ccix_tlp_data_payload", 0x22),
            ("rx_ccix_tlp_data_payload", 0x23),
        ],
    };
    for (n, id) in payload {
        events.push((n.to_string(), format!("eventid={id:#x}{sep}type={time_type:#x}")));
    }
    for (n, id) in DWC_LANE {
        let n = match (variant, n) {
            (DwcVariant::V1 | DwcVariant::EarlyUpstream, "rx_nullified_tlp") => "rx_nulified_tlp",
            (DwcVariant::V1 | DwcVariant::EarlyUpstream, "tx_nullified_tlp") => "tx_nulified_tlp",
            (DwcVariant::V1 | DwcVariant::EarlyUpstream, "rx_duplicate_tlp") => "rx_duplicate_tl",
            _ => n,
        };
        events.push((
            n.to_string(),
            format!("eventid={id:#x}{sep}type={lane_type:#x}{sep}lane={lane}"),
        ));
    }
    let ev: Vec<(&str, &str)> = events.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    tree.pmu(
        "platform/dwc_pcie_pmu.12312",
        name,
        type_id,
        Some(cpumask),
        &DWC_FORMATS,
        &ev,
    )?;
    if variant == DwcVariant::V1 {
        // The v1 driver printed time events without a trailing newline.
        for (n, id) in DWC_GROUP0.iter().chain(payload.iter()) {
            tree.raw(
                &format!("sys/bus/event_source/devices/{name}/events/{n}"),
                &format!("eventid={id:#x}, type=0x1"),
            )?;
        }
    }
    Ok(())
}

/// Remove the trees of processes that are gone (a second Ctrl-C or a kill skips the drop):
/// `pcie-pmu-TAG-PID-RANDOM` whose PID has no `/proc` entry.
fn remove_abandoned(base: &Path) {
    // Without /proc every process would look gone.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("pcie-pmu-")) else {
            continue;
        };
        let pid = rest.rsplit('-').nth(1).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_left_by_a_process_that_is_gone_is_removed_and_live_ones_are_kept() {
        let w = SysfsWriter::temporary("sweep").unwrap();
        // PIDs stay below pid_max, so this one belongs to no process.
        let pid_max: u32 = fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(4_194_304);
        let dead = w.base().join(format!("pcie-pmu-old-tag-{pid_max}-0"));
        fs::create_dir_all(dead.join("sys")).unwrap();
        let other = SysfsWriter::temporary("sweep").unwrap();
        assert!(!dead.exists(), "the abandoned tree is gone");
        assert!(w.path().is_dir() && other.path().is_dir(), "our own trees stay");
    }
}
