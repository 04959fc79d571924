//! Fake sysfs trees for tests (ours and other crates'), built in a temporary directory that is
//! removed on drop. The presets follow the layouts in the reference notes (§6): the DWC driver's
//! kernel variants, HiSilicon, Intel IIO, NVIDIA, Marvell, plus root ports and devices (whose
//! presets are pcie-sysfs's fixtures).

use pcie_sim::pmu_host::sysfs_writer::SysfsWriter;
pub use pcie_sim::pmu_host::sysfs_writer::{DwcVariant, DWC_FORMATS};
use std::path::Path;

/// A temporary directory laid out like `/` (`sys/...`, `proc/...`), removed on drop. The
/// methods write through [`SysfsWriter`] and panic on I/O errors (tests only).
#[derive(Debug)]
pub struct Tree {
    w: SysfsWriter,
}

impl Tree {
    /// An empty root with `sys/bus/event_source/devices` and `sys/bus/pci/devices`.
    pub fn new(tag: &str) -> Tree {
        Tree {
            w: SysfsWriter::temporary(&format!("fixture-{tag}")).expect("create fixture directory"),
        }
    }

    pub fn path(&self) -> &Path {
        self.w.path()
    }

    /// Write `rel` with exactly `content`, creating parent directories.
    pub fn raw(&self, rel: &str, content: &str) -> &Tree {
        self.w.raw(rel, content).expect("write fixture file");
        self
    }

    /// Write a sysfs attribute: `content` plus the newline the kernel prints.
    pub fn attr(&self, rel: &str, content: &str) -> &Tree {
        self.w.attr(rel, content).expect("write fixture file");
        self
    }

    /// A symlink at `rel` pointing to `target` (relative to the link's directory, as in sysfs).
    pub fn symlink(&self, rel: &str, target: &str) -> &Tree {
        self.w.symlink(rel, target).expect("create symlink");
        self
    }

    /// A PMU: the real directory under `sys/devices/<parent>/<name>` and the bus symlink.
    pub fn pmu(
        &self,
        parent: &str,
        name: &str,
        type_id: u32,
        cpumask: Option<&str>,
        formats: &[(&str, &str)],
        events: &[(&str, &str)],
    ) -> &Tree {
        self.w
            .pmu(parent, name, type_id, cpumask, formats, events)
            .expect("write fixture PMU");
        self
    }

    /// Write a file inside an existing PMU's directory (`identifier`, `bus`, `die0`, ...).
    pub fn pmu_attr(&self, name: &str, file: &str, content: &str) -> &Tree {
        self.w.pmu_attr(name, file, content).expect("write fixture file");
        self
    }

    /// A PCI function below `chain` (its upstream bridges, root port first).
    pub fn pci(&self, chain: &[&str], bdf: &str, attrs: &[(&str, &str)], driver: Option<&str>) -> &Tree {
        self.w
            .pci(chain, bdf, attrs, driver)
            .expect("write fixture PCI function");
        self
    }

    /// A root port with the §6.1 attributes (vendor 0x1ded, Gen5 x16, NUMA node `numa`).
    pub fn root_port(&self, bdf: &str, numa: &str) -> &Tree {
        pcie_sysfs::fixture::root_port(self.path(), bdf, numa).expect("write fixture PCI function");
        self
    }

    /// An endpoint below a root port: a NIC that trained below its maximum (Gen4 x8 of Gen4 x16).
    pub fn nic_below(&self, root_port: &str, bdf: &str) -> &Tree {
        pcie_sysfs::fixture::nic_below(self.path(), root_port, bdf).expect("write fixture PCI function");
        self
    }

    /// `proc/cpuinfo` for an Intel family-6 CPU of `model`.
    pub fn intel_cpu(&self, model: u32) -> &Tree {
        self.raw(
            "proc/cpuinfo",
            &format!("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: {model}\nmodel name\t: Intel(R) Xeon(R)\n\n"),
        )
    }
}

/// A DWC PMU of `variant` named `name` (e.g. `dwc_rootport_3018`, `pcie_bdf_300300`).
pub fn dwc_pmu(tree: &Tree, name: &str, type_id: u32, cpumask: &str, variant: DwcVariant) {
    pcie_sim::pmu_host::sysfs_writer::dwc_pmu(&tree.w, name, type_id, cpumask, variant).expect("write fixture DWC PMU");
}

/// The HiSilicon PCIe PMU of §6.2 (`bus` and, with `bdf_range`, `bdf_min`/`bdf_max`).
pub fn hisi_pmu(tree: &Tree, name: &str, type_id: u32, bus: &str, bdf_range: Option<(&str, &str)>) {
    let events: [(&str, &str); 18] = [
        ("rx_mwr_latency", "config=0x10"),
        ("rx_mwr_cnt", "config=0x10010"),
        ("rx_mrd_latency", "config=0x210"),
        ("rx_mrd_cnt", "config=0x10210"),
        ("tx_mrd_latency", "config=0x11"),
        ("tx_mrd_cnt", "config=0x10011"),
        ("rx_mwr_flux", "config=0x104"),
        ("rx_mwr_time", "config=0x10104"),
        ("rx_mrd_flux", "config=0x804"),
        ("rx_mrd_time", "config=0x10804"),
        ("rx_cpl_flux", "config=0x2004"),
        ("rx_cpl_time", "config=0x12004"),
        ("tx_mwr_flux", "config=0x105"),
        ("tx_mwr_time", "config=0x10105"),
        ("tx_mrd_flux", "config=0x405"),
        ("tx_mrd_time", "config=0x10405"),
        ("tx_cpl_flux", "config=0x1005"),
        ("tx_cpl_time", "config=0x11005"),
    ];
    let formats = [
        ("event", "config:0-16"),
        ("thr_len", "config1:0-3"),
        ("thr_mode", "config1:4"),
        ("trig_len", "config1:5-8"),
        ("trig_mode", "config1:9"),
        ("len_mode", "config1:10-11"),
        ("port", "config2:0-15"),
        ("bdf", "config2:16-31"),
    ];
    tree.pmu("pci0000:30/0000:30:00.4", name, type_id, Some("0"), &formats, &events);
    tree.pmu_attr(name, "identifier", "0x30");
    tree.pmu_attr(name, "bus", bus);
    if let Some((lo, hi)) = bdf_range {
        tree.pmu_attr(name, "bdf_min", lo);
        tree.pmu_attr(name, "bdf_max", hi);
    }
}

/// Intel `uncore_iio_free_running_<n>` with the kernel's `.scale` (`3.814697266e-6` before the
/// 2025 fix, `3.0517578125e-5` after on ICX/SNR/SPR), and `uncore_iio_<n>` with the `dieN`
/// root buses.
pub fn intel_iio_pmus(tree: &Tree, box_id: u32, type_id: u32, scale: &str, dies: &[&str]) {
    let mut events: Vec<(String, String)> = vec![("ioclk".into(), "event=0xff,umask=0x10".into())];
    for p in 0..8 {
        events.push((format!("bw_in_port{p}"), format!("event=0xff,umask={:#x}", 0x20 + p)));
        events.push((format!("bw_in_port{p}.scale"), scale.to_string()));
        events.push((format!("bw_in_port{p}.unit"), "MiB".into()));
    }
    let ev: Vec<(&str, &str)> = events.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let fr = format!("uncore_iio_free_running_{box_id}");
    let formats = [("event", "config:0-7"), ("umask", "config:8-15")];
    tree.pmu("", &fr, type_id, Some("0,28"), &formats, &ev);
    let iio = format!("uncore_iio_{box_id}");
    let pformats = [
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        ("edge", "config:18"),
        ("inv", "config:23"),
        ("thresh", "config:24-35"),
        ("ch_mask", "config:36-47"),
        ("fc_mask", "config:48-50"),
    ];
    tree.pmu("", &iio, type_id + 10, Some("0,28"), &pformats, &[]);
    // Only the programmable PMU carries the die -> root bus mapping.
    for (i, d) in dies.iter().enumerate() {
        tree.pmu_attr(&iio, &format!("die{i}"), d);
    }
}

/// NVIDIA Grace `nvidia_pcie_pmu_<socket>`.
pub fn nvidia_grace_pmu(tree: &Tree, socket: u32, type_id: u32) {
    let names = [
        "rd_bytes_loc",
        "rd_bytes_rem",
        "wr_bytes_loc",
        "wr_bytes_rem",
        "total_bytes_loc",
        "total_bytes_rem",
        "rd_req_loc",
        "rd_req_rem",
        "wr_req_loc",
        "wr_req_rem",
        "total_req_loc",
        "total_req_rem",
        "rd_cum_outs_loc",
        "rd_cum_outs_rem",
    ];
    let mut ev: Vec<(String, String)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), format!("event={i:#x}")))
        .collect();
    ev.push(("cycles".into(), "event=0x100000000".into()));
    let ev: Vec<(&str, &str)> = ev.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let name = format!("nvidia_pcie_pmu_{socket}");
    tree.pmu(
        "platform/NVDA2006:00",
        &name,
        type_id,
        Some("0"),
        &[("event", "config:0-32"), ("root_port", "config1:0-9")],
        &ev,
    );
    tree.pmu_attr(&name, "associated_cpus", "0-71");
}

/// Marvell `mrvl_pcie_rc_pmu_<addr>` with a few of its free-running events.
pub fn marvell_pmu(tree: &Tree, name: &str, type_id: u32) {
    let ev = [
        ("ib_tlp_pr", "event=0x01"),
        ("ib_tlp_dwords_pr", "event=0x04"),
        ("ib_tlp_dwords_cpl_partid", "event=0x05"),
        ("ob_tlp_dwords_pr_partid", "event=0x0e"),
        ("ob_tlp_dwords_cpl_partid", "event=0x0f"),
        ("ats_trans", "event=0x15"),
    ];
    tree.pmu(
        "platform/MRVL000E:00",
        name,
        type_id,
        Some("0"),
        &[("event", "config:0-5")],
        &ev,
    );
}

/// Non-PCIe PMUs every Linux host has: `software`, `cpu`, `msr`.
pub fn common_pmus(tree: &Tree) {
    tree.pmu("", "software", 1, None, &[("config", "config:0-63")], &[]);
    tree.pmu(
        "",
        "cpu",
        4,
        None,
        &[("event", "config:0-7"), ("umask", "config:8-15"), ("edge", "config:18")],
        &[("cpu-cycles", "event=0x3c"), ("instructions", "event=0xc0")],
    );
    tree.pmu(
        "",
        "msr",
        9,
        None,
        &[("event", "config:0-63")],
        &[("tsc", "event=0x00"), ("aperf", "event=0x01"), ("mperf", "event=0x02")],
    );
}

/// A host with a Gen5 x16 root port behind an upstream DWC PMU and a pre-upstream one.
pub fn dwc_host(name: &str) -> Tree {
    let t = Tree::new(name);
    common_pmus(&t);
    dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
    dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    t.root_port("0000:30:03.0", "0"); // 32 GT/s x16: 504 Gb/s
    t
}

/// A counter source whose counters advance by a fixed step per read (10^6 counts, 100 ms
/// enabled, half of it running), on a clock that only moves when the caller sleeps.
#[derive(Debug, Default)]
pub struct StepSource {
    pub reads: Vec<crate::Reading>,
    pub now: std::time::Duration,
}

impl crate::CounterSource for StepSource {
    fn open(&mut self, _e: &crate::ResolvedEvent) -> Result<crate::CounterId, crate::CounterError> {
        self.reads.push(crate::Reading::default());
        Ok(crate::CounterId(self.reads.len() - 1))
    }
    fn read(&mut self, id: crate::CounterId) -> Result<crate::Reading, crate::CounterError> {
        let r = &mut self.reads[id.0];
        let now = *r;
        r.value += 1_000_000;
        r.enabled += 100_000_000;
        r.running += 50_000_000;
        Ok(now)
    }
    fn elapsed(&self) -> std::time::Duration {
        self.now
    }
    fn sleep(&mut self, d: std::time::Duration) -> Result<(), crate::CounterError> {
        self.now += d;
        Ok(())
    }
}
