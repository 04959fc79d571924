//! Fake sysfs trees for tests (ours and other crates'), built in a temporary directory that is
//! removed on drop. The presets follow the layouts in the reference notes (§6): the DWC driver's
//! kernel variants, HiSilicon, Intel IIO, NVIDIA, Marvell, plus root ports and devices.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A temporary directory laid out like `/` (`sys/...`, `proc/...`).
#[derive(Debug)]
pub struct Tree {
    root: PathBuf,
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

impl Tree {
    /// An empty root with `sys/bus/event_source/devices` and `sys/bus/pci/devices`.
    pub fn new(tag: &str) -> Tree {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("pcie-pmu-fixture-{}-{n}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for d in [
            "sys/bus/event_source/devices",
            "sys/bus/pci/devices",
            "sys/devices",
            "proc",
        ] {
            fs::create_dir_all(root.join(d)).expect("create fixture directory");
        }
        Tree { root }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Write `rel` with exactly `content`, creating parent directories.
    pub fn raw(&self, rel: &str, content: &str) -> &Tree {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().expect("relative path has a parent")).expect("create parent");
        fs::write(&p, content).expect("write fixture file");
        self
    }

    /// Write a sysfs attribute: `content` plus the newline the kernel prints.
    pub fn attr(&self, rel: &str, content: &str) -> &Tree {
        self.raw(rel, &format!("{content}\n"))
    }

    /// A symlink at `rel` pointing to `target` (relative to the link's directory, as in sysfs).
    pub fn symlink(&self, rel: &str, target: &str) -> &Tree {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("create parent");
        std::os::unix::fs::symlink(target, &p).expect("create symlink");
        self
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
    ) -> &Tree {
        let dir = format!("sys/devices/{parent}/{name}");
        self.attr(&format!("{dir}/type"), &type_id.to_string());
        self.attr(&format!("{dir}/perf_event_mux_interval_ms"), "4");
        self.raw(&format!("{dir}/uevent"), "");
        fs::create_dir_all(self.root.join(&dir).join("power")).expect("power dir");
        if let Some(c) = cpumask {
            self.attr(&format!("{dir}/cpumask"), c);
        }
        for (f, v) in formats {
            self.attr(&format!("{dir}/format/{f}"), v);
        }
        for (e, v) in events {
            self.attr(&format!("{dir}/events/{e}"), v);
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
        self.symlink(&format!("sys/bus/event_source/devices/{name}"), &target);
        self
    }

    /// Write a file inside an existing PMU's directory (`identifier`, `bus`, `die0`, ...).
    pub fn pmu_attr(&self, name: &str, file: &str, content: &str) -> &Tree {
        self.attr(&format!("sys/bus/event_source/devices/{name}/{file}"), content)
    }

    /// A PCI function below `chain` (its upstream bridges, root port first), with attribute
    /// files and an optional driver.
    pub fn pci(&self, chain: &[&str], bdf: &str, attrs: &[(&str, &str)], driver: Option<&str>) -> &Tree {
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
            self.attr(&format!("{dir}/{k}"), v);
        }
        fs::create_dir_all(self.root.join(&dir)).expect("pci dir");
        if let Some(d) = driver {
            fs::create_dir_all(self.root.join(format!("sys/bus/pci/drivers/{d}"))).expect("driver dir");
            let up = "../".repeat(dir.split('/').count());
            self.symlink(&format!("{dir}/driver"), &format!("{up}sys/bus/pci/drivers/{d}"));
        }
        self.symlink(&format!("sys/bus/pci/devices/{bdf}"), &format!("../../../../{dir}"));
        self
    }

    /// A root port with the §6.1 attributes (vendor 0x1ded, Gen5 x16, NUMA node `numa`).
    pub fn root_port(&self, bdf: &str, numa: &str) -> &Tree {
        self.pci(
            &[],
            bdf,
            &[
                ("vendor", "0x1ded"),
                ("device", "0x8000"),
                ("class", "0x060400"),
                ("current_link_speed", "32.0 GT/s PCIe"),
                ("max_link_speed", "32.0 GT/s PCIe"),
                ("current_link_width", "16"),
                ("max_link_width", "16"),
                ("numa_node", numa),
            ],
            Some("pcieport"),
        )
    }

    /// An endpoint below a root port: a NIC that trained below its maximum (Gen4 x8 of Gen4 x16).
    pub fn nic_below(&self, root_port: &str, bdf: &str) -> &Tree {
        self.pci(
            &[root_port],
            bdf,
            &[
                ("vendor", "0x15b3"),
                ("device", "0x1017"),
                ("class", "0x020000"),
                ("current_link_speed", "16.0 GT/s PCIe"),
                ("max_link_speed", "16.0 GT/s PCIe"),
                ("current_link_width", "8"),
                ("max_link_width", "16"),
                ("numa_node", "0"),
            ],
            Some("mlx5_core"),
        )
    }

    /// `proc/cpuinfo` for an Intel family-6 CPU of `model`.
    pub fn intel_cpu(&self, model: u32) -> &Tree {
        self.raw(
            "proc/cpuinfo",
            &format!("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: {model}\nmodel name\t: Intel(R) Xeon(R)\n\n"),
        )
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
pub fn dwc_pmu(tree: &Tree, name: &str, type_id: u32, cpumask: &str, variant: DwcVariant) {
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
    );
    if variant == DwcVariant::V1 {
        // The v1 driver printed time events without a trailing newline.
        for (n, id) in DWC_GROUP0.iter().chain(payload.iter()) {
            tree.raw(
                &format!("sys/bus/event_source/devices/{name}/events/{n}"),
                &format!("eventid={id:#x}, type=0x1"),
            );
        }
    }
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
