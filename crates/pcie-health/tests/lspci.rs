//! The checks on a real machine as its `lspci -vvv` showed it: the pcie-bench host (Xeon
//! E5-2637 v3, NFP-6000 and NetFPGA-SUME at Gen3 x8, an I350 at Gen2 x4, the BMC's VGA behind
//! a PCI bridge), from both pcie-bench data directories (IOMMU off and on: one layout).

use pcie_health::{check, Kind, Options, Severity};
use pcie_model::{stream, Generation, LinkConfig, LinkParams, Op};
use pcie_sysfs::lspci::{parse, write_snapshot, Capabilities};
use pcie_sysfs::Bdf;

const DUMPS: [&str; 2] = [
    include_str!("../../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro/sys-lspci.txt"),
    include_str!(
        "../../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp/sys-lspci.txt"
    ),
];

fn writes(gen: Generation, lanes: u32, mps: u32) -> f64 {
    let c = LinkConfig::new(&LinkParams {
        gen,
        lanes,
        mps,
        ..LinkParams::default()
    })
    .unwrap();
    stream(&c, Op::Wr, 4096, 0).unwrap().payload.0
}

#[test]
fn the_pcie_bench_host_has_healthy_links_priced_by_the_model() {
    for (i, dump) in DUMPS.iter().enumerate() {
        let root = std::env::temp_dir().join(format!("pcie-health-lspci-{i}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let functions = parse(dump).unwrap();
        let s = write_snapshot(&functions, &root).unwrap();
        assert_eq!((s.functions, s.header_only, s.gaps()), (91, 0, None));
        let r = check(&root, &Options::default()).unwrap();
        let gbps = |at: &str| {
            let b: Bdf = at.parse().unwrap();
            let f = r.functions.iter().find(|f| f.bdf == b).unwrap();
            (f.available_gbps.unwrap(), f.capable_gbps.unwrap(), f.limited_by)
        };
        // Both boards run at what they and their root ports can do, MPS 256.
        let gen3 = writes(Generation::Gen3, 8, 256);
        for board in ["0000:02:00.0", "0000:03:00.0"] {
            let (now, best, by) = gbps(board);
            assert_eq!((now, best, by), (gen3, gen3, Some(board.parse().unwrap())), "{board}");
        }
        let (now, _, _) = gbps("0000:07:00.0");
        assert_eq!(now, writes(Generation::Gen2, 4, 128));
        // The VGA's path: the PCH root port, then the ASPEED bridge's link.
        let vga = r
            .functions
            .iter()
            .find(|f| f.bdf.to_string() == "0000:06:00.0")
            .unwrap();
        let hops: Vec<String> = vga.path.iter().map(|h| h.bdf.to_string()).collect();
        assert_eq!(hops, ["0000:05:00.0", "0000:06:00.0"]);
        // Information only: the DMI root port lspci shows with no link speed, and the boards'
        // and the I350's advisory non-fatal status bit (CESta NonFatalErr+): the I350's two
        // functions share one link, so theirs is one finding naming both.
        let kinds: Vec<(Kind, String, Severity)> = r
            .findings
            .iter()
            .map(|f| (f.kind, f.bdf.to_string(), f.severity))
            .collect();
        let mut want = vec![(Kind::LinkUnknown, "0000:00:00.0".to_string(), Severity::Info)];
        for f in ["0000:02:00.0", "0000:03:00.0", "0000:07:00.0"] {
            want.push((Kind::AerCorrectable, f.to_string(), Severity::Info));
        }
        assert_eq!(kinds, want);
        let i350 = &r.findings[3].message;
        assert!(i350.ends_with("the same link shows them at 0000:07:00.1"), "{i350}");
        let m = &r.findings[1].message;
        assert!(
            m.contains("AER status shows correctable errors (NonFatalErr): sticky"),
            "{m}"
        );
        assert!(
            m.ends_with(
                "NonFatalErr is Advisory Non-Fatal: an uncorrectable error the device handled as \
             correctable (often an Unsupported Request or an unexpected completion)"
            ),
            "{m}"
        );
        assert!(!r.needs_attention());
        std::fs::remove_dir_all(&root).unwrap();
    }
}

/// Functions whose AER status registers show errors, as lspci prints them: with no counter
/// files, the status bits make the findings; an Unsupported Request alone is information.
#[test]
fn aer_status_bits_stand_in_for_missing_counters() {
    let head = |bdf: &str| {
        format!(
            "{bdf} Ethernet controller [0200]: Vendor Device [abcd:0001]\n\tStatus: Cap+\n\
             \tCapabilities: [40] Express (v2) Endpoint, MSI 00\n\
             \t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0\n\t\t\tExtTag+\n\
             \t\tDevCtl:\tExtTag+\n\t\t\tMaxPayload 256 bytes, MaxReadReq 512 bytes\n\
             \t\tLnkCap:\tPort #0, Speed 8GT/s, Width x8, ASPM not supported\n\
             \t\tLnkSta:\tSpeed 8GT/s, Width x8\n\
             \tCapabilities: [100 v2] Advanced Error Reporting\n"
        )
    };
    let dump = format!(
        "{}\t\tUESta:\tDLP- CmpltTO+ UnsupReq-\n\t\tCESta:\tRxErr+ BadTLP- BadDLLP+\n\n{}\t\tUESta:\tUnsupReq+\n",
        head("01:00.0"),
        head("02:00.0")
    );
    let root = std::env::temp_dir().join(format!("pcie-health-aer-status-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write_snapshot(&parse(&dump).unwrap(), &root).unwrap();
    let r = check(&root, &Options::default()).unwrap();
    let got: Vec<(Kind, String, Severity)> = r
        .findings
        .iter()
        .map(|f| (f.kind, f.bdf.to_string(), f.severity))
        .collect();
    assert_eq!(
        got,
        [
            (Kind::AerUncorrectable, "0000:01:00.0".to_string(), Severity::Warning),
            (Kind::AerCorrectable, "0000:01:00.0".to_string(), Severity::Info),
            (Kind::AerUncorrectable, "0000:02:00.0".to_string(), Severity::Info),
        ]
    );
    assert!(r.findings[0].message.contains("(CmpltTO)"), "{}", r.findings[0].message);
    assert!(
        r.findings[1].message.contains("(RxErr, BadDLLP)"),
        "{}",
        r.findings[1].message
    );
    assert!(
        r.findings[2].message.contains("often a probe"),
        "{}",
        r.findings[2].message
    );
    let f = &r.functions[0];
    assert_eq!(
        (f.aer.status_correctable.clone(), f.aer.status_uncorrectable.clone()),
        (vec!["RxErr", "BadDLLP"], vec!["CmpltTO"])
    );
    // Where the kernel counts, its counters speak and the status bits add nothing.
    let dev = root.join("sys/bus/pci/devices/0000:01:00.0");
    std::fs::write(dev.join("aer_dev_correctable"), "RxErr 0\nBadDLLP 0\nTOTAL_ERR_COR 0\n").unwrap();
    std::fs::write(dev.join("aer_dev_nonfatal"), "CmpltTO 0\nTOTAL_ERR_NONFATAL 0\n").unwrap();
    std::fs::write(dev.join("aer_dev_fatal"), "TOTAL_ERR_FATAL 0\n").unwrap();
    let r = check(&root, &Options::default()).unwrap();
    assert!(
        r.findings.iter().all(|f| f.bdf.to_string() != "0000:01:00.0"),
        "{:#?}",
        r.findings
    );
    std::fs::remove_dir_all(&root).unwrap();
}

/// The NFP's root port with its Target Link Speed set to 5 GT/s and the link trained there:
/// the link reaches what its port allows, so no speed fault; the setting holding it below
/// what both ends support is its own finding, priced by the model.
#[test]
fn a_port_capped_by_its_target_link_speed_is_a_setting_priced_by_the_model() {
    let text = DUMPS[0];
    let (port, nfp) = (
        text.find("00:02.0 PCI bridge").unwrap(),
        text.find("02:00.0 Ethernet").unwrap(),
    );
    let cap = |to: &str| {
        text[..port].to_string()
            + &text[port..nfp].replacen("LnkSta:\tSpeed 8GT/s", to, 1).replacen(
                "Target Link Speed: 8GT/s",
                "Target Link Speed: 5GT/s",
                1,
            )
            + &text[nfp..].replacen("LnkSta:\tSpeed 8GT/s", to, 1)
    };
    let root = std::env::temp_dir().join(format!("pcie-health-target-{}", std::process::id()));
    let run = |dump: &str| {
        let _ = std::fs::remove_dir_all(&root);
        write_snapshot(&parse(dump).unwrap(), &root).unwrap();
        let r = check(&root, &Options::default()).unwrap();
        let _ = std::fs::remove_dir_all(&root);
        r
    };
    let r = run(&cap("LnkSta:\tSpeed 5GT/s"));
    assert!(
        r.findings.iter().all(|f| f.kind != Kind::LinkSpeedDowngraded),
        "{:#?}",
        r.findings
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == Kind::LinkSpeedCapped)
        .expect("a cap");
    assert_eq!(
        (f.bdf.to_string(), f.limited_by, f.severity),
        (
            "0000:02:00.0".to_string(),
            Some("0000:02:00.0".parse().unwrap()),
            Severity::Warning
        )
    );
    let (now, best) = (writes(Generation::Gen2, 8, 256), writes(Generation::Gen3, 8, 256));
    assert!((f.lost_pct.unwrap() - (best - now) / best * 100.0).abs() < 1e-9);
    assert!(
        f.message.contains(
            "is held at Gen2 x8 by 0000:00:02.0's Target Link Speed (Link Control 2) where both ends support Gen3 x8: \
             a firmware or setpci setting, not a training fault"
        ),
        "{}",
        f.message
    );
    let nfp_record = r.functions.iter().find(|g| g.bdf == f.bdf).unwrap();
    let hop = nfp_record.path.last().unwrap();
    assert_eq!((hop.capable_gts, hop.supported_gts), (Some(5.0), Some(8.0)));
    // Trained below even the target: a fault of training against what the port allows.
    let r = run(&cap("LnkSta:\tSpeed 2.5GT/s"));
    let kinds: Vec<Kind> = r.findings.iter().map(|f| f.kind).collect();
    assert!(
        kinds.contains(&Kind::LinkSpeedDowngraded) && kinds.contains(&Kind::LinkSpeedCapped),
        "{kinds:?}"
    );
}

/// Uncorrectable status bits latched at both ends of one link (the NFP's root port and the
/// NFP, a Data Link Protocol error at each, as a link that lost its DLLP sequence leaves them):
/// one statement about the link, as the correctable ones are, naming the other end.
#[test]
fn uncorrectable_bits_at_both_ends_of_a_link_are_one_finding() {
    let text = DUMPS[0];
    let (port, nfp) = (
        text.find("00:02.0 PCI bridge").unwrap(),
        text.find("02:00.0 Ethernet").unwrap(),
    );
    let latched = |t: &str| t.replacen("UESta:\tDLP- ", "UESta:\tDLP+ ", 1);
    let dump = text[..port].to_string() + &latched(&text[port..nfp]) + &latched(&text[nfp..]);
    let root = std::env::temp_dir().join(format!("pcie-health-uesta-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write_snapshot(&parse(&dump).unwrap(), &root).unwrap();
    let r = check(&root, &Options::default()).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    let nfp: Bdf = "0000:02:00.0".parse().unwrap();
    let found: Vec<_> = r.findings.iter().filter(|f| f.kind == Kind::AerUncorrectable).collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = found[0];
    assert_eq!((f.severity, f.limited_by), (Severity::Warning, Some(nfp)));
    assert!(f.message.contains("(DLP)"), "{}", f.message);
    // Named by the end that sorts first (the port), the other end in its sentence.
    assert_eq!(f.bdf.to_string(), "0000:00:02.0");
    assert!(
        f.message.ends_with("the same link shows them at 0000:02:00.0"),
        "{}",
        f.message
    );
    // Both records still say what each end latched.
    for at in ["0000:00:02.0", "0000:02:00.0"] {
        let rec = r.functions.iter().find(|g| g.bdf.to_string() == at).unwrap();
        assert_eq!(rec.aer.status_uncorrectable, ["DLP"], "{at}");
    }
}

/// Every dump of `data/real-hosts` (pasted by people into public reports) against the reading
/// in its `EXPECTED`: the kinds at warning and above, each at its link. Each check's time is
/// printed (`--nocapture`); the guard is generous (10 s) so a slow CI machine does not fail it.
#[test]
fn real_hosts_reach_the_experts_reading() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/real-hosts");
    let expected = std::fs::read_to_string(dir.join("EXPECTED")).unwrap();
    let mut matched = 0;
    let mut total = 0;
    for line in expected.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (file, want) = line.split_once(": ").unwrap();
        let mut want: Vec<String> = want
            .split_whitespace()
            .filter(|w| *w != "none")
            .map(String::from)
            .collect();
        want.sort();
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let start = std::time::Instant::now();
        let root = std::env::temp_dir().join(format!("pcie-real-{}-{}", file.replace('/', "-"), std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let functions = parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        write_snapshot(&functions, &root).unwrap();
        let r = check(&root, &Options::default()).unwrap();
        let secs = start.elapsed().as_secs_f64();
        let _ = std::fs::remove_dir_all(&root);
        let mut got: Vec<String> = r
            .findings
            .iter()
            .filter(|f| f.severity >= Severity::Warning)
            .map(|f| format!("{}@{}", f.kind.name(), f.limited_by.unwrap_or(f.bdf)))
            .collect();
        got.sort();
        println!("{file}: {:.3} s, warnings {got:?}", secs);
        assert!(secs < 10.0, "{file}: check took {secs:.1} s");
        total += 1;
        matched += usize::from(got == want);
        assert_eq!(got, want, "{file}");
    }
    assert_eq!((matched, total), (56, 56));
}

/// The forms real pastes come in keep what an expert reads from them.
#[test]
fn real_paste_forms_keep_class_ids_and_links() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/real-hosts");
    let read = |f: &str| parse(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
    // pciutils 3.10 without pci.ids: `Class 0502: Device 8086:0ddb`.
    let cxl = read("cxl-numeric-header-pciutils310.txt");
    assert_eq!((cxl[0].class, cxl[0].ids), (Some(0x050210), Some((0x8086, 0x0ddb))));
    let tt = read("tenstorrent-blackhole-numeric-excerpt.txt");
    assert_eq!((tt[0].class, tt[0].ids), (Some(0x120000), Some((0x1e52, 0xb140))));
    // A header wrapped by the poster's editor and a `lspci -t` tree above the records.
    let x570 = read("rx560-x570-chipset-slot.txt");
    assert_eq!(x570.len(), 4);
    assert_eq!(x570[3].class, Some(0x030000));
    // Quoted-printable mail: `=3D` and soft line breaks, the link read through them.
    let tb = read("titan-ridge-dock-mail-qp.txt");
    assert_eq!(tb[0].buses, Some((0x44, 0x45)));
    let Capabilities::Decoded { express: Some(x), .. } = &tb[0].capabilities else {
        panic!()
    };
    let l = x.link.unwrap();
    assert_eq!((l.max_gts, l.max_width, l.gts, l.width), (8.0, 4, 2.5, 4));
    assert_eq!(x.target_speed, Some(2.5));
}

/// The forms of the held-out pastes: each keeps its registers.
#[test]
fn held_out_paste_forms_keep_their_registers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/real-hosts/held-out");
    let read = |f: &str| parse(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
    let express = |f: &pcie_sysfs::lspci::LspciFunction| match &f.capabilities {
        Capabilities::Decoded { express: Some(x), aer } => (x.clone(), *aer),
        other => panic!("{}: {other:?}", f.bdf),
    };
    // Indentation stripped: each register line keeps its level by its key, a wrapped rest
    // continues its register.
    let ib = read("qlogic-iba7322-stripped-indent.txt");
    let (x, aer) = express(&ib[0]);
    let l = x.link.unwrap();
    assert_eq!((l.max_gts, l.max_width, l.gts, l.width), (5.0, 8, 5.0, 4));
    assert_eq!((x.mps_supported, x.mps, x.mrrs), (512, 128, 512));
    assert_eq!(
        (ib[0].power_state.as_deref(), aer.unwrap().uncorrectable),
        (Some("D0"), 0)
    );
    // Every line followed by an empty one, levels of 4, 7 and 11 spaces, mail headers above.
    let aurora = read("aurora-r7-gtx1070-x8-double-spaced.txt");
    assert_eq!(aurora.len(), 3);
    let l = express(&aurora[2]).0.link.unwrap();
    assert_eq!((l.max_width, l.width, l.gts), (16, 8, 8.0));
    assert_eq!(aurora[1].buses, Some((1, 1)));
    // Wrapped at 72 columns below a Subject line continued with one space: UESta's CmpltTO.
    let mt = read("mt7925-wifi-cmpltto-mail-wrapped.txt");
    let (x, aer) = express(&mt[0]);
    assert_eq!(aer.unwrap().uncorrectable_names(), ["CmpltTO"]);
    assert_eq!(x.link.unwrap().max_gts, 5.0);
    // A header opened by a quote mark.
    let turks = read("turks-hd6570-vfio-guide-quoted.txt");
    assert_eq!((turks.len(), turks[0].class), (2, Some(0x030000)));
    assert_eq!(turks[0].power_state.as_deref(), Some("D3hot"));
    // `lspci` and then the AR9462's `lspci -vv`: one record each, the detailed one kept.
    let m14 = read("alienware-m14xr2-wiki-ath9k.txt");
    assert_eq!(m14.len(), 20);
    let wifi = m14.iter().find(|f| f.bdf.to_string() == "0000:08:00.0").unwrap();
    assert_eq!(express(wifi).1.unwrap().correctable_names(), ["RxErr", "BadDLLP"]);
    // VMD root ports that read all ones, their hex dumps cut (`...`): read, not refused, and
    // said to be unanswered, not undecoded.
    let vmd = read("vmd-root-ports-all-ones-patch.txt");
    assert_eq!(vmd.len(), 2);
    assert_eq!(vmd[0].bdf.to_string(), "10000:00:00.0");
    assert_eq!(
        (&vmd[0].capabilities, vmd[0].hex.as_slice()),
        (&Capabilities::Unanswered, &[0xff; 16][..])
    );
    let root = std::env::temp_dir().join(format!("pcie-real-vmd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let summary = write_snapshot(&vmd, &root).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!((summary.unanswered, summary.header_only), (2, 2));
    let gaps = summary.gaps().unwrap();
    assert!(gaps.starts_with("2 functions read all ones"), "{gaps}");
    assert!(!gaps.contains("did not decode"), "{gaps}");
}

/// A device whose port is not in a partial dump: its own link's loss is information, and no
/// MPS finding is raised against the unseen port.
#[test]
fn a_port_missing_from_a_partial_dump_is_said_so() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/real-hosts");
    let text = std::fs::read_to_string(dir.join("visionfive2-xg6-nvme.txt")).unwrap();
    let root = std::env::temp_dir().join(format!("pcie-real-vf2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write_snapshot(&parse(&text).unwrap(), &root).unwrap();
    let r = check(&root, &Options::default()).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    let w = r.findings.iter().find(|f| f.kind == Kind::LinkWidthDowngraded).unwrap();
    assert_eq!(w.severity, Severity::Info);
    assert!(w.message.contains("its port is not in this dump"), "{}", w.message);
    assert!(!w.message.contains("virtual machine"), "{}", w.message);
    assert!(
        r.findings.iter().all(|f| f.kind != Kind::MpsBelowPath),
        "{:#?}",
        r.findings
    );
}

/// The two-socket Dell GPU worker (`dell-p100-two-socket-excerpt.txt`): its uncore functions
/// on bus 7f have no NUMA node and do no DMA (no NUMA finding); its BCM5720 LOM runs Gen2 x1 of
/// x2. From the dump alone that width is a warning; laid out as the live host shows it, with
/// both ports up at 1 Gb/s (`net/<if>/speed`), 2 Gb/s fit Gen2 x1 and it is information.
#[test]
fn a_two_socket_servers_lom_is_priced_against_its_line_rate() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/real-hosts");
    let text = std::fs::read_to_string(dir.join("dell-p100-two-socket-excerpt.txt")).unwrap();
    let root = std::env::temp_dir().join(format!("pcie-real-dell-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write_snapshot(&parse(&text).unwrap(), &root).unwrap();
    let r = check(&root, &Options::default()).unwrap();
    assert_eq!(r.numa_nodes, [0, 1]);
    assert!(
        r.findings.iter().all(|f| f.kind != Kind::NumaUnknown),
        "{:#?}",
        r.findings
    );
    let lom: Bdf = "0000:02:00.0".parse().unwrap();
    let w = r.findings.iter().find(|f| f.kind == Kind::LinkWidthDowngraded).unwrap();
    assert_eq!((w.severity, w.limited_by), (Severity::Warning, Some(lom)));
    assert!((w.lost_pct.unwrap() - 50.0).abs() < 0.1, "{}", w.message);
    // A dump shows no line rate: no demand, the path prices.
    assert_eq!(w.demand, None);

    // The live host: each tg3 port's interface below its function, linked at 1000 Mb/s.
    for (f, name) in [("0000:02:00.0", "eno3"), ("0000:02:00.1", "eno4")] {
        let func = pcie_sysfs::PciDevice::read(&root, f.parse().unwrap()).unwrap();
        let net = func.dir().join("net").join(name);
        std::fs::create_dir_all(&net).unwrap();
        std::fs::write(net.join("speed"), "1000\n").unwrap();
    }
    let r = check(&root, &Options::default()).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        r.findings.iter().all(|f| f.severity < Severity::Warning),
        "{:#?}",
        r.findings
    );
    let w = r.findings.iter().find(|f| f.kind == Kind::LinkWidthDowngraded).unwrap();
    assert_eq!((w.severity, w.lost_pct), (Severity::Info, Some(0.0)));
    assert!(w.message.contains("3.55 Gb/s of 7.09"), "{}", w.message);
    assert!(w.message.contains("line rate is 2.00 Gb/s"), "{}", w.message);
    let d = w
        .demand
        .as_ref()
        .expect("the finding carries the demand it was priced against");
    assert_eq!((d.gbps, d.source), (2.0, pcie_health::DemandSource::NetSpeed));
    let rec = r.functions.iter().find(|f| f.bdf == lom).unwrap();
    assert_eq!(rec.demand_gbps, Some(2.0));
}

/// A population host (linuxhw/LsPCI, data/real-hosts/population) by file name: parsed,
/// written as a tree, checked.
fn population(file: &str) -> (pcie_sysfs::lspci::LspciSummary, pcie_health::Report) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/real-hosts/population");
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let root = std::env::temp_dir().join(format!("pcie-population-{file}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let s = write_snapshot(&parse(&text).unwrap(), &root).unwrap();
    let r = check(&root, &Options::default()).unwrap();
    let _ = std::fs::remove_dir_all(&root);
    (s, r)
}

/// The ThinkSystem SR250's x8 CPU port prints `LnkCap: Speed 2.5GT/s` while `LnkCap2` lists
/// 2.5-8GT/s and its RAID adapter runs at 8GT/s: the port supports 8GT/s, and the adapter's
/// path is not "55.9 Gb/s of 14.2".
#[test]
fn a_ports_supported_speeds_come_from_lnkcap2_and_the_running_link() {
    let (_, r) = population("server-lenovo-thinksystem-sr250-A2FD0BC88C.txt");
    let raid = r
        .functions
        .iter()
        .find(|f| f.bdf.to_string() == "0000:05:00.0")
        .unwrap();
    let (avail, cap) = (raid.available_gbps.unwrap(), raid.capable_gbps.unwrap());
    assert!((avail - cap).abs() < 1e-9, "{avail} of {cap}");
    assert!(avail > 50.0, "Gen3 x8: {avail}");
}

/// The FM2A88X's empty Hudson port (`LnkSta: Speed unknown (downgraded), Width x16 (strange)`,
/// DLActive-, nothing below it) beside `LnkCap: Speed 5GT/s` is a link that is down, not a
/// pciutils too old for its generation: no gap is reported, and no finding.
#[test]
fn an_empty_ports_unknown_speed_is_no_old_pciutils() {
    let (s, r) = population("desktop-asrock-fm2a88x-extreme6plus-4C71606B0A.txt");
    assert_eq!((s.unknown_speed, s.gaps()), (0, None));
    assert!(
        r.findings.iter().all(|f| f.bdf.to_string() != "0000:00:15.0"),
        "{:?}",
        r.findings
    );
}

/// The PRIME A520M-A's chipset (02:00.x, behind root port 00:01.2) runs MPS 128 B: its xHCI and
/// SATA functions support 512 B, as does the root port, but the RTL8111 behind the same chipset
/// switch (07:00.0) supports only 128 B, and the root port sends to it at its own MPS. The
/// hierarchy runs its smallest MPS: no `mps_below_path` on the chipset's functions.
#[test]
fn a_hierarchy_runs_the_smallest_mps_any_device_in_it_supports() {
    let (_, r) = population("desktop-asus-prime-a520m-a-63D555C391.txt");
    assert!(
        r.findings.iter().all(|f| f.kind.name() != "mps_below_path"),
        "{:?}",
        r.findings
    );
    let xhci = r
        .functions
        .iter()
        .find(|f| f.bdf.to_string() == "0000:02:00.0")
        .unwrap();
    assert_eq!(xhci.path_mps, Some(128));
}

/// The Dell C6100's 82576 dual 1 GbE (01:00.0/.1, [8086:10c9]) runs MPS 128 B where its path
/// supports 256 B: "6.38 Gb/s of 7.09", true of the link, but two 1 GbE ports move at most
/// 2 Gb/s. The dump carries no line rate; the part's ids fix it, so the finding is information.
#[test]
fn a_gigabit_part_in_a_dump_is_priced_by_its_ports_line_rate() {
    let (_, r) = population("server-dell-c6100-87F57E757F.txt");
    let mps: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.kind.name() == "mps_below_path")
        .collect();
    assert!(!mps.is_empty(), "{:?}", r.findings);
    for f in mps {
        assert_eq!(f.severity, pcie_health::Severity::Info, "{f:?}");
        let d = f.demand.as_ref().unwrap();
        assert_eq!((d.gbps, d.source.name()), (2.0, "part"), "{f:?}");
        assert!(
            f.message
                .contains("[8086:10c9] is an Intel 82576 Gigabit Ethernet controller"),
            "{}",
            f.message
        );
    }
}
