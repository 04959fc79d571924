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
        // One thing to say: the DMI root port lspci shows with no link speed.
        let kinds: Vec<(Kind, String, Severity)> = r
            .findings
            .iter()
            .map(|f| (f.kind, f.bdf.to_string(), f.severity))
            .collect();
        assert_eq!(kinds, [(Kind::LinkUnknown, "0000:00:00.0".to_string(), Severity::Info)]);
        assert!(!r.needs_attention());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
