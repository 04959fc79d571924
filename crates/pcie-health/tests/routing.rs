//! AtomicOps and peer-to-peer routing on a GPU server whose GPUs and NVMe drive sit below one
//! PCIe switch: where atomics stop (the kernel's walk), which pairs talk inside the switch and
//! which ACS sends through the root complex, priced with pcie-model.

use pcie_health::fixture::{self, link, root_port, Func};
use pcie_health::{check, Kind, Options, Report, Severity};
use pcie_model::{stream, Generation, LinkConfig, LinkParams, Op};
use pcie_sysfs::{Acs, AtomicOps, PortType};
use std::path::PathBuf;

struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How the switch's ports are set.
#[derive(Clone, Copy)]
struct Switch {
    /// Downstream port 1b:01.0 routes AtomicOps.
    dp1_routes: bool,
    /// The upstream port blocks AtomicOps on egress.
    egress_blocked: bool,
    /// ACS P2P Request and Completion Redirect enabled on the downstream ports.
    redirect: bool,
}

const ROUTES: AtomicOps = AtomicOps {
    routing: true,
    completer32: false,
    completer64: false,
    completer128: false,
    requester_enabled: false,
    egress_blocked: false,
};

/// Root port 19:00.0 (Gen4 x16, completes 32/64-bit atomics) -> switch 1a:00.0 (upstream) ->
/// downstream ports 1b:01.0, 1b:02.0, 1b:03.0 -> AMD GPUs 1c:00.0 and 1d:00.0 (Gen4 x16,
/// AtomicOp requests enabled on the first) and an NVMe drive 1e:00.0 (Gen4 x4).
fn server(tag: &str, s: Switch) -> Tree {
    let root = std::env::temp_dir().join(format!("pcie-health-routing-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let g4x16 = link(16.0, 16, 16.0, 16);
    let rp = "0000:19:00.0";
    root_port(rp, 0, g4x16, 0x1a)
        .buses(0x1a, 0x1e)
        .config(|c| {
            c.atomics(AtomicOps {
                completer32: true,
                completer64: true,
                completer128: true,
                ..AtomicOps::default()
            })
        })
        .write(&root, &[])
        .unwrap();
    let us = "0000:1a:00.0";
    Func::new(us, 0x1000, 0xc030, 0x060400, PortType::UpstreamPort, 0)
        .link(g4x16)
        .config(|c| {
            c.atomics(AtomicOps {
                egress_blocked: s.egress_blocked,
                ..ROUTES
            })
        })
        .buses(0x1b, 0x1e)
        .write(&root, &[rp])
        .unwrap();
    let acs = Acs {
        capability: 0x5f,
        control: if s.redirect { 0x1d } else { 0 },
    };
    let devices = [
        ("0000:1b:01.0", "0000:1c:00.0", 0x1c, (0x1002, 0x744c, 0x030000), g4x16),
        ("0000:1b:02.0", "0000:1d:00.0", 0x1d, (0x1002, 0x744c, 0x030000), g4x16),
        (
            "0000:1b:03.0",
            "0000:1e:00.0",
            0x1e,
            (0x144d, 0xa80a, 0x010802),
            link(16.0, 4, 16.0, 4),
        ),
    ];
    for (k, (dp, dev, bus, (v, d, class), l)) in devices.into_iter().enumerate() {
        let routes = k != 0 || s.dp1_routes;
        Func::new(dp, 0x1000, 0xc030, 0x060400, PortType::DownstreamPort, 0)
            .link(l)
            .config(|c| {
                c.atomics(AtomicOps {
                    routing: routes,
                    ..ROUTES
                })
                .acs(acs)
                .aer()
            })
            .buses(bus, bus)
            .write(&root, &[rp, us])
            .unwrap();
        Func::new(dev, v, d, class, PortType::Endpoint, 0)
            .link(l)
            .config(|c| {
                c.atomics(AtomicOps {
                    requester_enabled: k == 0,
                    ..AtomicOps::default()
                })
                .aer()
            })
            .write(&root, &[rp, us, dp])
            .unwrap();
    }
    fixture::numa_nodes(&root, &["0-31"]).unwrap();
    Tree(root)
}

fn run(t: &Tree) -> Report {
    check(&t.0, &Options::default()).unwrap()
}

fn writes(gts: f64, lanes: u32) -> f64 {
    let cfg = LinkConfig::new(&LinkParams {
        gen: Generation::from_gt_per_s(gts).unwrap(),
        lanes,
        mps: 256,
        mrrs: 512,
        ..LinkParams::default()
    })
    .unwrap();
    stream(&cfg, Op::Wr, 4096, 0).unwrap().payload.0
}

const ALL_ROUTE: Switch = Switch {
    dp1_routes: true,
    egress_blocked: false,
    redirect: false,
};

#[test]
fn atomics_reach_the_root_complex_through_a_switch_that_routes_them() {
    let t = server("routes", ALL_ROUTE);
    let r = run(&t);
    for gpu in ["0000:1c:00.0", "0000:1d:00.0", "0000:1e:00.0"] {
        let f = r.functions.iter().find(|f| f.bdf.to_string() == gpu).unwrap();
        let a = f.atomics.as_ref().unwrap();
        assert_eq!((a.reach_root, a.port), (Some(true), None), "{gpu}");
    }
    // Bridges have no route of their own.
    assert!(r.functions.iter().filter(|f| f.is_bridge).all(|f| f.atomics.is_none()));
    assert!(
        r.findings.iter().all(|f| f.kind != Kind::AtomicsBlocked),
        "{:#?}",
        r.findings
    );
    assert!(r.p2p.iter().all(|p| p.route == "switch"), "{:#?}", r.p2p);
    assert!(r.findings.iter().all(|f| f.kind != Kind::P2pRedirected));
}

#[test]
fn the_port_that_stops_atomics_is_named_with_its_link() {
    // The first GPU's downstream port does not route them: its AMD GPU is refused by ROCm.
    let t = server(
        "dp",
        Switch {
            dp1_routes: false,
            ..ALL_ROUTE
        },
    );
    let r = run(&t);
    let blocked: Vec<_> = r.findings.iter().filter(|f| f.kind == Kind::AtomicsBlocked).collect();
    assert_eq!(blocked.len(), 1, "{blocked:#?}");
    let f = blocked[0];
    assert_eq!(
        (f.severity, f.bdf.to_string()),
        (Severity::Warning, "0000:1c:00.0".into())
    );
    assert_eq!(f.limited_by.map(|b| b.to_string()).as_deref(), Some("0000:1b:01.0"));
    assert!(
        f.message.contains(
            "0000:1b:01.0 does not route AtomicOps (DevCap2 AtomicOpsCap: Routing-), as a switch downstream port"
        ),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("link 0000:1b:01.0 \u{2194} 0000:1c:00.0"),
        "{}",
        f.message
    );
    assert!(f.message.contains("PCI rejects atomics"), "{}", f.message);
    let other = r
        .functions
        .iter()
        .find(|f| f.bdf.to_string() == "0000:1d:00.0")
        .unwrap();
    assert_eq!(other.atomics.as_ref().unwrap().reach_root, Some(true));

    // The upstream port blocking egress stops every device below it; the link named is the
    // one above it. The NVMe drive's route is recorded, without a finding.
    let t = server(
        "egress",
        Switch {
            egress_blocked: true,
            ..ALL_ROUTE
        },
    );
    let r = run(&t);
    let blocked: Vec<_> = r.findings.iter().filter(|f| f.kind == Kind::AtomicsBlocked).collect();
    assert_eq!(blocked.len(), 2, "{blocked:#?}");
    for f in blocked {
        assert_eq!(f.limited_by.map(|b| b.to_string()).as_deref(), Some("0000:1a:00.0"));
        assert!(
            f.message.contains("EgressBlck+") && f.message.contains("link 0000:19:00.0 \u{2194} 0000:1a:00.0"),
            "{}",
            f.message
        );
    }
    let nvme = r
        .functions
        .iter()
        .find(|f| f.bdf.to_string() == "0000:1e:00.0")
        .unwrap();
    assert_eq!(nvme.atomics.as_ref().unwrap().reach_root, Some(false));

    // Without root, nothing can be told.
    fixture::as_user(&t.0).unwrap();
    let r = run(&t);
    assert!(r.functions.iter().all(|f| f.atomics.is_none()));
}

#[test]
fn acs_redirect_sends_peer_traffic_through_the_root_complex_priced_on_the_uplink() {
    let t = server(
        "acs",
        Switch {
            redirect: true,
            ..ALL_ROUTE
        },
    );
    let r = run(&t);
    let pairs: Vec<(String, String)> = r.p2p.iter().map(|p| (p.a.to_string(), p.b.to_string())).collect();
    assert_eq!(
        pairs,
        [
            ("0000:1c:00.0".to_string(), "0000:1d:00.0".to_string()),
            ("0000:1c:00.0".into(), "0000:1e:00.0".into()),
            ("0000:1d:00.0".into(), "0000:1e:00.0".into())
        ]
    );
    let (x16, x4) = (writes(16.0, 16), writes(16.0, 4));
    let gpus = &r.p2p[0];
    assert_eq!(gpus.route, "root_complex");
    assert_eq!(gpus.switch.to_string(), "0000:1a:00.0");
    let ports: Vec<String> = gpus.redirected_by.iter().map(|b| b.to_string()).collect();
    assert_eq!(ports, ["0000:1b:01.0", "0000:1b:02.0"]);
    // Two Gen4 x16 GPUs: inside the switch each way gets the link; through the root complex
    // the Gen4 x16 uplink carries both ways up and down, half each.
    assert_eq!(gpus.switch_gbps, Some(x16));
    assert_eq!(gpus.root_complex_gbps, Some(x16 / 2.0));
    // GPU and the x4 drive: the drive's link bounds both routes (x4 is under half of x16).
    assert_eq!((r.p2p[1].switch_gbps, r.p2p[1].root_complex_gbps), (Some(x4), Some(x4)));
    let found: Vec<_> = r.findings.iter().filter(|f| f.kind == Kind::P2pRedirected).collect();
    assert_eq!(found.len(), 1, "one finding for the switch: {found:#?}");
    let f = found[0];
    assert_eq!((f.severity, f.bdf.to_string()), (Severity::Info, "0000:1a:00.0".into()));
    assert!((f.lost_pct.unwrap() - 50.0).abs() < 1e-9, "{:?}", f.lost_pct);
    for text in [
        "0000:1c:00.0 \u{2194} 0000:1d:00.0",
        "0000:1b:01.0 (ACSCtl SrcValid ReqRedir CmpltRedir UpstreamFwd)",
        "upstream link 0000:19:00.0 \u{2194} 0000:1a:00.0 [1000:c030] (Gen4 x16)",
        "pci=disable_acs_redir",
    ] {
        assert!(f.message.contains(text), "{text}: {}", f.message);
    }
    // Without root the extended capabilities are unread: the route is unknown, no finding.
    fixture::as_user(&t.0).unwrap();
    let r = run(&t);
    assert!(r.p2p.iter().all(|p| p.route == "unknown"), "{:#?}", r.p2p);
    assert!(r.findings.iter().all(|f| f.kind != Kind::P2pRedirected));
}
