//! The checks on a dual-socket server as root and as a user sees it: every kind, its severity,
//! the hop it names and its cost, pinned to pcie-model's figures (what `model bw` prints).

use pcie_health::fixture::{self, Func};
use pcie_health::{check, Finding, Kind, Options, Report, Severity, NEEDS_ROOT};
use pcie_model::{read_bound, stream, Generation, LinkConfig, LinkParams, Op, Picos};
use pcie_sysfs::{Bdf, LinkSetup, PortType};
use std::path::PathBuf;

struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        // A memory file system where there is one: the 10,000-function tree is 60,000 files.
        let shm = std::path::Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let root = base.join(format!("pcie-health-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Tree(root)
    }

    fn check(&self) -> Report {
        check(&self.0, &Options::default()).unwrap()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checks the tree watched (100 ms intervals for 500 ms) while every block device `stat`
/// counts `sectors_per_s` sectors read from `(read, written)` on. The counts follow the clock,
/// so the rates do not depend on how the writing thread is scheduled; each file is written
/// whole (renamed into place), as the kernel never shows one half written.
fn watched_while_reading(t: &Tree, stats: Vec<PathBuf>, (read, written): (u64, u64), sectors_per_s: f64) -> Report {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mover = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let sectors = read + (start.elapsed().as_secs_f64() * sectors_per_s) as u64;
                for stat in &stats {
                    let tmp = stat.with_extension("tmp");
                    fixture::write_block_stat(&tmp, sectors, written).unwrap();
                    std::fs::rename(&tmp, stat).unwrap();
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let sampling = pcie_health::Sampling {
        interval: std::time::Duration::from_millis(100),
        duration: std::time::Duration::from_millis(500),
    };
    let r = check(
        &t.0,
        &Options {
            sampling: Some(sampling),
            ..Options::default()
        },
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    mover.join().unwrap();
    r.unwrap()
}

fn bdf(s: &str) -> Bdf {
    s.parse().unwrap()
}

fn finding<'a>(r: &'a Report, kind: Kind, at: &str) -> &'a Finding {
    r.findings
        .iter()
        .find(|f| f.kind == kind && f.bdf == bdf(at))
        .unwrap_or_else(|| panic!("no {kind:?} on {at}: {:#?}", r.findings))
}

fn cfg(gen: Generation, lanes: u32, mps: u32, mrrs: u32, tag_bits: u32) -> LinkConfig {
    LinkConfig::new(&LinkParams {
        gen,
        lanes,
        mps,
        mrrs,
        tag_bits,
        ..LinkParams::default()
    })
    .unwrap()
}

fn writes(c: &LinkConfig) -> f64 {
    stream(c, Op::Wr, 4096, 0).unwrap().payload.0
}

/// 4 KiB reads: the link or 5/8/10-bit tags of MRRS-sized requests over pcie-bench's round
/// trip (546 ns for 64 B, 19 ns per further line).
fn reads(c: &LinkConfig) -> f64 {
    let request = c.mrrs.min(4096);
    let rtt = Picos::from_nanos(546.0 + 19.0 * (request / 64 - 1) as f64);
    read_bound(c, 4096, 0, rtt, None).unwrap().bound.0
}

fn pct(now: f64, best: f64) -> f64 {
    (best - now) / best * 100.0
}

fn assert_lost(f: &Finding, want: f64) {
    let got = f.lost_pct.expect("a priced finding");
    assert!((got - want).abs() < 1e-9, "{:?}: lost {got}, model {want}", f.kind);
}

#[test]
fn every_kind_on_a_dual_socket_server_with_the_models_cost() {
    let t = Tree::new("server");
    fixture::dual_socket_server(&t.0).unwrap();
    let r = t.check();
    use Generation::*;

    // The GPU behind the switch: its own link is fine, the switch's upstream link runs x8.
    let gpu = finding(&r, Kind::LinkWidthDowngraded, "0000:19:00.0");
    assert_eq!(
        (gpu.severity, gpu.limited_by),
        (Severity::Warning, Some(bdf("0000:17:00.0")))
    );
    assert_lost(
        gpu,
        pct(writes(&cfg(Gen4, 8, 256, 512, 8)), writes(&cfg(Gen4, 16, 256, 512, 8))),
    );
    assert!(
        gpu.message.starts_with(
            "0000:19:00.0 [10de:20b5] runs Gen4 x8 (limited by 0000:17:00.0, the switch's upstream link) where Gen4 x16 is possible: 4 KiB DMA writes 112 Gb/s of 223 (\u{2212}50 %)"
        ),
        "{}",
        gpu.message
    );
    let rec = r.functions.iter().find(|f| f.bdf == bdf("0000:19:00.0")).unwrap();
    let hops: Vec<String> = rec.path.iter().map(|h| format!("{} {}", h.bdf, h.role)).collect();
    assert_eq!(
        hops,
        ["0000:17:00.0 the switch's upstream link", "0000:19:00.0 its own link"]
    );
    assert_eq!(rec.limited_by, Some(bdf("0000:17:00.0")));

    // NVMe: MPS 128 where it and its root port allow 256; writes pay for it.
    let nvme = finding(&r, Kind::MpsBelowPath, "0000:31:00.0");
    assert_eq!(nvme.severity, Severity::Warning);
    assert_lost(
        nvme,
        pct(writes(&cfg(Gen4, 4, 128, 512, 8)), writes(&cfg(Gen4, 4, 256, 512, 8))),
    );
    let aer = finding(&r, Kind::AerCorrectable, "0000:31:00.0");
    assert_eq!((aer.severity, aer.lost_pct), (Severity::Info, None));
    assert!(
        aer.message.contains("5 correctable errors since boot (RxErr 5)"),
        "{}",
        aer.message
    );

    // The FPGA: MRRS 128 and 5-bit tags, priced on 4 KiB reads through the latency bound.
    let fpga_mrrs = finding(&r, Kind::MrrsSmall, "0000:99:00.0");
    assert_lost(
        fpga_mrrs,
        pct(reads(&cfg(Gen3, 16, 256, 128, 5)), reads(&cfg(Gen3, 16, 256, 4096, 5))),
    );
    let fpga_tags = finding(&r, Kind::TagsLimited, "0000:99:00.0");
    assert_lost(
        fpga_tags,
        pct(reads(&cfg(Gen3, 16, 256, 128, 5)), reads(&cfg(Gen3, 16, 256, 128, 8))),
    );
    assert_eq!(fpga_tags.severity, Severity::Warning);

    // The NIC: ASPM L1 on both ends of its link, not priced.
    let nic = finding(&r, Kind::AspmEnabled, "0000:4b:00.0");
    assert_eq!(
        (nic.severity, nic.lost_pct, nic.limited_by),
        (Severity::Info, None, Some(bdf("0000:4a:02.0")))
    );
    assert!(nic.message.contains("kernel policy default"), "{}", nic.message);

    // The idle GPU at Gen1: power saving, information only.
    let idle = finding(&r, Kind::LinkPowerSaving, "0000:b1:00.0");
    assert_eq!(idle.severity, Severity::Info);
    assert_lost(
        idle,
        pct(writes(&cfg(Gen1, 16, 256, 512, 8)), writes(&cfg(Gen4, 16, 256, 512, 8))),
    );
    assert!(idle
        .message
        .ends_with("likely power saving (D3hot, suspended): check again under load"));

    let numa = finding(&r, Kind::NumaUnknown, "0000:e7:01.0");
    assert_eq!(numa.severity, Severity::Warning);

    // The NVMe's DMAs go through the IOMMU; the FPGA's group is identity-mapped: nothing.
    let iommu = finding(&r, Kind::IommuTranslated, "0000:31:00.0");
    assert_eq!((iommu.severity, iommu.lost_pct), (Severity::Info, None));
    assert!(
        iommu
            .message
            .starts_with("0000:31:00.0 [144d:a80a]: its DMAs are translated by the IOMMU (group type DMA-FQ): "),
        "{}",
        iommu.message
    );
    let fpga = r.functions.iter().find(|f| f.bdf == bdf("0000:99:00.0")).unwrap();
    assert_eq!(fpga.iommu_group_type.as_deref(), Some("identity"));

    // Nothing else: the virtual device, the host bridge and healthy links have no finding.
    let kinds: Vec<(&str, String)> = r.findings.iter().map(|f| (f.kind.name(), f.bdf.to_string())).collect();
    assert_eq!(kinds.len(), 9, "{kinds:?}");
    assert!(
        r.findings.windows(2).all(|w| w[0].severity >= w[1].severity),
        "worst first"
    );
    assert!(r.needs_attention());
    assert_eq!(
        (r.links, r.numa_nodes.len(), r.aspm_policy.as_deref()),
        (12, 2, Some("default"))
    );
    assert!(r.skipped.is_empty());
}

#[test]
fn the_json_contract() {
    let t = Tree::new("json");
    fixture::dual_socket_server(&t.0).unwrap();
    let v = serde_json::to_value(t.check()).unwrap();
    let f = &v["findings"][0];
    let mut keys: Vec<&str> = f.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["bdf", "demand", "kind", "limited_by", "lost_pct", "message", "severity"]
    );
    // A GPU has no ceiling below its link: priced against the path alone.
    assert!(f["demand"].is_null());
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["kind"], "link_width_downgraded");
    assert_eq!(f["limited_by"], "0000:17:00.0");
    assert!(v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["bdf"] == "0000:19:00.0"));
    for f in v["findings"].as_array().unwrap() {
        let kind = f["kind"].as_str().unwrap();
        assert!(Kind::ALL.iter().any(|k| k.name() == kind), "{kind}");
        assert!(["info", "warning", "error"].contains(&f["severity"].as_str().unwrap()));
    }
}

#[test]
fn without_root_the_config_checks_are_skipped_and_named() {
    let t = Tree::new("user");
    fixture::dual_socket_server(&t.0).unwrap();
    fixture::as_user(&t.0).unwrap();
    let r = t.check();
    assert_eq!(r.skipped.len(), 1);
    let s = &r.skipped[0];
    assert_eq!(s.reason, NEEDS_ROOT);
    assert_eq!(
        s.checks,
        ["mps_below_path", "mrrs_small", "tags_limited", "aspm_enabled"]
    );
    assert!(s.functions.contains(&bdf("0000:31:00.0")) && !s.functions.contains(&bdf("0000:00:04.0")));
    // The link files are readable by everyone: the downgrade and the idle GPU are still found.
    finding(&r, Kind::LinkWidthDowngraded, "0000:19:00.0");
    finding(&r, Kind::LinkPowerSaving, "0000:b1:00.0");
    assert!(!r.findings.iter().any(|f| matches!(
        f.kind,
        Kind::MpsBelowPath | Kind::MrrsSmall | Kind::TagsLimited | Kind::AspmEnabled
    )));
    // Without the port types, the switch's internal bus is still told from its links.
    let rec = r.functions.iter().find(|f| f.bdf == bdf("0000:19:00.0")).unwrap();
    assert_eq!(
        rec.path.iter().map(|h| h.bdf.to_string()).collect::<Vec<_>>(),
        ["0000:17:00.0", "0000:19:00.0"]
    );
}

#[test]
fn width_loss_is_never_power_saving_and_uncorrectable_errors_are_errors() {
    let t = Tree::new("idle-narrow");
    let l = fixture::link(2.5, 8, 16.0, 16);
    fixture::root_port("0000:b0:02.0", 0, l, 0xb1).write(&t.0, &[]).unwrap();
    Func::new("0000:b1:00.0", 0x10de, 0x20b5, 0x030200, PortType::Endpoint, 0)
        .link(l)
        .attr("power_state", "D3hot")
        .attr("aer_dev_fatal", "DLP 1\nTOTAL_ERR_FATAL 1")
        .write(&t.0, &["0000:b0:02.0"])
        .unwrap();
    let r = t.check();
    assert_eq!(
        finding(&r, Kind::LinkWidthDowngraded, "0000:b1:00.0").severity,
        Severity::Warning
    );
    assert_eq!(
        finding(&r, Kind::AerUncorrectable, "0000:b1:00.0").severity,
        Severity::Error
    );
    assert!(!r.findings.iter().any(|f| f.kind == Kind::LinkPowerSaving));
    // One NUMA node: no NUMA findings.
    assert!(!r.findings.iter().any(|f| f.kind == Kind::NumaUnknown));
}

#[test]
fn a_virtual_machine_s_passed_through_device_is_priced_from_its_own_end() {
    // As the device machine's VM shows its H100 (data/measured/h100-80gb-hbm3-vm): the GPU on
    // the guest's root bus, no root port above it; and a NIC there whose link trained narrow.
    let t = Tree::new("vm");
    let gen5 = fixture::link(32.0, 16, 32.0, 16);
    Func::new("0000:00:06.0", 0x10de, 0x2330, 0x030200, PortType::Endpoint, -1)
        .link(gen5)
        .write(&t.0, &[])
        .unwrap();
    Func::new("0000:00:07.0", 0x15b3, 0x101d, 0x020000, PortType::Endpoint, -1)
        .link(fixture::link(16.0, 8, 16.0, 16))
        .write(&t.0, &[])
        .unwrap();
    let r = t.check();
    let gpu = r.functions.iter().find(|f| f.bdf == bdf("0000:00:06.0")).unwrap();
    assert_eq!(gpu.path.len(), 1);
    let hop = &gpu.path[0];
    assert_eq!(hop.upstream.bdf, None, "the port above is not in the tree");
    assert!(
        hop.role.starts_with("its own link; its port is not in this tree"),
        "{}",
        hop.role
    );
    let best = writes(&cfg(Generation::Gen5, 16, 256, 512, 8));
    assert_eq!(
        (gpu.limited_by, gpu.available_gbps, gpu.capable_gbps),
        (Some(bdf("0000:00:06.0")), Some(best), Some(best))
    );
    // Its MPS 256 of the 512 B it supports: the host's root port, unseen, may allow no more.
    let f = finding(&r, Kind::MpsBelowPath, "0000:00:06.0");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.contains("the port above it is not in this tree"),
        "{}",
        f.message
    );
    assert_lost(
        f,
        pct(
            writes(&cfg(Generation::Gen5, 16, 256, 512, 8)),
            writes(&cfg(Generation::Gen5, 16, 512, 512, 8)),
        ),
    );
    assert_eq!(
        r.findings.iter().filter(|f| f.bdf == bdf("0000:00:06.0")).count(),
        1,
        "{:#?}",
        r.findings
    );
    // Width lost on the device's own end is told and priced as on a host.
    let f = finding(&r, Kind::LinkWidthDowngraded, "0000:00:07.0");
    assert_eq!(f.limited_by, Some(bdf("0000:00:07.0")));
    assert_lost(
        f,
        pct(
            writes(&cfg(Generation::Gen4, 8, 256, 512, 8)),
            writes(&cfg(Generation::Gen4, 16, 256, 512, 8)),
        ),
    );
}

#[test]
fn garbage_links_loops_and_truncation_say_cannot_tell() {
    let t = Tree::new("garbage");
    let l = LinkSetup::at_max(16.0, 16);
    fixture::root_port("0000:00:01.0", 0, l, 0x01).write(&t.0, &[]).unwrap();
    let speeds = ["fast", "Unknown", "64.0 GT/s PCIe", "2.5 GT/s", "NaN GT/s"];
    let widths = ["0", "255", "16", "x", "4"];
    for (i, (s, w)) in speeds.iter().zip(widths).enumerate() {
        let b = format!("0000:01:00.{i}");
        let mut f = Func::new(&b, 1, 2, 0x020000, PortType::Endpoint, 0)
            .link(l)
            .attr("current_link_speed", s)
            .attr("current_link_width", w);
        if i == 1 {
            // Config space cut inside the PCIe capability, and a looping list.
            f = f.config(|c| c.mps(128, 128));
        }
        f.write(&t.0, &["0000:00:01.0"]).unwrap();
    }
    let dev = |i: u8| t.0.join(format!("sys/bus/pci/devices/0000:01:00.{i}/config"));
    let mut cut = std::fs::read(dev(1)).unwrap();
    cut.truncate(0x74);
    std::fs::write(dev(1), cut).unwrap();
    let mut looped = std::fs::read(dev(2)).unwrap();
    looped[0x41] = 0x40; // the power-management capability points to itself
    std::fs::write(dev(2), looped).unwrap();
    let r = t.check();
    let msgs: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.kind == Kind::LinkUnknown)
        .map(|f| f.message.as_str())
        .collect();
    assert!(
        msgs[0].contains("current_link_speed \"fast\": cannot tell the speed"),
        "{msgs:?}"
    );
    assert!(
        msgs[0].contains("current_link_width \"0\": cannot tell the width"),
        "{msgs:?}"
    );
    assert!(
        msgs[1].contains("\"Unknown\"") && msgs[1].contains("\"255\""),
        "{msgs:?}"
    );
    assert!(msgs[2].contains("loops back to offset 0x40"), "{msgs:?}");
    assert!(msgs[3].contains("\"x\""), "{msgs:?}");
    assert!(msgs[4].contains("\"NaN GT/s\""), "{msgs:?}");
    // The readable 64 GT/s end meets a 16 GT/s port: the link runs at the lower of the two.
    let f2 = r.functions.iter().find(|f| f.bdf == bdf("0000:01:00.2")).unwrap();
    assert_eq!(f2.path[0].current_gts, Some(16.0));
    let f3 = r.functions.iter().find(|f| f.bdf == bdf("0000:01:00.3")).unwrap();
    assert_eq!(
        (f3.path[0].current_gts, f3.path[0].current_width),
        (Some(2.5), Some(16))
    );
}

#[test]
fn an_empty_slots_port_is_quiet_and_an_occupied_ones_unknown_link_is_told() {
    let t = Tree::new("empty-slot");
    let down = |port: &str| {
        fixture::root_port(port, 0, LinkSetup::at_max(16.0, 16), 0x01)
            .attr("current_link_speed", "Unknown")
            .attr("current_link_width", "0")
    };
    down("0000:00:01.0").write(&t.0, &[]).unwrap();
    down("0000:00:02.0").write(&t.0, &[]).unwrap();
    Func::new("0000:02:00.0", 1, 2, 0x020000, PortType::Endpoint, 0)
        .link(LinkSetup::at_max(16.0, 16))
        .write(&t.0, &["0000:00:02.0"])
        .unwrap();
    let r = t.check();
    let unknown: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.kind == Kind::LinkUnknown)
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(unknown[0].starts_with("0000:00:02.0"), "{unknown:?}");
    let empty = r.functions.iter().find(|f| f.bdf == bdf("0000:00:01.0")).unwrap();
    assert!(
        !empty.cannot_tell.is_empty(),
        "the record still says what it could not read"
    );
}

#[test]
fn an_unreadable_file_is_named() {
    let t = Tree::new("unreadable");
    fixture::root_port("0000:00:01.0", 0, LinkSetup::at_max(8.0, 4), 0x01)
        .write(&t.0, &[])
        .unwrap();
    let f = t.0.join("sys/bus/pci/devices/0000:00:01.0/power_state");
    std::fs::remove_file(&f).unwrap();
    std::fs::create_dir(&f).unwrap();
    let e = check(&t.0, &Options::default()).unwrap_err().to_string();
    assert!(
        e.ends_with("0000:00:01.0/power_state: Is a directory (os error 21)"),
        "{e}"
    );
    let e = check(&t.0.join("missing"), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("missing: not a directory (a sysfs root: ROOT/sys/bus/pci/devices)"),
        "{e}"
    );
}

#[test]
fn ten_thousand_functions() {
    let t = Tree::new("wide");
    let attrs = [
        ("class", "0x020000"),
        ("current_link_speed", "8.0 GT/s PCIe"),
        ("current_link_width", "8"),
    ];
    for i in 0..10_000u32 {
        let b = format!("{:04x}:{:02x}:{:02x}.{}", i >> 13, (i >> 5) & 0xff, i & 0x1f, 0);
        pcie_sysfs::tree::write_pci_function(&t.0, &[], &b, &attrs, None).unwrap();
    }
    let r = t.check();
    assert_eq!((r.functions.len(), r.links), (10_000, 10_000));
    assert!(r.findings.is_empty());
}

#[test]
fn this_host_reads_without_error() {
    // A virtual machine without link files has nothing to check; a real host has links.
    let r = check(std::path::Path::new("/"), &Options::default()).unwrap();
    let any_link = std::fs::read_dir("/sys/bus/pci/devices")
        .map(|d| d.flatten().any(|e| e.path().join("current_link_speed").exists()))
        .unwrap_or(false);
    if !any_link {
        assert_eq!(r.links, 0);
    }
}

/// The payload a function's block devices and interfaces counted, and what its path carries:
/// totals on every check, rates and the `link_busy` finding when sampled.
#[test]
fn traffic_of_block_devices_and_interfaces_against_the_path() {
    let t = Tree::new("traffic");
    fixture::dual_socket_server(&t.0).unwrap();
    let stat = fixture::block_device(&t.0, "0000:31:00.0", "nvme0n1", 2_000, 1_000).unwrap();
    fixture::block_device(&t.0, "0000:31:00.0", "nvme0n2", 10, 0).unwrap();
    fixture::net_interface(&t.0, "0000:4b:00.0", "eth0", 1_000_000, 500).unwrap();
    let r = t.check();
    let func = |r: &Report, at: &str| r.functions.iter().find(|f| f.bdf == bdf(at)).unwrap().clone();
    let nvme = func(&r, "0000:31:00.0");
    let tr = nvme.traffic.clone().unwrap();
    assert_eq!(tr.devices, ["nvme0n1", "nvme0n2"]);
    assert_eq!((tr.upstream_bytes, tr.downstream_bytes), (2_010 * 512, 1_000 * 512));
    assert_eq!((tr.upstream_gbps, tr.downstream_peak_gbps), (None, None), "not sampled");
    // Upstream: 4 KiB DMA writes through the path as it runs (Gen4 x4, MPS 128); downstream:
    // 4 KiB DMA reads at its MRRS and tags.
    let bits = nvme.tags.unwrap().enabled_bits;
    let (up, down) = (tr.upstream_capacity_gbps.unwrap(), tr.downstream_capacity_gbps.unwrap());
    assert_eq!(Some(up), nvme.available_gbps);
    assert!(
        (up - writes(&cfg(Generation::Gen4, 4, 128, 512, bits))).abs() < 1e-9,
        "{up}"
    );
    assert!(
        (down - reads(&cfg(Generation::Gen4, 4, 128, 512, bits))).abs() < 1e-9,
        "{down}"
    );
    let nic = func(&r, "0000:4b:00.0").traffic.unwrap();
    assert_eq!(
        (nic.devices, nic.upstream_bytes, nic.downstream_bytes),
        (vec!["eth0".to_string()], 1_000_000, 500)
    );
    assert!(
        func(&r, "0000:19:00.0").traffic.is_none(),
        "no block device or interface"
    );
    assert!(!r.findings.iter().any(|f| f.kind == Kind::LinkBusy));

    // Sampled while the NVMe reads a TiB every 20 ms, far beyond its link; the NIC idle.
    let r = watched_while_reading(&t, vec![stat], (2_000, 1_000), (1u64 << 31) as f64 / 0.02);
    let busy = finding(&r, Kind::LinkBusy, "0000:31:00.0");
    assert_eq!(
        (busy.severity, busy.limited_by),
        (Severity::Info, Some(bdf("0000:31:00.0")))
    );
    assert!(
        busy.message.contains("(nvme0n1, nvme0n2)")
            && busy.message.contains("device to host")
            && busy.message.contains("Gen4 x4"),
        "{}",
        busy.message
    );
    let tr = func(&r, "0000:31:00.0").traffic.unwrap();
    assert!(
        tr.upstream_peak_gbps.unwrap() > up && tr.upstream_gbps.unwrap() > 0.0,
        "{tr:?}"
    );
    assert_eq!((tr.downstream_gbps, tr.downstream_peak_gbps), (Some(0.0), Some(0.0)));
    let nic = func(&r, "0000:4b:00.0").traffic.unwrap();
    assert_eq!((nic.upstream_gbps, nic.upstream_peak_gbps), (Some(0.0), Some(0.0)));
    assert_eq!(r.findings.iter().filter(|f| f.kind == Kind::LinkBusy).count(), 1);
}

#[test]
fn a_switch_uplink_busy_with_drives_none_of_which_fills_its_own_link() {
    // Four Gen4 x4 NVMe drives behind a switch whose upstream link is Gen4 x8: each reads
    // 40 Gb/s (71 % of its own link), together 160, above what the uplink carries.
    let t = Tree::new("shared");
    let x8 = fixture::link(16.0, 8, 16.0, 8);
    let x4 = fixture::link(16.0, 4, 16.0, 4);
    fixture::root_port("0000:c0:02.0", 0, x8, 0xc1)
        .buses(0xc1, 0xc6)
        .write(&t.0, &[])
        .unwrap();
    Func::new("0000:c1:00.0", 0x1000, 0xc010, 0x060400, PortType::UpstreamPort, 0)
        .link(x8)
        .buses(0xc2, 0xc6)
        .write(&t.0, &["0000:c0:02.0"])
        .unwrap();
    let mut stats = Vec::new();
    for k in 0..4u8 {
        let (port, drive) = (format!("0000:c2:0{k}.0"), format!("0000:c{}:00.0", 3 + k));
        Func::new(&port, 0x1000, 0xc010, 0x060400, PortType::DownstreamPort, 0)
            .link(x4)
            .buses(0xc3 + k, 0xc3 + k)
            .write(&t.0, &["0000:c0:02.0", "0000:c1:00.0"])
            .unwrap();
        Func::new(&drive, 0x144d, 0xa80a, 0x010802, PortType::Endpoint, 0)
            .link(x4)
            .driver("nvme")
            .write(&t.0, &["0000:c0:02.0", "0000:c1:00.0", &port])
            .unwrap();
        stats.push(fixture::block_device(&t.0, &drive, &format!("nvme{k}n1"), 0, 0).unwrap());
    }
    let r = watched_while_reading(&t, stats, (0, 0), 40e9 / 8.0 / 512.0);
    let busy = finding(&r, Kind::LinkBusy, "0000:c1:00.0");
    assert_eq!(busy.limited_by, Some(bdf("0000:c1:00.0")));
    let uplink = writes(&cfg(Generation::Gen4, 8, 256, 512, 8));
    for part in [
        "the link above 0000:c1:00.0 [1000:c010] (the switch's upstream link) is shared by 4 functions below 0000:c0:02.0 (nvme0n1, nvme1n1, nvme2n1, nvme3n1): together ",
        "Gb/s device to host at their busiest interval",
        &format!("4 KiB DMA writes through it ({uplink:.1} Gb/s at Gen4 x8)"),
    ] {
        assert!(busy.message.contains(part), "{part}\n{}", busy.message);
    }
    // One finding for the uplink, none for the idle direction or the switch's inner ports.
    let shared: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.kind == Kind::LinkBusy && f.message.starts_with("the link above"))
        .collect();
    assert_eq!(shared.len(), 1, "{shared:#?}");
}

/// A dual-port NIC at Gen2 x1 of its x2 below a Gen3 x4 root port, MPS 128 of 256, each port
/// up at `mbps` (`None`: no interface speed, as in an lspci dump; its ids, an X710's, name no
/// 1 GbE part), and a 100 GbE NIC at x8 of x16 whose ports run at 100 Gb/s.
fn nics(tag: &str, mbps: Option<&str>) -> Report {
    let t = Tree::new(tag);
    fixture::root_port("0000:00:03.0", 0, fixture::link(8.0, 4, 8.0, 4), 2)
        .write(&t.0, &[])
        .unwrap();
    for (i, f) in ["0000:02:00.0", "0000:02:00.1"].into_iter().enumerate() {
        let mut nic = Func::new(f, 0x8086, 0x1572, 0x020000, PortType::Endpoint, 0)
            .link(fixture::link(5.0, 1, 5.0, 2))
            .config(|c| c.mps(256, 128))
            .driver("i40e");
        if let Some(s) = mbps {
            nic = nic.attr(&format!("net/eno{i}/speed"), s);
        }
        nic.write(&t.0, &["0000:00:03.0"]).unwrap();
    }
    fixture::root_port("0000:00:02.0", 0, fixture::link(8.0, 8, 8.0, 16), 4)
        .write(&t.0, &[])
        .unwrap();
    Func::new("0000:04:00.0", 0x15b3, 0x1017, 0x020000, PortType::Endpoint, 0)
        .link(fixture::link(8.0, 8, 8.0, 16))
        .attr("net/ens1/speed", "100000")
        .driver("mlx5_core")
        .write(&t.0, &["0000:00:02.0"])
        .unwrap();
    t.check()
}

#[test]
fn a_loss_the_devices_line_rate_cannot_feel_is_information() {
    // Without the line rate the path alone prices: x1 of x2 halves 4 KiB DMA writes.
    let r = nics("demand-unknown", None);
    let w = finding(&r, Kind::LinkWidthDowngraded, "0000:02:00.0");
    assert_eq!(w.severity, Severity::Warning, "{}", w.message);
    assert_lost(
        w,
        pct(
            writes(&cfg(Generation::Gen2, 1, 128, 512, 8)),
            writes(&cfg(Generation::Gen2, 2, 128, 512, 8)),
        ),
    );
    let mps = finding(&r, Kind::MpsBelowPath, "0000:02:00.0");
    assert!(mps.lost_pct.unwrap() > 0.0, "{}", mps.message);
    let rec = r.functions.iter().find(|f| f.bdf == bdf("0000:02:00.0")).unwrap();
    assert_eq!(rec.demand_gbps, None);

    // Both ports up at 1 Gb/s: 2 Gb/s fit Gen2 x1 (more than 3 Gb/s of 4 KiB writes), so
    // neither the width nor MPS 128 costs the NIC anything it can move.
    let r = nics("demand-known", Some("1000"));
    let rec = r.functions.iter().find(|f| f.bdf == bdf("0000:02:00.0")).unwrap();
    assert_eq!(rec.demand_gbps, Some(2.0));
    assert!(rec.available_gbps.unwrap() > 2.0);
    for kind in [Kind::LinkWidthDowngraded, Kind::MpsBelowPath] {
        let f = finding(&r, kind, "0000:02:00.0");
        assert_eq!((f.severity, f.lost_pct), (Severity::Info, Some(0.0)), "{}", f.message);
        assert!(
            f.message
                .contains("line rate is 2.00 Gb/s, priced against that: its traffic cannot feel this"),
            "{}",
            f.message
        );
    }
    // The 100 GbE NIC at Gen3 x8 (about 60 Gb/s) feels its lost width, priced against 100 Gb/s.
    let big = finding(&r, Kind::LinkWidthDowngraded, "0000:04:00.0");
    assert_eq!(big.severity, Severity::Warning, "{}", big.message);
    let x8 = writes(&cfg(Generation::Gen3, 8, 256, 512, 8));
    assert_lost(big, pct(x8, 100.0));
    assert!(big.message.contains("line rate is 100 Gb/s"), "{}", big.message);
    assert!(r
        .findings
        .iter()
        .all(|f| f.severity < Severity::Warning || f.bdf != bdf("0000:02:00.0")));

    // An interface that is down (speed -1): the demand is not known, the path prices.
    let r = nics("demand-down", Some("-1"));
    assert_eq!(
        finding(&r, Kind::LinkWidthDowngraded, "0000:02:00.0").severity,
        Severity::Warning
    );
}

/// Below one Gen3 x4 root port each: an AHCI controller at Gen2 x1 of x2 with MPS 128 of 256,
/// an xHCI controller at Gen1 x1 of Gen2 x1, an HD Audio controller at Gen1 x1 of Gen2 x1.
/// `ports`: lay out the AHCI's ATA links and the xHCI's root hubs as a live host shows them.
fn controllers(tag: &str, ports: bool) -> Report {
    let t = Tree::new(tag);
    let sata = [
        ("ata1/link1/ata_link/link1/sata_spd", "3.0 Gbps"),
        ("ata2/link2/ata_link/link2/sata_spd", "<unknown>"),
    ];
    let usb = [
        ("usb1/speed", "480"),
        ("usb1/maxchild", "1"),
        ("usb2/speed", "5000"),
        ("usb2/maxchild", "1"),
    ];
    let devices = [
        (
            "0000:00:1c.0",
            "0000:02:00.0",
            (0x1b21, 0x0612, 0x010601),
            fixture::link(5.0, 1, 5.0, 2),
            &sata[..],
        ),
        (
            "0000:00:1c.1",
            "0000:03:00.0",
            (0x1912, 0x0015, 0x0c0330),
            fixture::link(2.5, 1, 5.0, 1),
            &usb[..],
        ),
        (
            "0000:00:1c.2",
            "0000:04:00.0",
            (0x8086, 0x0c0c, 0x040300),
            fixture::link(2.5, 1, 5.0, 1),
            &[],
        ),
    ];
    for (i, (port, at, (vendor, device, class), link, files)) in devices.into_iter().enumerate() {
        fixture::root_port(port, 0, fixture::link(8.0, 4, 8.0, 4), 2 + i as u8)
            .write(&t.0, &[])
            .unwrap();
        let mut f = Func::new(at, vendor, device, class, PortType::Endpoint, 0)
            .link(link)
            .config(|c| c.mps(256, 128));
        for (name, value) in files.iter().filter(|_| ports) {
            f = f.attr(name, value);
        }
        f.write(&t.0, &[port]).unwrap();
    }
    t.check()
}

#[test]
fn controllers_are_priced_against_what_their_ports_carry() {
    use pcie_health::DemandSource;
    let gen2x1 = writes(&cfg(Generation::Gen2, 1, 128, 512, 8));
    let gen2x2 = writes(&cfg(Generation::Gen2, 2, 128, 512, 8));
    // As a dump shows them (no ATA links, no root hubs): an AHCI controller is assumed to have
    // 6 SATA III ports (28.8 Gb/s of data), which feel every lost lane.
    let r = controllers("demand-class", false);
    let ahci = finding(&r, Kind::LinkWidthDowngraded, "0000:02:00.0");
    assert_eq!(ahci.severity, Severity::Warning, "{}", ahci.message);
    assert_lost(ahci, pct(gen2x1, gen2x2));
    let d = ahci.demand.as_ref().unwrap();
    assert_eq!(d.source, DemandSource::Assumed);
    assert!((d.gbps - 28.8).abs() < 1e-9, "{d:?}");
    assert!(d.basis.contains("assumed 6 at SATA III"), "{}", d.basis);
    // The xHCI is assumed to reach 20 Gb/s: Gen1 x1 halves what it could use.
    let xhci = finding(&r, Kind::LinkSpeedDowngraded, "0000:03:00.0");
    assert_eq!(xhci.severity, Severity::Warning, "{}", xhci.message);
    assert_eq!(xhci.demand.as_ref().unwrap().source, DemandSource::Assumed);
    // HD Audio moves at most 48 Mb/s: its link's speed is information, whatever the host.
    let audio = finding(&r, Kind::LinkSpeedDowngraded, "0000:04:00.0");
    assert_eq!(
        (audio.severity, audio.lost_pct),
        (Severity::Info, Some(0.0)),
        "{}",
        audio.message
    );
    assert!(
        audio.message.contains(
            "an HD Audio controller's codec link (48 Mb/s) is 0.048 Gb/s, priced against that: its traffic cannot feel this"
        ),
        "{}",
        audio.message
    );
    let mps = finding(&r, Kind::MpsBelowPath, "0000:04:00.0");
    assert_eq!(
        (mps.severity, mps.lost_pct),
        (Severity::Info, Some(0.0)),
        "{}",
        mps.message
    );

    // As the host shows them: one disk linked at 3.0 Gb/s (2.4 Gb/s of data, less than Gen2
    // x1 carries): the lost lane and MPS 128 cost the AHCI nothing its disk can move.
    let r = controllers("demand-host", true);
    let rec = r.functions.iter().find(|f| f.bdf == bdf("0000:02:00.0")).unwrap();
    assert_eq!(rec.demand_gbps, Some(2.4));
    assert_eq!(rec.demand.as_ref().unwrap().source, DemandSource::SataLinks);
    for kind in [Kind::LinkWidthDowngraded, Kind::MpsBelowPath] {
        let f = finding(&r, kind, "0000:02:00.0");
        assert_eq!((f.severity, f.lost_pct), (Severity::Info, Some(0.0)), "{}", f.message);
        assert!(
            f.message.contains(
                "its 1 linked SATA port's data rate (3.0 Gb/s, 8b/10b) is 2.40 Gb/s, priced against that: its traffic cannot feel this"
            ),
            "{}",
            f.message
        );
    }
    // The xHCI's root hubs: one USB 2.0 port and one 5 Gb/s port (4 Gb/s of data, 8b/10b),
    // 4.48 Gb/s, more than Gen2 x1 carries: the speed drop is felt, priced against the path.
    let xhci = finding(&r, Kind::LinkSpeedDowngraded, "0000:03:00.0");
    assert_eq!(xhci.severity, Severity::Warning, "{}", xhci.message);
    let d = xhci.demand.as_ref().unwrap();
    assert_eq!(d.source, DemandSource::UsbRootHubs);
    assert!((d.gbps - 4.48).abs() < 1e-9, "{d:?}");
    assert_lost(
        xhci,
        pct(writes(&cfg(Generation::Gen1, 1, 128, 512, 8)), gen2x1.min(d.gbps)),
    );
    let json = serde_json::to_value(xhci).unwrap();
    assert_eq!(json["demand"]["source"], "usb_root_hubs");
    assert_eq!(
        json["demand"]["basis"],
        "its USB root hubs' ports' data rate (1 x 480 Mb/s + 1 x 5000 Mb/s)"
    );
}
