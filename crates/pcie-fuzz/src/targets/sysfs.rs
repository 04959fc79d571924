//! Targets for pcie-sysfs's readers of what the link checks see: a function's config space
//! (capability walks, the PCI Express capability's registers, the serial number a snapshot
//! blanks), the link speed/width and AER counter files, and `lspci -vvv` dumps.

use crate::{refused, text, FuzzTarget, Verdict};
use pcie_sysfs::lspci::{self, Capabilities, ConfigFrom};
use pcie_sysfs::{
    blank_serial, extended_capabilities, has_aer, read_registers, Acs, AerStatus, Aspm, AtomicOps, ConfigBuilder,
    LinkSetup, PcieCapability, PortType, CONFIG_SPACE,
};
use pcie_sysfs::{AerCounts, LinkSpeed, LinkWidth};
use std::collections::BTreeSet;
use std::sync::Mutex;

const SIZES: [u32; 6] = [128, 256, 512, 1024, 2048, 4096];
const RATES: [f64; 7] = [2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// A config space dump: decoded values are in the registers' ranges, blanking the serial
/// number changes no PCI Express register, the extended list stays inside the dump, and the
/// registers `check` reads of it decode as the whole dump.
fn config_space(input: &[u8]) -> Verdict {
    if let Ok(ext) = extended_capabilities(input) {
        if let Some(&(id, at)) = ext.iter().find(|&&(_, at)| at < 0x100 || at + 4 > input.len()) {
            return Verdict::Wrong(format!("extended capability {id:#x} at {at:#x} outside the dump"));
        }
    }
    if AerStatus::decode(input).is_some() && has_aer(input) != Some(true) {
        return Verdict::Wrong("AER status read without an AER capability".into());
    }
    if let Some(acs) = Acs::decode(input) {
        if acs.enabled_names().len() > 7 || acs.enabled_names().iter().any(|n| !acs_listed(acs, n)) {
            return Verdict::Wrong(format!("ACS controls named beyond its capability: {acs:?}"));
        }
    }
    if let Some(a) = AtomicOps::decode(input) {
        if PcieCapability::decode(input).is_err() || AtomicOps::from_registers(a.registers().0, a.registers().1) != a {
            return Verdict::Wrong(format!(
                "AtomicOps {a:?} without a PCIe capability or not round-tripping"
            ));
        }
    }
    let decoded = PcieCapability::decode(input);
    // What `check` reads of a `config` file, piece by piece, decodes as the whole file (its
    // first 4 KiB); also where the file ends before the size it gives.
    let whole = &input[..input.len().min(CONFIG_SPACE)];
    for len in [input.len(), CONFIG_SPACE] {
        let regs = read_registers(len, |o, n| {
            Ok(input.get(o..).map_or(&[][..], |b| &b[..n.min(b.len())]).to_vec())
        })
        .expect("reading a slice does not fail");
        let same = PcieCapability::decode(&regs) == PcieCapability::decode(whole)
            && has_aer(&regs) == has_aer(whole)
            && AerStatus::decode(&regs) == AerStatus::decode(whole)
            && Acs::decode(&regs) == Acs::decode(whole)
            && AtomicOps::decode(&regs) == AtomicOps::decode(whole)
            && extended_capabilities(&regs) == extended_capabilities(whole);
        if !same {
            return Verdict::Wrong(format!(
                "the registers read from a file of {len} bytes decode otherwise"
            ));
        }
    }
    let mut blanked = input.to_vec();
    blank_serial(&mut blanked);
    if PcieCapability::decode(&blanked) != decoded {
        return Verdict::Wrong("blanking the serial number changed the PCIe capability".into());
    }
    match decoded {
        Ok(c) => {
            let d = c.control;
            if ![d.mps, d.mrrs, d.mps_supported].iter().all(|s| SIZES.contains(s)) {
                return Verdict::Wrong(format!("sizes out of range: {d:?}"));
            }
            if let Some(l) = c.link {
                let speeds = [l.speed, l.max_speed, l.target_speed].into_iter().flatten();
                if l.width > 63 || l.max_width > 63 || !speeds.into_iter().all(|s| RATES.contains(&s)) {
                    return Verdict::Wrong(format!("link registers out of range: {l:?}"));
                }
            }
            Verdict::Accepted
        }
        Err(e) => refused(e.to_string()),
    }
}

/// Whether the ACS control `name` is both supported and enabled in `acs`.
fn acs_listed(acs: Acs, name: &str) -> bool {
    pcie_sysfs::ACS_BITS
        .iter()
        .find(|(_, n)| *n == name)
        .is_some_and(|(b, _)| acs.capability & acs.control & (1 << b) != 0)
}

/// A link speed, link width or AER counter file's text.
fn link_files(input: &[u8]) -> Verdict {
    let t = text(input);
    let mut accepted = false;
    match LinkSpeed::parse(&t) {
        LinkSpeed::GtPerS(r) if !(r.is_finite() && r > 0.0) => return Verdict::Wrong(format!("speed {r}")),
        LinkSpeed::CannotTell(s) if s.chars().count() > 40 => {
            return Verdict::Wrong("a message quoting more than 40 characters".into())
        }
        LinkSpeed::GtPerS(_) | LinkSpeed::Unknown => accepted = true,
        LinkSpeed::CannotTell(_) => {}
    }
    match LinkWidth::parse(&t) {
        LinkWidth::Lanes(w) if !(1..=32).contains(&w) => return Verdict::Wrong(format!("width {w}")),
        LinkWidth::Lanes(_) => accepted = true,
        LinkWidth::CannotTell(_) => {}
    }
    match AerCounts::parse(&t) {
        Ok(c) if c.types.len() > 64 => return Verdict::Wrong(format!("{} AER types", c.types.len())),
        Ok(_) => accepted = true,
        Err(e) if !accepted => return refused(e),
        Err(_) => {}
    }
    if accepted {
        Verdict::Accepted
    } else {
        refused("cannot tell".into())
    }
}

/// An `lspci -vvv` dump: the same quoted in an e-mail, addresses distinct, hex dumps within
/// 4096 bytes, each config space built from decoded registers reads back with the registers'
/// sizes and widths, and `check` on the host it describes ([`check_dump`]) gives a sound report.
fn lspci_dump(input: &[u8]) -> Verdict {
    let dump = text(input);
    let parsed = lspci::parse(&dump);
    let quoted: String = dump.lines().map(|l| format!("> {l}\n")).collect();
    if lspci::parse(&quoted) != parsed {
        return Verdict::Wrong("quoted with \"> \" it reads otherwise".into());
    }
    let functions = match parsed {
        Ok(f) => f,
        Err(e) => return refused(e.to_string()),
    };
    let mut seen = BTreeSet::new();
    for f in &functions {
        if !seen.insert(f.bdf) {
            return Verdict::Wrong(format!("{} twice", f.bdf));
        }
        if f.hex.len() > 4096 {
            return Verdict::Wrong(format!("{} hex bytes", f.hex.len()));
        }
        let (config, from) = f.config();
        if f.trimmed_link.is_some() && from == ConfigFrom::Registers {
            return Verdict::Wrong(format!("{}: a trimmed paste's registers were made up", f.bdf));
        }
        let Capabilities::Decoded { express: Some(x), .. } = &f.capabilities else {
            continue;
        };
        if from != ConfigFrom::Registers {
            continue;
        }
        // What lspci said of AtomicOps and ACS is what the built config space says.
        if x.atomics.is_some() && AtomicOps::decode(&config) != x.atomics {
            return Verdict::Wrong(format!(
                "{}: AtomicOps {:?} built as {:?}",
                f.bdf,
                x.atomics,
                AtomicOps::decode(&config)
            ));
        }
        if Acs::decode(&config) != f.acs {
            return Verdict::Wrong(format!(
                "{}: ACS {:?} built as {:?}",
                f.bdf,
                f.acs,
                Acs::decode(&config)
            ));
        }
        match PcieCapability::decode(&config) {
            Ok(c) => {
                let d = c.control;
                if ![d.mps, d.mrrs, d.mps_supported].iter().all(|s| SIZES.contains(s)) {
                    return Verdict::Wrong(format!("{}: sizes out of range: {d:?}", f.bdf));
                }
                if let (Some(l), Some(want)) = (c.link, x.link) {
                    if l.width != want.width & 0x3f || l.max_width != want.max_width & 0x3f {
                        return Verdict::Wrong(format!("{}: widths {l:?} from {want:?}", f.bdf));
                    }
                }
            }
            Err(e) => return Verdict::Wrong(format!("{}: built config space does not decode: {e}", f.bdf)),
        }
    }
    check_dump(&functions)
}

/// The whole of `check --lspci` on a parsed dump ([`check_tree`]), unless the same dump already
/// passed it ([`CHECKED`]).
fn check_dump(functions: &[lspci::LspciFunction]) -> Verdict {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{functions:?}").hash(&mut h);
    let key = h.finish();
    if checked(|c| c.contains(&key)) {
        return Verdict::Accepted;
    }
    let verdict = check_tree(functions);
    if verdict == Verdict::Accepted {
        checked(|c| {
            if c.len() >= CHECKED_MOST {
                c.clear();
            }
            c.insert(key)
        });
    }
    verdict
}

/// `f` on [`CHECKED`] (a panic while it was held left it whole: a set of numbers).
fn checked<T>(f: impl FnOnce(&mut BTreeSet<u64>) -> T) -> T {
    f(&mut CHECKED.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The dumps [`check_tree`] passed, by a hash of what the parser read of them: the tree is laid
/// out from that alone, so a mutant the parser reads the same is known to pass (four in five
/// mutants of the real pastes change only text the parser skips) and the harness moves on.
static CHECKED: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());
/// At most this many are kept (some 20 MiB); then the memory starts again.
const CHECKED_MOST: usize = 1 << 20;

/// `check --lspci` on a parsed dump: laid out as a sysfs tree (in memory-backed `/dev/shm`
/// where there is one) and checked. The report has a record per function, each finding names
/// one of them with a message and a loss within 0-100 %, every Gb/s figure is finite and not
/// negative, and the report serialises as the JSON contract.
fn check_tree(functions: &[lspci::LspciFunction]) -> Verdict {
    let Ok(dir) = pcie_output::PrivateDir::for_tree("pcie-fuzz-lspci") else {
        return refused("no temporary directory for the tree".into());
    };
    if let Err(e) = lspci::write_snapshot(functions, dir.path()) {
        return Verdict::Wrong(format!("the dump's tree was not written: {e}"));
    }
    let report = match pcie_health::check(dir.path(), &pcie_health::Options::default()) {
        Ok(r) => r,
        Err(e) => return Verdict::Wrong(format!("check refused the tree written from the dump: {e}")),
    };
    if report.functions.len() != functions.len() {
        return Verdict::Wrong(format!(
            "{} functions parsed, {} checked",
            functions.len(),
            report.functions.len()
        ));
    }
    for f in &report.findings {
        if f.message.trim().is_empty() || !report.functions.iter().any(|r| r.bdf == f.bdf) {
            return Verdict::Wrong(format!("finding {f:?} without a message or a function"));
        }
        if f.lost_pct.is_some_and(|l| !(0.0..=100.0).contains(&l)) {
            return Verdict::Wrong(format!("{}: lost {:?} %", f.kind.name(), f.lost_pct));
        }
    }
    for r in &report.functions {
        let figures = [r.available_gbps, r.capable_gbps, r.demand_gbps];
        if figures.iter().flatten().any(|g| !(g.is_finite() && *g >= 0.0)) {
            return Verdict::Wrong(format!("{}: Gb/s figures {figures:?}", r.bdf));
        }
    }
    match serde_json::to_string(&report) {
        Ok(_) => Verdict::Accepted,
        Err(e) => Verdict::Wrong(format!("the report does not serialise: {e}")),
    }
}

/// Two functions of the pcie-bench host's `lspci -vvv`: a root port and the NFP below it.
fn lspci_seeds() -> Vec<Vec<u8>> {
    let dump = include_str!(
        "../../../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro/sys-lspci.txt"
    );
    let function = |addr: &str| {
        let at = dump.find(&format!("\n{addr} ")).map_or(0, |i| i + 1);
        let end = dump[at..].find("\n\n").map_or(dump.len(), |e| at + e + 2);
        &dump[at..end]
    };
    let hex = "00: 86 80 04 2f 07 04 10 00 02 00 04 06 10 00 81 00\n10: 00 00 00 00\n";
    // The lines of a switch's downstream port that say how AtomicOps and peers are routed.
    let routing = "\t\tDevCap2: Completion Timeout: Not Supported, TimeoutDis-, ARIFwd+\n\t\t\t AtomicOpsCap: Routing+ 32bit- 64bit- 128bitCAS-\n\
                   \t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis-, ARIFwd-\n\t\t\t AtomicOpsCtl: EgressBlck-\n\
                   \tCapabilities: [f24 v1] Access Control Services\n\
                   \t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+\n\
                   \t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n";
    // Forms real pastes take (data/real-hosts): numeric headers of lspci without pci.ids, a
    // capability trimmed to its link lines, a quoted-printable mail, `-PP` paths, a space
    // before the tabs, a wrapped register line.
    let numeric = "06:00.0 Class 0300: Device 1002:67df (rev cf) (prog-if 00)\n\tCapabilities: [58] Express (v2) Legacy Endpoint, MSI 00\n\t\tLnkCap:\tPort #2, Speed 8GT/s, Width x8, ASPM L1\n\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x4 (downgraded)\n06:00.1 0403: 1002:aaf0\n";
    let qp = "43:00.0 PCI bridge: Intel Corporation JHL7540 Thunderbolt 3 Bridge [Titan R=\nidge DD 2018] (rev 06)\n\tBus: primary=3D43, secondary=3D44, subordinate=3D45, sec-latency=3D0\n\tCapabilities: [c0] Express (v2) Upstream Port, MSI 00\n\t\tDevCap:\tMaxPayload 128 bytes, PhantFunc 0\n\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-\n\t\t\tMaxPayload 128 bytes, MaxReadReq 512 bytes\n\t\tLnkCap:\tPort #3, Speed 8GT/s, Width x4, ASPM L1, Exit Latency L1 <2us\n\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x4 (ok)\n\t\tLnkCap2: Supported Link Speeds: 2.5-8GT/s, Crosslink- Retimer- 2Retimers-=\n DRS-\n";
    let pp = "00:1c.4/06:00.0 Non-Volatile memory controller [0108]: Samsung [144d:a808]\n \tCapabilities: [70] Express (v2) Endpoint, MSI 00\n \t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0\n \t\tDevCtl:\tCorrErr+\n \t\t\tMaxPayload 128 bytes, MaxReadReq 512 bytes\n \t\tLnkCap:\tPort #0, Speed 8GT/s, Width x4, ASPM L1, Exit Latency L1 <64us\n \t\tLnkSta:\tSpeed 8GT/s (ok),\nWidth x2 (downgraded)\n";
    let mut seeds = vec![
        format!("{}{}", function("00:02.0"), function("02:00.0")).into_bytes(),
        format!("{}{hex}", function("00:03.0")).into_bytes(),
        numeric.as_bytes().to_vec(),
        qp.as_bytes().to_vec(),
        pp.as_bytes().to_vec(),
        format!("{}{routing}", function("00:02.0").trim_end()).into_bytes(),
    ];
    seeds.extend(real_hosts());
    seeds
}

/// The longest real paste taken whole as a seed; a longer one is cut between records into
/// pieces of about this size, so that mutants (up to 4 times the longest seed) stay pastes of a
/// few devices and `check` runs on each in well under a millisecond.
const SEED_BYTES: usize = 8 << 10;

/// The repository's corpus of real pastes (`data/real-hosts/*.txt` and its `held-out/`), read
/// from the source tree at start, in name order: every form a posted dump took (numeric headers,
/// `-PP` paths, trimmed Express blocks, stripped indentation, quoted-printable, an `lspci -t`
/// tree above). A binary run away from its source tree has the seeds above only.
fn real_hosts() -> Vec<Vec<u8>> {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/real-hosts"));
    let mut paths: Vec<_> = [root.to_path_buf(), root.join("held-out")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| pcie_output::read::read(p, pcie_output::read::Limit::LSPCI_DUMP).ok())
        .flat_map(|dump| pieces(&dump, SEED_BYTES))
        .collect()
}

/// `dump` in pieces of whole blank-line-separated blocks (records), each up to `most` bytes
/// unless one block alone is longer.
fn pieces(dump: &[u8], most: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut piece = Vec::new();
    for block in dump
        .split_inclusive(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .split_inclusive(|l| l == b"\n")
    {
        let block = block.concat();
        if !piece.is_empty() && piece.len() + block.len() > most {
            out.push(std::mem::take(&mut piece));
        }
        piece.extend(block);
    }
    out.extend((!piece.is_empty()).then_some(piece));
    out
}

fn seeds() -> Vec<Vec<u8>> {
    let link = LinkSetup {
        aspm_enabled: Aspm { l0s: true, l1: true },
        ..LinkSetup::at_max(16.0, 8)
    };
    let gpu = ConfigBuilder::endpoint(0x10de, 0x2330, 0x030200)
        .mps(512, 256)
        .tags(true, true, Some((true, true, true)))
        .link(link)
        .aer()
        .serial(0x0123_4567_89ab_cdef)
        .build();
    let port = ConfigBuilder::new(0x8086, 0x347a, 0x060400, PortType::RootPort)
        .link(LinkSetup::at_max(32.0, 16))
        .build();
    let rciep = ConfigBuilder::new(0x8086, 0x0b25, 0x088000, PortType::IntegratedEndpoint).build();
    let plain = ConfigBuilder::conventional(0x1af4, 0x1000, 0x020000).build();
    let switch = ConfigBuilder::new(0x1000, 0xc030, 0x060400, PortType::DownstreamPort)
        .link(LinkSetup::at_max(32.0, 16))
        .atomics(AtomicOps {
            routing: true,
            egress_blocked: true,
            ..AtomicOps::default()
        })
        .acs(Acs {
            capability: 0x7f,
            control: 0x1d,
        })
        .aer()
        .build();
    vec![
        switch[..0x180].to_vec(),
        gpu[..0x200].to_vec(),
        port[..0x100].to_vec(),
        rciep[..0x100].to_vec(),
        plain[..0x40].to_vec(),
        gpu[..0x74].to_vec(),
    ]
}

pub fn targets() -> Vec<FuzzTarget> {
    vec![
        FuzzTarget {
            name: "config-space",
            seeds: seeds(),
            dictionary: vec![
                "\x10",
                "\x01\x00\x01\x00",
                "\x03\x00\x01\x00",
                "\x0d\x00\x01\x00",
                "\x40\x03",
                "\x40",
                "\x70",
                "\x00\x01",
                "\u{7f}",
            ],
            run: config_space,
        },
        FuzzTarget::new(
            "link-files",
            &[
                "8.0 GT/s PCIe",
                "2.5 GT/s",
                "Unknown",
                "16",
                "255",
                "RxErr 3\nBadTLP 0\nBadDLLP 212\nTOTAL_ERR_COR 215",
                "Undefined 0\nDLP 1\nTOTAL_ERR_FATAL 1",
            ],
            &[" GT/s", " PCIe", "Unknown", "TOTAL_ERR_COR ", "\n", " ", "."],
            link_files,
        ),
        FuzzTarget {
            name: "lspci",
            seeds: lspci_seeds(),
            dictionary: vec![
                "\t",
                "\n",
                "Capabilities: ",
                "[100 v2] Advanced Error Reporting",
                "Express (v2) ",
                "LnkSta:\tSpeed ",
                "GT/s",
                "Width x",
                "MaxPayload ",
                "MaxReadReq ",
                "ExtTag+",
                "10BitTagReq+",
                "Bus: primary=00, secondary=",
                "<access denied>",
                "00: ",
                " bytes",
                "Class ",
                "Device 10de:",
                "=3D",
                "=\n",
                "/",
                " \t",
                "LnkCap2: Supported Link Speeds: 2.5-",
                "LnkCtl2: Target Link Speed: ",
                "AtomicOpsCap: Routing+ 32bit+ 64bit- ",
                "AtomicOpsCtl: ReqEn+ EgressBlck+",
                "Capabilities: [220 v1] Access Control Services",
                "ACSCap:\tSrcValid+ ReqRedir+ ",
                "ACSCtl:\tReqRedir- CmpltRedir+ ",
            ],
            run: lspci_dump,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_paste_is_cut_between_records_and_nothing_is_lost() {
        let dump = b"00:00.0 a\n\tx\n\n00:01.0 b\n\ty\n\n00:02.0 c\n".to_vec();
        let p = pieces(&dump, 16);
        assert_eq!(p.concat(), dump);
        assert_eq!(p, [&b"00:00.0 a\n\tx\n\n"[..], b"00:01.0 b\n\ty\n\n", b"00:02.0 c\n"]);
        assert_eq!(pieces(&dump, 1 << 10), [dump]);
    }

    /// Every paste of the corpus is among the lspci target's seeds (cut where long), so the
    /// forms real pastes take are where mutation starts.
    #[test]
    fn the_lspci_seeds_hold_every_real_paste() {
        let seeds = lspci_seeds();
        let corpus = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/real-hosts"));
        let mut n = 0;
        for d in [corpus.to_path_buf(), corpus.join("held-out")] {
            for e in std::fs::read_dir(d).expect("the corpus") {
                let p = e.expect("an entry").path();
                if p.extension().is_some_and(|x| x == "txt") {
                    let dump = std::fs::read(&p).expect("a paste");
                    let first = pieces(&dump, SEED_BYTES).remove(0);
                    assert!(seeds.contains(&first), "{} is no seed", p.display());
                    n += 1;
                }
            }
        }
        assert!(n >= 25, "{n} pastes");
    }
}
