//! Discovery against fixture sysfs trees: one per family and per DWC kernel variant.

use pcie_pmu::fixture::{self, DwcVariant, Tree};
use pcie_pmu::{Family, PcieView, PmuError, PmuMetric, System};

fn view<'a>(views: &'a [PcieView], name: &str) -> &'a PcieView {
    views
        .iter()
        .find(|v| v.pmu.name == name)
        .unwrap_or_else(|| panic!("{name} not found"))
}

fn event<'a>(v: &'a PcieView, name: &str) -> &'a pcie_pmu::PmuEvent {
    v.events
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name} not in {}", v.pmu.name))
}

/// §6.1: two root ports, 16-bit BDF and SBDF names, a NIC below the first.
fn dwc_tree(variant: DwcVariant) -> Tree {
    let t = Tree::new("dwc");
    fixture::common_pmus(&t);
    let (a, b) = match variant {
        DwcVariant::V1 => ("pcie_bdf_300300", "pcie_bdf_1300300"),
        DwcVariant::EarlyUpstream => ("dwc_rootport_3018", "dwc_rootport_b018"),
        _ => ("dwc_rootport_3018", "dwc_rootport_13018"),
    };
    fixture::dwc_pmu(&t, a, 27, "0", variant);
    fixture::dwc_pmu(&t, b, 28, "64", variant);
    t.root_port("0000:30:03.0", "0");
    t.nic_below("0000:30:03.0", "0000:31:00.0");
    t.root_port("0001:30:03.0", "1");
    t.root_port("0000:b0:03.0", "1");
    t
}

#[test]
fn dwc_upstream_sbdf_lower_case() {
    let t = dwc_tree(DwcVariant::Upstream);
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    assert_eq!(views.len(), 2, "software/cpu/msr are not PCIe PMUs");
    let v = view(&views, "dwc_rootport_3018");
    assert_eq!(v.family.family, Family::Dwc);
    assert_eq!(v.family.variant, vec!["dwc_rootport", "bdf16", "lower_case"]);
    assert_eq!((v.pmu.type_id, v.pmu.cpumask.clone()), (27, vec![0]));
    assert_eq!(v.pmu.events.len(), 43);
    // Root port and the NIC below it, with link state and NUMA node.
    assert_eq!(v.root_ports.len(), 1);
    let rp = &v.root_ports[0];
    assert_eq!(rp.bdf.to_string(), "0000:30:03.0");
    let port = rp.port.as_ref().unwrap();
    assert_eq!(
        (port.vendor, port.device, port.class),
        (Some(0x1ded), Some(0x8000), Some(0x060400))
    );
    assert_eq!(port.driver.as_deref(), Some("pcieport"));
    assert_eq!(port.link_summary().unwrap(), "32.0 GT/s PCIe x16");
    assert_eq!(rp.devices.len(), 1);
    let nic = &rp.devices[0];
    assert_eq!(nic.bdf.to_string(), "0000:31:00.0");
    assert_eq!(nic.driver.as_deref(), Some("mlx5_core"));
    assert_eq!(
        nic.link_summary().unwrap(),
        "16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)"
    );
    assert_eq!(nic.numa_node, Some(0));
    // Payload in bytes; LTSSM residency; lane events need lane=.
    let rx = event(v, "rx_pcie_tlp_data_payload");
    assert_eq!(
        (rx.metric.map(PmuMetric::as_str), rx.bytes_per_count),
        (Some("rx_bytes"), Some(1.0))
    );
    assert_eq!(
        event(v, "tx_pcie_tlp_data_payload").metric.map(PmuMetric::as_str),
        Some("tx_bytes")
    );
    assert_eq!(event(v, "L1_2").metric.map(PmuMetric::as_str), Some("ltssm_residency"));
    assert_eq!(event(v, "one_cycle").metric.map(PmuMetric::as_str), Some("cycles"));
    let lane = event(v, "rx_memory_read");
    assert_eq!(
        (lane.metric.map(PmuMetric::as_str), lane.required_params.clone()),
        (Some("rx_tlps"), vec!["lane".to_string()])
    );
    assert_eq!(
        event(v, "rx_nullified_tlp").metric.map(PmuMetric::as_str),
        Some("errors")
    );
    assert!(
        v.events.iter().all(|e| e.metric.is_some()),
        "every DWC event is in the catalog"
    );
    // The SBDF-named PMU maps to domain 1.
    let s = view(&views, "dwc_rootport_13018");
    assert_eq!(s.family.variant, vec!["dwc_rootport", "sbdf", "lower_case"]);
    assert_eq!(s.root_ports[0].bdf.to_string(), "0001:30:03.0");
    assert_eq!(s.root_ports[0].port.as_ref().unwrap().numa_node, Some(1));
    assert_eq!(s.pmu.cpumask, vec![64]);
    // Configs: the documented worked values.
    assert_eq!(
        sys.resolve("dwc_rootport_3018/rx_pcie_tlp_data_payload/")
            .unwrap()
            .config[0],
        0x21
    );
    assert_eq!(
        sys.resolve("dwc_rootport_3018/Rx_PCIe_TLP_Data_Payload/")
            .unwrap()
            .config[0],
        0x21
    );
    assert_eq!(
        sys.resolve("dwc_rootport_3018/tx_pcie_tlp_data_payload/")
            .unwrap()
            .config[0],
        0x20
    );
    let r = sys.resolve("dwc_rootport_3018/rx_memory_read,lane=4/").unwrap();
    assert_eq!((r.config, r.type_id), ([0x41070c, 0, 0, 0], 27));
    assert_eq!(r.event.as_deref(), Some("rx_memory_read"));
    // The raw term syntax gives the same config.
    let raw = sys.resolve("dwc_rootport_3018/eventid=0x70c,type=1,lane=4/").unwrap();
    assert_eq!(raw.config[0], 0x41070c);
    assert_eq!(
        sys.resolve("dwc_rootport_3018/config=0x41070c/").unwrap().config[0],
        0x41070c
    );
}

#[test]
fn dwc_early_upstream_mixed_case_and_typos() {
    let t = dwc_tree(DwcVariant::EarlyUpstream);
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    let v = view(&views, "dwc_rootport_3018");
    assert_eq!(v.family.variant, vec!["dwc_rootport", "bdf16", "mixed_case"]);
    let rx = event(v, "Rx_PCIe_TLP_Data_Payload");
    assert_eq!(
        (rx.metric.map(PmuMetric::as_str), rx.bytes_per_count),
        (Some("rx_bytes"), Some(1.0))
    );
    assert_eq!(
        event(v, "rx_nulified_tlp").metric.map(PmuMetric::as_str),
        Some("errors")
    );
    assert_eq!(
        event(v, "rx_duplicate_tl").metric.map(PmuMetric::as_str),
        Some("errors")
    );
    // Lower-case spelling resolves to the mixed-case file.
    let r = sys.resolve("dwc_rootport_3018/rx_pcie_tlp_data_payload/").unwrap();
    assert_eq!(
        (r.config[0], r.event.as_deref()),
        (0x21, Some("Rx_PCIe_TLP_Data_Payload"))
    );
    let b = view(&views, "dwc_rootport_b018");
    assert_eq!(b.root_ports[0].bdf.to_string(), "0000:b0:03.0");
}

#[test]
fn dwc_v1_pcie_bdf_counts_16_byte_units() {
    let t = dwc_tree(DwcVariant::V1);
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    let v = view(&views, "pcie_bdf_300300");
    assert_eq!(v.family.variant, vec!["pcie_bdf", "bdf_v1", "mixed_case"]);
    assert_eq!(v.root_ports[0].bdf.to_string(), "0000:30:03.0");
    assert_eq!(v.root_ports[0].devices.len(), 1);
    let rx = event(v, "Rx_PCIe_TLP_Data_Payload");
    assert_eq!(
        (rx.metric.map(PmuMetric::as_str), rx.bytes_per_count),
        (Some("rx_bytes"), Some(16.0))
    );
    assert!(rx.note.as_deref().unwrap().contains("16-byte"));
    // `eventid=0x21, type=0x1` without newline: type 1 is time-based in v1.
    assert_eq!(rx.encoding, "eventid=0x21, type=0x1");
    assert_eq!(
        sys.resolve("pcie_bdf_300300/Rx_PCIe_TLP_Data_Payload/").unwrap().config[0],
        0x10021
    );
    // Lane events carry a default lane=0 and need no parameter; a given lane overrides it.
    assert_eq!(
        sys.resolve("pcie_bdf_300300/rx_memory_read/").unwrap().config[0],
        0x2070c
    );
    assert_eq!(
        sys.resolve("pcie_bdf_300300/rx_memory_read,lane=3/").unwrap().config[0],
        0x32070c
    );
    assert_eq!(
        view(&views, "pcie_bdf_1300300").root_ports[0].bdf.to_string(),
        "0001:30:03.0"
    );
}

#[test]
fn dwc_newest_swapped_ids_are_read_from_sysfs() {
    let t = dwc_tree(DwcVariant::Newest);
    let sys = System::discover(t.path()).unwrap();
    assert_eq!(sys.resolve("dwc_rootport_3018/L1_AUX/").unwrap().config[0], 0x8);
    assert_eq!(sys.resolve("dwc_rootport_3018/TX_RX_L0S/").unwrap().config[0], 0x9);
    let old = dwc_tree(DwcVariant::Upstream);
    let sys = System::discover(old.path()).unwrap();
    assert_eq!(sys.resolve("dwc_rootport_3018/L1_AUX/").unwrap().config[0], 0x9);
}

#[test]
fn hisilicon_flux_time_pairs_and_filters() {
    let t = Tree::new("hisi");
    fixture::hisi_pmu(&t, "hisi_pcie0_core0", 31, "0x30", None);
    t.root_port("0000:30:00.0", "0");
    t.root_port("0000:30:04.0", "0");
    t.nic_below("0000:30:04.0", "0000:39:00.0");
    t.root_port("0000:b0:00.0", "1");
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    let v = view(&views, "hisi_pcie0_core0");
    assert_eq!(v.family.family, Family::HisiPcie);
    assert_eq!(v.pmu.attrs.get("identifier").map(String::as_str), Some("0x30"));
    let ports: Vec<String> = v.root_ports.iter().map(|r| r.bdf.to_string()).collect();
    assert_eq!(ports, vec!["0000:30:00.0", "0000:30:04.0"]);
    assert_eq!(v.root_ports[1].devices[0].bdf.to_string(), "0000:39:00.0");
    let flux = event(v, "rx_mwr_flux");
    let time = event(v, "rx_mwr_time");
    assert_eq!(
        (flux.metric.map(PmuMetric::as_str), flux.unit.as_deref()),
        (Some("rx_bytes"), Some("flux"))
    );
    assert_eq!(flux.group, time.group);
    assert!(flux.group.is_some());
    assert_eq!(event(v, "rx_mwr_latency").group, event(v, "rx_mwr_cnt").group);
    // §6.2: rx_mrd_flux, all ports, payload only.
    let r = sys
        .resolve("hisi_pcie0_core0/rx_mrd_flux,port=0xffff,len_mode=0x1/")
        .unwrap();
    assert_eq!(r.config, [0x804, 0x400, 0xffff, 0]);
    let r = sys.resolve("hisi_pcie0_core0/rx_mrd_flux,bdf=0x3900/").unwrap();
    assert_eq!(r.config[2], 0x3900 << 16);
    // Too wide for its field.
    let e = sys.resolve("hisi_pcie0_core0/rx_mrd_flux,port=0x10000/").unwrap_err();
    assert!(e.to_string().contains("port=0x10000 does not fit config2:0-15"), "{e}");
}

#[test]
fn hisilicon_bdf_range_selects_ports() {
    let t = Tree::new("hisi-range");
    fixture::hisi_pmu(&t, "hisi_pcie1_core2", 32, "0x30", Some(("0x3000", "0x3007")));
    t.root_port("0000:30:00.0", "0");
    t.root_port("0000:30:04.0", "0");
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    let v = view(&views, "hisi_pcie1_core2");
    assert!(v.family.variant.contains(&"bdf_range"));
    let ports: Vec<String> = v.root_ports.iter().map(|r| r.bdf.to_string()).collect();
    assert_eq!(ports, vec!["0000:30:00.0"]);
}

#[test]
fn intel_iio_scale_depends_on_cpu_model() {
    for (model, kernel_scale, bpc, warn) in [
        (85, "3.814697266e-6", 4.0, false),    // SKX: 4 B/count, kernel right
        (143, "3.814697266e-6", 32.0, true),   // SPR, pre-fix kernel: 8x low
        (143, "3.0517578125e-5", 32.0, false), // SPR, fixed kernel
        (106, "3.814697266e-6", 32.0, true),   // ICX
    ] {
        let t = Tree::new("iio");
        t.intel_cpu(model);
        fixture::intel_iio_pmus(&t, 0, 40, kernel_scale, &["0000:00", "0000:80"]);
        t.root_port("0000:00:01.0", "0");
        t.root_port("0000:80:02.0", "1");
        let sys = System::discover(t.path()).unwrap();
        let views = sys.pcie_pmus().unwrap();
        let v = view(&views, "uncore_iio_free_running_0");
        assert_eq!(v.family.family, Family::IntelIioFreeRunning);
        assert_eq!(v.pmu.cpumask, vec![0, 28]);
        let e = event(v, "bw_in_port0");
        assert_eq!(e.kernel_unit.as_deref(), Some("MiB"));
        assert_eq!(e.kernel_scale, Some(kernel_scale.parse().unwrap()));
        assert_eq!(
            (e.metric.map(PmuMetric::as_str), e.bytes_per_count),
            (Some("rx_bytes"), Some(bpc)),
            "model {model}"
        );
        assert_eq!(
            e.note.as_deref().is_some_and(|n| n.contains("under-report")),
            warn,
            "model {model}"
        );
        let ports: Vec<String> = v.root_ports.iter().map(|r| r.bdf.to_string()).collect();
        assert_eq!(ports, vec!["0000:00:01.0", "0000:80:02.0"]);
        let r = sys.resolve("uncore_iio_free_running_0/bw_in_port3/").unwrap();
        assert_eq!((r.config[0], r.unit.as_deref()), (0x23ff, Some("MiB")));
        // Programmable IIO: catalog-defined perf-iostat events resolve through the format terms.
        let p = view(&views, "uncore_iio_0");
        let w = event(p, "inbound_write");
        assert_eq!(
            (w.origin, w.bytes_per_count),
            (pcie_pmu::catalog::Origin::Catalog, Some(4.0))
        );
        let r = sys
            .resolve("uncore_iio_0/event=0x83,umask=0x1,ch_mask=0xf,fc_mask=0x7/")
            .unwrap();
        assert_eq!(r.config[0], 0x83 | 0x1 << 8 | 0xf << 36 | 0x7 << 48);
    }
}

#[test]
fn nvidia_and_marvell() {
    let t = Tree::new("nv-mrvl");
    fixture::nvidia_grace_pmu(&t, 0, 50);
    fixture::marvell_pmu(&t, "mrvl_pcie_rc_pmu_8e0000000000", 51);
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    let nv = view(&views, "nvidia_pcie_pmu_0");
    assert_eq!(
        (nv.family.family, nv.family.variant.clone()),
        (Family::NvidiaPcie, vec!["grace"])
    );
    assert_eq!(nv.pmu.attrs.get("associated_cpus").map(String::as_str), Some("0-71"));
    assert_eq!(
        event(nv, "wr_bytes_loc").metric.map(PmuMetric::as_str),
        Some("rx_bytes")
    );
    assert_eq!(
        event(nv, "rd_bytes_rem").metric.map(PmuMetric::as_str),
        Some("tx_bytes")
    );
    assert_eq!(event(nv, "cycles").metric.map(PmuMetric::as_str), Some("cycles"));
    assert!(nv.root_ports.is_empty());
    let r = sys.resolve("nvidia_pcie_pmu_0/event=0x0,root_port=0x3/").unwrap();
    assert_eq!(r.config, [0, 3, 0, 0]);
    assert_eq!(sys.resolve("nvidia_pcie_pmu_0/cycles/").unwrap().config[0], 1 << 32);
    let m = view(&views, "mrvl_pcie_rc_pmu_8e0000000000");
    assert_eq!(m.family.family, Family::MarvellPem);
    let d = event(m, "ib_tlp_dwords_pr");
    assert_eq!(
        (d.metric.map(PmuMetric::as_str), d.bytes_per_count),
        (Some("rx_bytes"), Some(4.0))
    );
    assert_eq!(
        event(m, "ob_tlp_dwords_pr_partid").metric.map(PmuMetric::as_str),
        Some("tx_bytes")
    );
    assert_eq!(
        event(m, "ats_trans").metric,
        None,
        "not in the catalog: listed without a metric"
    );
    let e = sys.resolve("mrvl_pcie_rc_pmu_8e0000000000/event=0x40/").unwrap_err();
    assert!(e.to_string().contains("does not fit config:0-5"), "{e}");
}

#[test]
fn generic_syntax_works_for_software_and_msr() {
    let t = Tree::new("generic");
    fixture::common_pmus(&t);
    let sys = System::discover(t.path()).unwrap();
    assert!(sys.pcie_pmus().unwrap().is_empty());
    let r = sys.resolve("msr/aperf/").unwrap();
    assert_eq!((r.type_id, r.config[0]), (9, 1));
    assert_eq!(sys.resolve("software/config=0x3/").unwrap().config[0], 3);
    assert_eq!(sys.resolve("cpu/event=0x3c,edge/").unwrap().config[0], 0x3c | 1 << 18);
    assert_eq!(sys.resolve("cpu/cpu-cycles,umask=2/").unwrap().config[0], 0x23c);
}

#[test]
fn errors_name_what_is_wrong_and_what_exists() {
    let t = dwc_tree(DwcVariant::Upstream);
    let sys = System::discover(t.path()).unwrap();
    let e = sys.resolve("dwc_rootport_9999/rx_pcie_tlp_data_payload/").unwrap_err();
    assert!(matches!(e, PmuError::UnknownPmu { .. }) && e.is_input());
    let m = e.to_string();
    assert!(
        m.starts_with(
            "unknown PMU \"dwc_rootport_9999\"; PMUs present: cpu, dwc_rootport_13018, dwc_rootport_3018, msr"
        ),
        "{m}"
    );
    let e = sys.resolve("dwc_rootport_3018/rx_payload/").unwrap_err();
    let m = e.to_string();
    assert!(
        m.contains("has no event or format term \"rx_payload\"")
            && m.contains("rx_pcie_tlp_data_payload")
            && m.contains("lane="),
        "{m}"
    );
    let e = sys.resolve("dwc_rootport_3018/rx_memory_read/").unwrap_err();
    assert_eq!(
        e.to_string(),
        "dwc_rootport_3018/rx_memory_read/: missing lane=N (required by event rx_memory_read)"
    );
    let e = sys.resolve("dwc_rootport_3018/rx_memory_read,lane=256/").unwrap_err();
    assert!(e.to_string().contains("lane=0x100 does not fit config:20-27"), "{e}");
    let e = sys.resolve("dwc_rootport_3018/rx_memory_read,lane=x/").unwrap_err();
    assert!(e.to_string().contains("lane=x: not a number"), "{e}");
    let e = sys.resolve("dwc_rootport_3018/L0,L1/").unwrap_err();
    assert!(e.to_string().contains("two events"), "{e}");
    // Roots that are not sysfs trees.
    let missing = t.path().join("nope");
    let e = System::discover(&missing).unwrap_err();
    assert_eq!(e, PmuError::NoRoot(missing.clone()));
    assert!(e.to_string().contains("no such directory") && e.is_input());
    let empty = Tree::new("empty");
    std::fs::remove_dir_all(empty.path().join("sys")).unwrap();
    let e = System::discover(empty.path()).unwrap_err();
    assert!(matches!(e, PmuError::NoEventSource(_)), "{e}");
    // A corrupt file skips its PMU (as perf does) and is reported, naming the file.
    t.raw(
        "sys/bus/event_source/devices/dwc_rootport_3018/format/lane",
        "config:27-20\n",
    );
    let sys = System::discover(t.path()).unwrap();
    assert_eq!(sys.problems.len(), 1);
    let e = &sys.problems[0];
    assert!(!e.is_input());
    assert!(
        e.to_string()
            .contains("dwc_rootport_3018/format/lane: \"config:27-20\""),
        "{e}"
    );
    assert!(sys.pmus.iter().all(|p| p.name != "dwc_rootport_3018"));
    assert_eq!(sys.pcie_pmus().unwrap().len(), 1);
}

#[test]
fn pmu_names_without_instance_suffix_open_every_instance() {
    let t = dwc_tree(DwcVariant::Upstream);
    let sys = System::discover(t.path()).unwrap();
    let all = sys.resolve_all("dwc_rootport/rx_pcie_tlp_data_payload/").unwrap();
    let names: Vec<&str> = all.iter().map(|r| r.pmu.as_str()).collect();
    assert_eq!(names, vec!["dwc_rootport_13018", "dwc_rootport_3018"]);
    assert!(all.iter().all(|r| r.config[0] == 0x21));
    assert_eq!(sys.resolve_all("dwc_rootport_3018/L1/").unwrap().len(), 1);
    let e = sys.resolve_all("dwc_rootport/rx_memory_read/").unwrap_err();
    assert!(matches!(e, PmuError::MissingParams { .. }), "{e}");
    assert!(matches!(
        sys.resolve_all("hisi_pcie/x/").unwrap_err(),
        PmuError::UnknownPmu { .. }
    ));
}

/// Trees whose PCI device directories are flat (not symlinks into a nested /sys/devices):
/// devices below a root port come from its secondary..subordinate bus range.
#[test]
fn flat_pci_trees_use_bridge_bus_ranges() {
    let t = Tree::new("flat");
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    let port = "sys/bus/pci/devices/0000:30:03.0";
    t.attr(&format!("{port}/vendor"), "0x1ded");
    t.attr(&format!("{port}/class"), "0x060400");
    t.attr(&format!("{port}/secondary_bus_number"), "49");
    t.attr(&format!("{port}/subordinate_bus_number"), "50");
    t.attr(&format!("{port}/numa_node"), "-1");
    for (bdf, class) in [
        ("0000:31:00.0", "0x010802"),
        ("0000:32:00.0", "0x010802"),
        ("0000:33:00.0", "0x020000"),
    ] {
        t.attr(&format!("sys/bus/pci/devices/{bdf}/class"), class);
    }
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    let rp = &views[0].root_ports[0];
    let port = rp.port.as_ref().unwrap();
    assert_eq!(
        (port.numa_node, port.driver.clone(), port.link_summary()),
        (None, None, None)
    );
    let below: Vec<String> = rp.devices.iter().map(|d| d.bdf.to_string()).collect();
    assert_eq!(below, vec!["0000:31:00.0", "0000:32:00.0"]);
}

#[test]
fn dwc_lane_must_be_below_the_root_port_width() {
    let t = Tree::new("lane");
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    t.root_port("0000:30:03.0", "0"); // x16
    let sys = System::discover(t.path()).unwrap();
    assert_eq!(
        sys.resolve("dwc_rootport_3018/rx_memory_read,lane=15/").unwrap().config[0],
        0xf1070c
    );
    let e = sys.resolve("dwc_rootport_3018/rx_memory_read,lane=16/").unwrap_err();
    assert!(
        e.to_string()
            .contains("lane=16: root port 0000:30:03.0 has 16 lanes (lane 0 to 15)"),
        "{e}"
    );
    assert!(sys.resolve_all("dwc_rootport/rx_memory_read,lane=16/").is_err());
}

#[test]
fn other_families_are_recognised() {
    let t = Tree::new("others");
    let ev = [
        ("rd_bytes", "event=0x0"),
        ("wr_bytes", "event=0x1"),
        ("cycles", "event=0x100000000"),
    ];
    t.pmu(
        "",
        "nvidia_pcie_pmu_0_rc_1",
        60,
        Some("0"),
        &[("event", "config:0-32")],
        &ev,
    );
    t.pmu(
        "",
        "nvidia_pcie_tgt_pmu_0_rc_1",
        61,
        Some("0"),
        &[("event", "config:0-32")],
        &ev,
    );
    t.pmu(
        "",
        "phyt0_pcie_pmu1",
        62,
        Some("0"),
        &[("event", "config:0-4")],
        &[("aw", "event=0x01")],
    );
    t.pmu("", "arm_cmn_0", 63, Some("0"), &[("type", "config:0-15")], &[]);
    t.pmu("", "amd_df", 64, Some("0"), &[("event", "config:0-7")], &[]);
    t.pmu("", "uncore_irp_2", 65, Some("0,28"), &[("event", "config:0-7")], &[]);
    let sys = System::discover(t.path()).unwrap();
    let views = sys.pcie_pmus().unwrap();
    let fam = |n: &str| view(&views, n).family.family;
    assert_eq!(fam("nvidia_pcie_pmu_0_rc_1"), Family::NvidiaPcie);
    assert_eq!(view(&views, "nvidia_pcie_pmu_0_rc_1").family.variant, vec!["tegra410"]);
    assert_eq!(fam("nvidia_pcie_tgt_pmu_0_rc_1"), Family::NvidiaPcieTgt);
    assert_eq!(fam("phyt0_pcie_pmu1"), Family::Phytium);
    assert_eq!(fam("arm_cmn_0"), Family::ArmCmn);
    assert_eq!(fam("amd_df"), Family::AmdDf);
    assert_eq!(fam("uncore_irp_2"), Family::IntelIrp);
    let nv = view(&views, "nvidia_pcie_pmu_0_rc_1");
    assert_eq!(event(nv, "rd_bytes").metric.map(PmuMetric::as_str), Some("tx_bytes"));
    assert_eq!(event(nv, "wr_bytes").metric.map(PmuMetric::as_str), Some("rx_bytes"));
    // No catalog: events are listed without metrics.
    assert_eq!(event(view(&views, "phyt0_pcie_pmu1"), "aw").metric, None);
    assert_eq!(views.len(), 6);
}
