//! The checks on a real machine as its `lspci -vvv` showed it: the pcie-bench host (Xeon
//! E5-2637 v3, NFP-6000 and NetFPGA-SUME at Gen3 x8, an I350 at Gen2 x4, the BMC's VGA behind
//! a PCI bridge), from both pcie-bench data directories (IOMMU off and on: one layout).

use pcie_health::{check, Kind, Options, Severity};
use pcie_model::{stream, Generation, LinkConfig, LinkParams, Op};
use pcie_sysfs::lspci::{parse, write_snapshot};
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
        // and the I350's advisory non-fatal status bit (CESta NonFatalErr+).
        let kinds: Vec<(Kind, String, Severity)> = r
            .findings
            .iter()
            .map(|f| (f.kind, f.bdf.to_string(), f.severity))
            .collect();
        let mut want = vec![(Kind::LinkUnknown, "0000:00:00.0".to_string(), Severity::Info)];
        for f in ["0000:02:00.0", "0000:03:00.0", "0000:07:00.0", "0000:07:00.1"] {
            want.push((Kind::AerCorrectable, f.to_string(), Severity::Info));
        }
        assert_eq!(kinds, want);
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
/// a speed downgrade priced by the model, its cause named.
#[test]
fn a_port_capped_by_its_target_link_speed_is_named_as_the_cause() {
    let text = DUMPS[0];
    let (port, nfp) = (
        text.find("00:02.0 PCI bridge").unwrap(),
        text.find("02:00.0 Ethernet").unwrap(),
    );
    let capped = text[..port].to_string()
        + &text[port..nfp]
            .replacen("LnkSta:\tSpeed 8GT/s", "LnkSta:\tSpeed 5GT/s", 1)
            .replacen("Target Link Speed: 8GT/s", "Target Link Speed: 5GT/s", 1)
        + &text[nfp..].replacen("LnkSta:\tSpeed 8GT/s", "LnkSta:\tSpeed 5GT/s", 1);
    let root = std::env::temp_dir().join(format!("pcie-health-target-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write_snapshot(&parse(&capped).unwrap(), &root).unwrap();
    let r = check(&root, &Options::default()).unwrap();
    let f = r
        .findings
        .iter()
        .find(|f| f.kind == Kind::LinkSpeedDowngraded)
        .expect("a speed downgrade");
    assert_eq!(
        (f.bdf.to_string(), f.severity),
        ("0000:02:00.0".to_string(), Severity::Warning)
    );
    let (now, best) = (writes(Generation::Gen2, 8, 256), writes(Generation::Gen3, 8, 256));
    assert!((f.lost_pct.unwrap() - (best - now) / best * 100.0).abs() < 1e-9);
    assert!(
        f.message.ends_with(
            "capped by 0000:00:02.0's Target Link Speed (Link Control 2) of 5 GT/s: a firmware or setpci setting, \
             not a training fault (raise it and retrain the link)"
        ),
        "{}",
        f.message
    );
    std::fs::remove_dir_all(&root).unwrap();
}
