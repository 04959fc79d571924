//! `lspci -vvv` text as a snapshot: the dump users paste into bug reports (and the pcie-bench
//! data directories keep as `sys-lspci.txt`) laid out as the sysfs tree the readers know, so
//! `pcieperf check` prices the links of a host nobody can log into.
//!
//! What each function gets: its class (`[0604]` with `-nn`, else from the class name lspci
//! prints), ids (`[8086:2f04]` with `-nn`), driver, NUMA node, bridge bus range, power state,
//! and its config space: the bytes themselves where the dump has them (`-xxx`: 256 bytes,
//! `-xxxx`: 4096), else built with [`ConfigBuilder`] from the registers lspci decodes (DevCap,
//! DevCtl, LnkCap, LnkCtl, LnkSta, DevCap2, DevCtl2, the AER capability and its status
//! registers). The link files are the Link Capabilities and Status as the kernel prints them.
//! A function whose capabilities lspci could not read (`<access denied>`: run without root) or
//! did not decode (fewer than three `v`) gets the 64-byte header Linux shows without root, one
//! that read all ones (`!!! Unknown header type 7f`) 64 bytes of ones, and
//! [`LspciSummary::gaps`] says how many. AER counters and CPU lists are not in lspci's output.

use crate::bdf::Bdf;
use crate::config_builder::{ConfigBuilder, LinkSetup};
use crate::config_space::{Acs, AerStatus, Aspm, AtomicOps, PortType, CORRECTABLE_BITS, UNCORRECTABLE_BITS};
use crate::host::NUMA_NODES;
use crate::link_files::LinkSpeed;
use crate::snapshot::SnapshotError;
use crate::tree::{function_dir, write_pci_function};
use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

mod caps2;

/// What lspci decoded of a function's capabilities.
#[derive(Debug, Clone, PartialEq)]
pub enum Capabilities {
    /// `Capabilities: <access denied>`: lspci ran without root.
    Denied,
    /// `!!! Unknown header type 7f`: the function's config space read all ones, as a
    /// function powered off (D3cold) or gone from the bus answers.
    Unanswered,
    /// lspci printed no registers (run without `-v`), or listed the PCI Express capability
    /// without decoding it (fewer than three `v`).
    NotShown,
    /// The registers lspci printed; `aer`: the error types the AER status registers
    /// (`UESta`, `CESta`) show set, where lspci decoded them.
    Decoded {
        express: Option<Express>,
        aer: Option<AerStatus>,
    },
}

/// The PCI Express capability's registers as lspci decodes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Express {
    pub port_type: PortType,
    pub mps_supported: u32,
    pub mps: u32,
    pub mrrs: u32,
    /// Extended (8-bit) tags: supported (DevCap), enabled (DevCtl).
    pub ext_tag: (bool, bool),
    /// 10-bit tags (completer, requester, requester enabled), where lspci prints them.
    pub tags10: Option<(bool, bool, bool)>,
    pub link: Option<LinkSetup>,
    /// `LnkCtl2: Target Link Speed` in GT/s.
    pub target_speed: Option<f64>,
    /// `AtomicOpsCap` and `AtomicOpsCtl` (DevCap2, DevCtl2), where lspci prints them.
    pub atomics: Option<AtomicOps>,
}

/// One function of the dump.
#[derive(Debug, Clone, PartialEq)]
pub struct LspciFunction {
    pub bdf: Bdf,
    /// Class, subclass and programming interface.
    pub class: Option<u32>,
    pub ids: Option<(u16, u16)>,
    pub driver: Option<String>,
    pub numa_node: Option<u32>,
    /// A bridge's secondary and subordinate bus.
    pub buses: Option<(u8, u8)>,
    /// `D0` ... `D3hot`, from the power-management capability's status.
    pub power_state: Option<String>,
    pub capabilities: Capabilities,
    /// The config-space bytes of a `-xxx` or `-xxxx` dump.
    pub hex: Vec<u8>,
    /// The link of a paste trimmed to the Express capability's link lines (`LnkCap`, `LnkSta`
    /// without `DevCap`, `DevCtl`): its link files are written, its config space is not built.
    pub trimmed_link: Option<LinkSetup>,
    /// The Access Control Services capability's `ACSCap` and `ACSCtl`, where the dump shows it.
    pub acs: Option<Acs>,
}

/// Why a text is not an lspci dump we can read.
#[derive(Debug, Clone, PartialEq)]
pub enum LspciError {
    /// No line starting with a PCI address and a class name.
    NoFunctions,
    /// The same address twice.
    Duplicate(Bdf),
    /// A hex dump line that is not `OFFSET: ` and up to 16 bytes, or not in order.
    BadHex { line: usize, text: String },
}

impl fmt::Display for LspciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LspciError::NoFunctions => write!(
                f,
                "no PCI function found: expected the output of `lspci -vvv` (lines such as \
                 \"00:01.0 PCI bridge: Intel Corporation ...\"; -nn adds ids, -xxxx the config space)"
            ),
            LspciError::Duplicate(b) => write!(f, "{b} appears twice: one host's lspci output at a time"),
            LspciError::BadHex { line, text } => write!(
                f,
                "line {line}: {text:?} is not a config-space dump line (\"OFFSET: \" and up to 16 hex bytes, \
                 offsets in order from 00)"
            ),
        }
    }
}

impl std::error::Error for LspciError {}

/// Class names lspci prints (pci.ids) for the classes a PCIe host has, with their codes.
const CLASSES: [(&str, u32); 44] = [
    ("Non-VGA unclassified device", 0x0000),
    ("SCSI storage controller", 0x0100),
    ("IDE interface", 0x0101),
    ("RAID bus controller", 0x0104),
    ("SATA controller", 0x0106),
    ("Serial Attached SCSI controller", 0x0107),
    ("Non-Volatile memory controller", 0x0108),
    ("Mass storage controller", 0x0180),
    ("Ethernet controller", 0x0200),
    ("Fibre Channel", 0x0204),
    ("Infiniband controller", 0x0207),
    ("Network controller", 0x0280),
    ("VGA compatible controller", 0x0300),
    ("3D controller", 0x0302),
    ("Display controller", 0x0380),
    ("Multimedia audio controller", 0x0401),
    ("Audio device", 0x0403),
    ("Multimedia controller", 0x0480),
    ("RAM memory", 0x0500),
    ("Memory controller", 0x0580),
    ("Host bridge", 0x0600),
    ("ISA bridge", 0x0601),
    ("PCI bridge", 0x0604),
    ("CardBus bridge", 0x0607),
    ("Bridge", 0x0680),
    ("Serial controller", 0x0700),
    ("Communication controller", 0x0780),
    ("PIC", 0x0800),
    ("DMA controller", 0x0801),
    ("Timer", 0x0802),
    ("SD Host controller", 0x0805),
    ("IOMMU", 0x0806),
    ("System peripheral", 0x0880),
    ("Co-processor", 0x0b40),
    ("FireWire (IEEE 1394)", 0x0c00),
    ("USB controller", 0x0c03),
    ("SMBus", 0x0c05),
    ("Encryption controller", 0x1080),
    ("Signal processing controller", 0x1180),
    ("Performance counters", 0x1101),
    ("Processing accelerators", 0x1200),
    ("Non-Essential Instrumentation", 0x1300),
    ("Unassigned class", 0xff00),
    ("Unclassified device", 0x0000),
];

/// The word after `name` in `text` when it is `+` or `-` (`ExtTag+`).
fn flag(text: &str, name: &str) -> Option<bool> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .find_map(|w| match w.strip_prefix(name)? {
            "+" => Some(true),
            "-" => Some(false),
            _ => None,
        })
}

/// The characters right after `key` that `digit` takes (`256` after `"MaxPayload "`).
fn digits_after<'a>(text: &'a str, key: &str, digit: fn(char) -> bool) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    Some(&rest[..rest.find(|c: char| !digit(c)).unwrap_or(rest.len())])
}

/// The decimal number right after `key` (`"MaxPayload "` in `MaxPayload 256 bytes`).
fn number_after(text: &str, key: &str) -> Option<f64> {
    digits_after(text, key, |c| c.is_ascii_digit() || c == '.')?
        .parse()
        .ok()
}

/// The hexadecimal number right after `key` (`"secondary="` in `secondary=1a`).
fn number_hex_after(text: &str, key: &str) -> Option<u32> {
    u32::from_str_radix(digits_after(text, key, |c| c.is_ascii_hexdigit())?, 16).ok()
}

/// `Speed 8GT/s` (0 for `Speed unknown`), `Width x8`.
fn speed_width(text: &str) -> (f64, u32) {
    let gts = number_after(text, "Speed ").unwrap_or(0.0);
    let width = number_after(text, "Width x").map_or(0, |w| w as u32);
    (gts, width)
}

fn aspm(words: &str) -> Aspm {
    Aspm {
        l0s: words.contains("L0s"),
        l1: words.contains("L1"),
    }
}

fn port_type(kind: &str) -> PortType {
    let table = [
        ("Legacy Endpoint", PortType::LegacyEndpoint),
        ("Endpoint", PortType::Endpoint),
        ("Root Port", PortType::RootPort),
        ("Upstream Port", PortType::UpstreamPort),
        ("Downstream Port", PortType::DownstreamPort),
        ("PCI-Express to PCI/PCI-X Bridge", PortType::Other(7)),
        ("PCI/PCI-X to PCI-Express Bridge", PortType::Other(8)),
        ("Root Complex Integrated Endpoint", PortType::IntegratedEndpoint),
        ("Root Complex Event Collector", PortType::EventCollector),
    ];
    table.iter().find(|(name, _)| kind.starts_with(name)).map_or_else(
        || PortType::Other(number_after(kind, "Unknown type ").map_or(15, |t| t as u8)),
        |(_, t)| *t,
    )
}

/// The registers of one `Express` capability, each key's text with its continuation lines.
#[derive(Default)]
struct ExpressText {
    kind: String,
    regs: Vec<(String, String)>,
}

impl ExpressText {
    fn reg(&self, key: &str) -> Option<&str> {
        self.regs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The link from `LnkCap` and `LnkSta`, even where a trimmed paste left out the rest of
    /// the capability. The maximum speed is the highest of `LnkCap`'s, `LnkCap2`'s supported
    /// speeds (the spec's list since PCIe 3.0: some ports' `LnkCap` says 2.5GT/s where
    /// `LnkCap2` lists 8 and the link runs at 8) and the speed the link runs at (no link
    /// trains above what its ends support).
    fn link(&self) -> Option<LinkSetup> {
        match (self.reg("LnkCap"), self.reg("LnkSta")) {
            (Some(cap), Some(sta)) => {
                let (cap_gts, max_width) = speed_width(cap);
                let supported = self.reg("LnkCap2").and_then(|c| {
                    let speeds = c.split_once("Supported Link Speeds: ")?.1;
                    let top = speeds.split(['-', ',']).nth(1).unwrap_or(speeds);
                    digits_after(top, "", |c| c.is_ascii_digit() || c == '.')?
                        .parse::<f64>()
                        .ok()
                });
                let (gts, width) = speed_width(sta);
                let max_gts = cap_gts.max(supported.unwrap_or(0.0)).max(gts);
                let supported = cap
                    .split_once("ASPM ")
                    .map_or("", |(_, r)| r.split(',').next().unwrap_or(""));
                let enabled = self
                    .reg("LnkCtl")
                    .and_then(|c| c.split_once("ASPM "))
                    .map_or("", |(_, r)| {
                        r.split(';').next().unwrap_or("").trim_end_matches("Enabled")
                    });
                Some(LinkSetup {
                    max_gts,
                    max_width,
                    gts,
                    width,
                    aspm_supported: aspm(supported),
                    aspm_enabled: aspm(enabled),
                })
            }
            _ => None,
        }
    }

    /// `None` when lspci did not print the registers (`-v` shows the capability's name only).
    fn decode(&self) -> Option<Express> {
        let (devcap, devctl) = (self.reg("DevCap")?, self.reg("DevCtl")?);
        let size = |t: &str, key: &str| number_after(t, key).map(|v| v as u32);
        let link = self.link();
        let tags10 = self.reg("DevCap2").and_then(|c| {
            let completer = flag(c, "10BitTagComp")?;
            let requester = flag(c, "10BitTagReq")?;
            let enabled = self
                .reg("DevCtl2")
                .and_then(|c| flag(c, "10BitTagReq"))
                .unwrap_or(false);
            Some((completer, requester, enabled))
        });
        Some(Express {
            port_type: port_type(&self.kind),
            mps_supported: size(devcap, "MaxPayload ")?,
            mps: size(devctl, "MaxPayload ")?,
            mrrs: size(devctl, "MaxReadReq ")?,
            ext_tag: (
                flag(devcap, "ExtTag").unwrap_or(false),
                flag(devctl, "ExtTag").unwrap_or(false),
            ),
            tags10,
            link,
            target_speed: self
                .reg("LnkCtl2")
                .and_then(|c| number_after(c, "Target Link Speed: "))
                .filter(|&t| t > 0.0),
            atomics: caps2::atomics(self.reg("DevCap2"), self.reg("DevCtl2")),
        })
    }
}

/// A function header: `[dddd:]bb:dd.f CLASS[ [cccc]]: rest`.
/// `lspci -PP` prints the path of bridges to the function (`00:1c.4/06:00.0`): its last step
/// is the address, in the first step's domain. A quote mark a post opened the paste with
/// (`'25:00.0 VGA ...`) is no part of it.
fn header(line: &str) -> Option<(Bdf, &str)> {
    let line = line.trim_start_matches(['\'', '"', '`']);
    let (addr, rest) = line.split_once(' ')?;
    if !addr.contains('.') {
        return None;
    }
    let bdf: Bdf = match addr.rsplit_once('/') {
        Some((first, last)) => {
            let domain = first.split('/').next()?;
            let domain = (domain.matches(':').count() == 2)
                .then(|| domain.split(':').next())
                .flatten();
            match domain {
                Some(d) => format!("{d}:{last}").parse().ok()?,
                None => last.parse().ok()?,
            }
        }
        None => addr.parse().ok()?,
    };
    rest.contains(": ").then_some((bdf, rest))
}

/// Class and ids from the header's text after the address.
fn class_and_ids(rest: &str) -> (Option<u32>, Option<(u16, u16)>) {
    let (class_text, tail) = rest.split_once(": ").unwrap_or((rest, ""));
    let bracket = |t: &str| -> Option<String> {
        let (_, r) = t.rsplit_once('[')?;
        Some(r.split_once(']')?.0.to_string())
    };
    let prog_if = number_hex_after(tail, "(prog-if ").unwrap_or(0);
    // Without pci.ids lspci prints the numbers: `Class 0300` (-vv), `0300` (-n).
    let numeric = |t: &str| {
        let t = t.strip_prefix("Class ").unwrap_or(t);
        (t.len() == 4).then(|| u32::from_str_radix(t, 16).ok()).flatten()
    };
    let class = bracket(class_text)
        .and_then(|c| u32::from_str_radix(&c, 16).ok())
        .or_else(|| numeric(class_text))
        .or_else(|| {
            let name = class_text.split(" [").next().unwrap_or(class_text);
            CLASSES.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
        })
        .map(|c| c << 8 | prog_if);
    let ids = tail
        .split('[')
        .skip(1)
        .filter_map(|s| s.split_once(']').map(|(inner, _)| inner))
        .find_map(|inner| {
            let (v, d) = inner.split_once(':')?;
            let hex4 = |t: &str| (t.len() == 4).then(|| u16::from_str_radix(t, 16).ok()).flatten();
            Some((hex4(v)?, hex4(d)?))
        })
        .or_else(|| {
            // `Device 1002:67df (rev cf)` (-vv without pci.ids), `1002:67df` (-n).
            tail.split_whitespace().find_map(|w| {
                let (v, d) = w.split_once(':')?;
                let hex4 = |t: &str| (t.len() == 4).then(|| u16::from_str_radix(t, 16).ok()).flatten();
                Some((hex4(v)?, hex4(d)?))
            })
        });
    (class, ids)
}

/// `00: 86 80 04 2f ...`: the offset and the bytes, or `None` for any other line.
fn hex_line(line: &str) -> Option<(usize, Vec<u8>)> {
    let (off, bytes) = line.split_once(": ")?;
    if off.is_empty() || off.len() > 3 || !off.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Option<Vec<u8>> = bytes
        .split_whitespace()
        .map(|b| (b.len() == 2).then(|| u8::from_str_radix(b, 16).ok()).flatten())
        .collect();
    Some((usize::from_str_radix(off, 16).ok()?, bytes?))
}

/// The capability the deeper-indented lines belong to.
#[derive(Clone, Copy, PartialEq)]
enum Section {
    Other,
    Express,
    PowerManagement,
    Aer,
    Acs,
}

/// One function being read.
struct Reading {
    f: LspciFunction,
    express: Option<ExpressText>,
    section: Section,
    aer: Option<AerStatus>,
    denied: bool,
    /// A `Status:` line: lspci printed the function's registers (`-v` or more).
    registers_shown: bool,
    /// The AER status register being read (`UESta`: true, `CESta`: false) while its line
    /// continues.
    aer_register: Option<bool>,
    /// The poster cut rows out of the function's hex dump (`...`).
    hex_cut: bool,
    /// lspci's `!!! Unknown header type 7f`: the header read all ones.
    unanswered: bool,
}

impl Reading {
    fn new(bdf: Bdf, rest: &str) -> Reading {
        let (class, ids) = class_and_ids(rest);
        Reading {
            f: LspciFunction {
                bdf,
                class,
                ids,
                driver: None,
                numa_node: None,
                buses: None,
                power_state: None,
                capabilities: Capabilities::NotShown,
                hex: Vec::new(),
                trimmed_link: None,
                acs: None,
            },
            express: None,
            section: Section::Other,
            aer: None,
            denied: false,
            registers_shown: false,
            aer_register: None,
            hex_cut: false,
            unanswered: false,
        }
    }

    /// An indented line: `depth` tabs (or groups of spaces) before `text`.
    fn line(&mut self, depth: usize, text: &str) {
        if depth == 1 {
            self.section = Section::Other;
            self.aer_register = None;
            if let Some(cap) = text.strip_prefix("Capabilities: ") {
                self.capability(cap);
            } else if let Some(d) = text.strip_prefix("Kernel driver in use: ") {
                // A driver's name is one word that names a directory: the rest of a line a
                // paste ran together is not part of it, and no control byte (a NUL) is.
                self.f.driver = d
                    .split_whitespace()
                    .next()
                    .filter(|d| {
                        d.len() <= 255
                            && !d.contains('/')
                            && !d.chars().any(char::is_control)
                            && !matches!(*d, "." | "..")
                    })
                    .map(str::to_string);
            } else if let Some(n) = text.strip_prefix("NUMA node: ") {
                self.f.numa_node = n.trim().parse().ok();
            } else if text.starts_with("Status: ") {
                self.registers_shown = true;
            } else if text.starts_with("!!! Unknown header type 7f") {
                self.unanswered = true;
            } else if let Some(b) = text.strip_prefix("Bus: ") {
                let num = |k: &str| number_hex_after(b, k).and_then(|v| u8::try_from(v).ok());
                if let (Some(s), Some(e)) = (num("secondary="), num("subordinate=")) {
                    self.f.buses = Some((s, e));
                }
            }
            return;
        }
        if self.section == Section::PowerManagement && depth == 2 {
            if let Some(s) = text.strip_prefix("Status: ") {
                let state = s.split_whitespace().next().unwrap_or("");
                self.f.power_state = match state {
                    "D3" => Some("D3hot".into()),
                    "D0" | "D1" | "D2" => Some(state.into()),
                    _ => None,
                };
            }
        }
        if let (Section::Acs, 2) = (self.section, depth) {
            caps2::acs_line(&mut self.f.acs, text);
        }
        if self.section == Section::Aer {
            // `CESta:\tRxErr+ BadTLP- ...`: the types marked +, on the register's line and the
            // lines it continues on (pciutils 3.13 wraps UESta; so do mail clients). Only these
            // lines make the status known: an lspci that does not decode AER prints `<?>`.
            if depth == 2 {
                self.aer_register = match text.split_once(':').map(|(k, _)| k) {
                    Some("UESta") => Some(true),
                    Some("CESta") => Some(false),
                    _ => None,
                };
            }
            let Some(uncorrectable) = self.aer_register else {
                return;
            };
            let status = self.aer.get_or_insert_default();
            let (register, table) = if uncorrectable {
                (&mut status.uncorrectable, &UNCORRECTABLE_BITS[..])
            } else {
                (&mut status.correctable, &CORRECTABLE_BITS[..])
            };
            for word in text.split_whitespace().filter_map(|w| w.strip_suffix('+')) {
                let word = if word == "AdvNonFatalErr" { "NonFatalErr" } else { word };
                if let Some((bit, _)) = table.iter().find(|(_, n)| *n == word) {
                    *register |= 1 << bit;
                }
            }
        }
        if let (Section::Express, Some(x)) = (self.section, self.express.as_mut()) {
            if depth == 2 {
                if let Some((key, value)) = text.split_once(':') {
                    x.regs.push((key.trim().to_string(), value.trim().to_string()));
                }
            } else if let Some((_, v)) = x.regs.last_mut() {
                v.push(' ');
                v.push_str(text.trim());
            }
        }
    }

    fn capability(&mut self, cap: &str) {
        if cap.starts_with("<access denied>") {
            self.denied = true;
            return;
        }
        let name = cap.split_once("] ").map_or(cap, |(_, n)| n);
        if let Some(kind) = name.strip_prefix("Express ") {
            // `(v2) Root Port (Slot+), MSI 00`: the version is optional in old lspci.
            let kind = kind
                .split_once(") ")
                .filter(|_| kind.starts_with('('))
                .map_or(kind, |(_, k)| k);
            self.express = Some(ExpressText {
                kind: kind.to_string(),
                regs: Vec::new(),
            });
            self.section = Section::Express;
        } else if name.starts_with("Power Management") {
            self.section = Section::PowerManagement;
        } else if name.starts_with("Advanced Error Reporting") {
            self.section = Section::Aer;
        } else if name.starts_with("Access Control Services") {
            self.section = Section::Acs;
        }
    }

    fn finish(mut self) -> LspciFunction {
        let express = self.express.as_ref().map(ExpressText::decode);
        if let (Some(None), Some(x)) = (&express, &self.express) {
            self.f.trimmed_link = x.link();
        }
        self.f.capabilities = if self.unanswered {
            Capabilities::Unanswered
        } else if self.denied {
            Capabilities::Denied
        } else {
            match express {
                // The capability is listed, its registers are not: lspci -v.
                Some(None) => Capabilities::NotShown,
                Some(Some(x)) => Capabilities::Decoded {
                    express: Some(x),
                    aer: self.aer,
                },
                // lspci lists every capability it can read: none listed, none there.
                None if self.registers_shown => Capabilities::Decoded {
                    express: None,
                    aer: self.aer,
                },
                None => Capabilities::NotShown,
            }
        };
        if let Some(h) = self.f.hex.get(..0x1b) {
            // The dump's own header says exactly what the text names (lspci without -nn).
            let word = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
            self.f.ids = Some((word(0), word(2)));
            self.f.class = Some(u32::from(h[11]) << 16 | u32::from(h[10]) << 8 | u32::from(h[9]));
            if h[0x0e] & 0x7f == 1 && self.f.buses.is_none() {
                self.f.buses = Some((h[0x19], h[0x1a]));
            }
        }
        if self.f.buses.is_some() && self.f.class.is_none_or(|c| c >> 16 != 0x06) {
            // A type-1 header is a bridge whatever its class name.
            self.f.class = Some(0x060400);
        }
        self.f
    }
}

/// The lines lspci prints one level under a function (`Capabilities: [70] Express ...`, the
/// driver, the NUMA node, the bus range), and those it prints under a capability: the
/// registers of the Express, AER, ACS and power-management capabilities.
const FUNCTION_KEYS: [&str; 6] = [
    "Capabilities",
    "Kernel driver in use",
    "Kernel modules",
    "NUMA node",
    "Bus",
    "Status",
];
const CAPABILITY_KEYS: [&str; 30] = [
    "DevCap",
    "DevCtl",
    "DevSta",
    "LnkCap",
    "LnkCtl",
    "LnkSta",
    "SltCap",
    "SltCtl",
    "SltSta",
    "RootCap",
    "RootCtl",
    "RootSta",
    "DevCap2",
    "DevCtl2",
    "DevSta2",
    "LnkCap2",
    "LnkCtl2",
    "LnkSta2",
    "UESta",
    "UEMsk",
    "UESvrt",
    "CESta",
    "CEMsk",
    "AERCap",
    "HeaderLog",
    "RootCmd",
    "ErrorSrc",
    "ACSCap",
    "ACSCtl",
    "Flags",
];

/// The level of a line of a function's record that starts at the margin: by its key where the
/// paste lost its indentation, else the rest of a wrapped line (`usize::MAX`). `Status:` is
/// the power-management capability's (`Status: D0 ...`) inside it, the function's elsewhere.
fn stripped_depth(text: &str, section: Section) -> usize {
    let Some((key, value)) = text.split_once(':') else {
        return usize::MAX;
    };
    let pm_status = key == "Status" && section == Section::PowerManagement && value.trim_start().starts_with('D');
    if CAPABILITY_KEYS.contains(&key) || pm_status {
        2
    } else if FUNCTION_KEYS.contains(&key) {
        1
    } else {
        usize::MAX
    }
}

/// A line's depth and text: leading tabs as lspci prints them, or, in a dump whose tabs an
/// editor or a web page turned into spaces, groups of `unit` spaces.
fn indent(line: &str, unit: usize) -> (usize, &str) {
    let text = line.trim_start_matches([' ', '\t']);
    let lead = &line[..line.len() - text.len()];
    let tabs = lead.matches('\t').count();
    // A mail client's space before the tabs is no level.
    let after_tabs = lead.rsplit_once('\t').map_or(lead, |(_, s)| s);
    let spaces = after_tabs.matches(' ').count();
    (tabs + spaces.div_ceil(unit), text)
}

/// The spaces of one level where no line is indented by tabs: the shallowest indentation of
/// the lines from the first function on (the prose and mail headers above a paste do not set
/// it: a `Subject:` continued on a line with one space would).
fn space_unit(lines: &[&str]) -> usize {
    let first = lines
        .iter()
        .position(|l| header(l.trim_start_matches([' ', '\t']).trim_end()).is_some())
        .unwrap_or(0);
    let lines = &lines[first..];
    let lead = |l: &str| l.len() - l.trim_start_matches([' ', '\t']).len();
    if lines.iter().any(|l| l.trim_start_matches(' ').starts_with('\t')) {
        return 8;
    }
    lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .map(lead)
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(8)
}

/// A dump as an e-mail archive keeps it quoted-printable (`=3D` for `=`, a line ending in `=`
/// continued on the next): decoded where it shows both.
fn unquote_printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !(text.contains("=3D") && text.contains("=\n")) {
        return text.into();
    }
    text.replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=")
        .replace("=20", " ")
        .into()
}

/// The dump's lines without the frame a bug report puts around them: e-mail quote marks
/// (`> `, `>>`) and the indentation of its first function line (a Markdown code block, a
/// log's prefix of spaces). No line lspci prints starts with `>`.
fn strip_quotes(mut l: &str) -> &str {
    while let Some(rest) = l.strip_prefix('>') {
        l = rest.strip_prefix(' ').unwrap_or(rest);
    }
    l
}

fn unframe(text: &str) -> Vec<&str> {
    let unquoted: Vec<&str> = text.lines().map(strip_quotes).collect();
    let base = unquoted
        .iter()
        .find_map(|l| {
            let body = l.trim_start_matches([' ', '\t']);
            header(body.trim_end()).map(|_| &l[..l.len() - body.len()])
        })
        .unwrap_or("");
    unquoted
        .into_iter()
        .map(|l| l.strip_prefix(base).unwrap_or(l))
        .collect()
}

/// The functions of an `lspci -vvv` dump (`-nn`, `-D`, `-xxx`/`-xxxx` are read where given),
/// also as quoted in an e-mail or indented in a Markdown post; lines of other kinds are passed
/// over.
pub fn parse(text: &str) -> Result<Vec<LspciFunction>, LspciError> {
    let mut out: Vec<LspciFunction> = Vec::new();
    let mut cur: Option<Reading> = None;
    // Quote marks first, so that a quoted-printable paste quoted again decodes the same.
    let unquoted: String = text.lines().map(|l| format!("{}\n", strip_quotes(l))).collect();
    let text = unquote_printable(&unquoted);
    let lines = unframe(&text);
    let unit = space_unit(&lines);
    for (n, raw) in lines.into_iter().enumerate() {
        let line = raw.trim_end();
        let (depth, body) = indent(line, unit);
        if body.is_empty() {
            continue;
        }
        if depth == 0 {
            if let Some((bdf, rest)) = header(body) {
                out.extend(cur.take().map(Reading::finish));
                cur = Some(Reading::new(bdf, rest));
                continue;
            }
            let Some(r) = cur.as_mut() else { continue };
            // `...` where a poster cut rows of a hex dump: the rows after it are not the
            // function's config space in order, so what was read before the cut is all.
            if matches!(body, "..." | "[...]" | "\u{2026}") && !r.f.hex.is_empty() {
                r.hex_cut = true;
                continue;
            }
            let hex = hex_line(body);
            if hex.is_some() && r.hex_cut {
                continue;
            }
            let Some((off, bytes)) = hex else {
                // A paste whose indentation was stripped: a line lspci prints under a function
                // or a capability keeps its level by its key. Any other line is the rest of a
                // register line a mail client wrapped.
                r.line(stripped_depth(body, r.section), body);
                continue;
            };
            if off != r.f.hex.len() || bytes.is_empty() || bytes.len() > 16 || off >= 4096 {
                return Err(LspciError::BadHex {
                    line: n + 1,
                    text: body.chars().take(80).collect(),
                });
            }
            r.f.hex.extend(bytes);
            continue;
        }
        if let Some(r) = cur.as_mut() {
            r.line(depth, body);
        }
    }
    out.extend(cur.map(Reading::finish));
    if out.is_empty() {
        return Err(LspciError::NoFunctions);
    }
    one_record_each(out)
}

/// A post that shows `lspci` and then `lspci -vv -s BDF` lists one function twice: its record
/// with registers stands for the bare header line. Two records of one address with more than
/// a header each, or two bare lines, are two hosts' output.
fn one_record_each(functions: Vec<LspciFunction>) -> Result<Vec<LspciFunction>, LspciError> {
    let bare = |f: &LspciFunction| {
        f.capabilities == Capabilities::NotShown
            && f.hex.is_empty()
            && f.driver.is_none()
            && f.buses.is_none()
            && f.numa_node.is_none()
    };
    let mut out: Vec<LspciFunction> = Vec::with_capacity(functions.len());
    let mut at = std::collections::HashMap::new();
    for f in functions {
        match at.get(&f.bdf) {
            None => {
                at.insert(f.bdf, out.len());
                out.push(f);
            }
            Some(&i) if bare(&out[i]) != bare(&f) => {
                if bare(&out[i]) {
                    out[i] = f;
                }
            }
            Some(_) => return Err(LspciError::Duplicate(f.bdf)),
        }
    }
    Ok(out)
}

/// Where a function's config space in the snapshot comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFrom {
    /// The dump's hex bytes (`-xxx`, `-xxxx`).
    Dump,
    /// Built from the registers lspci decoded.
    Registers,
    /// The 64-byte header Linux shows without root: the capabilities are unknown.
    HeaderOnly,
}

impl LspciFunction {
    /// The function's config space as the snapshot holds it, and where it comes from.
    pub fn config(&self) -> (Vec<u8>, ConfigFrom) {
        if self.hex.len() >= 64 {
            return (self.hex.clone(), ConfigFrom::Dump);
        }
        if self.capabilities == Capabilities::Unanswered {
            // What reading it gives, as the kernel's `config` file of such a function does.
            return (vec![0xff; 64], ConfigFrom::HeaderOnly);
        }
        let (vendor, device) = self.ids.unwrap_or((0xffff, 0xffff));
        let class = self.class.unwrap_or(0);
        let Capabilities::Decoded { express, aer } = &self.capabilities else {
            let header = ConfigBuilder::conventional(vendor, device, class).build()[..64].to_vec();
            return (header, ConfigFrom::HeaderOnly);
        };
        let b = match express {
            Some(x) => {
                let b = ConfigBuilder::new(vendor, device, class, x.port_type)
                    .mps(x.mps_supported, x.mps)
                    .mrrs(x.mrrs)
                    .tags(x.ext_tag.0, x.ext_tag.1, x.tags10);
                let b = match x.link {
                    Some(l) => b.link(l),
                    None => b,
                };
                let b = caps2::atomics_into(b, x.atomics);
                match x.target_speed {
                    Some(t) => b.target_speed(t),
                    None => b,
                }
            }
            None => ConfigBuilder::conventional(vendor, device, class),
        };
        let b = match aer {
            Some(status) => b.aer_status(*status),
            None => b,
        };
        let b = match self.acs {
            Some(acs) => b.acs(acs),
            None => b,
        };
        (b.build(), ConfigFrom::Registers)
    }
}

/// What [`write_snapshot`] laid out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LspciSummary {
    pub functions: usize,
    /// Config spaces copied from hex dumps.
    pub dumped: usize,
    /// Config spaces built from decoded registers.
    pub decoded: usize,
    /// Functions with the 64-byte header only: capabilities denied or not decoded.
    pub header_only: usize,
    pub denied: usize,
    /// Functions whose config space read all ones (`!!! Unknown header type 7f`).
    pub unanswered: usize,
    /// Links with lanes whose maximum speed lspci printed as `unknown` (a pciutils older than
    /// their generation).
    pub unknown_speed: usize,
}

impl LspciSummary {
    /// What the dump leaves unknown, in a sentence; `None` when it shows every function's
    /// registers and every link's speed.
    pub fn gaps(&self) -> Option<String> {
        let mut unread = Vec::new();
        if self.denied > 0 {
            unread.push(format!(
                "lspci could not read the capabilities of {} functions (it ran without root: run `sudo lspci -vvv`)",
                self.denied
            ));
        }
        if self.unanswered > 0 {
            unread.push(format!(
                "{} functions read all ones (lspci: \"!!! Unknown header type 7f\"): powered off (D3cold) \
                 or gone from the bus (a link that went down, a reset that did not finish)",
                self.unanswered
            ));
        }
        let undecoded = self.header_only - self.denied - self.unanswered;
        if undecoded > 0 {
            unread.push(format!(
                "lspci did not decode the registers of {undecoded} functions (run it with -vvv)"
            ));
        }
        let mut gaps = Vec::new();
        if !unread.is_empty() {
            gaps.push(format!(
                "{}: their links, MPS/MRRS, tags and ASPM are unknown",
                unread.join("; ")
            ));
        }
        if self.unknown_speed > 0 {
            gaps.push(format!(
                "lspci printed \"Speed unknown\" for {} links with lanes (a pciutils older than their \
                 PCIe generation: run a newer lspci): their speed goes unchecked",
                self.unknown_speed
            ));
        }
        (!gaps.is_empty()).then(|| gaps.join("; "))
    }
}

/// The bridges above `f`, root port first: each one the bridge whose bus range holds the bus
/// below it (the narrowest, as a switch's ports lie inside its upstream port's range).
fn chain(f: &LspciFunction, bridges: &[&LspciFunction]) -> Vec<Bdf> {
    let mut up = Vec::new();
    let mut at = f;
    while up.len() < 256 {
        let parent = bridges
            .iter()
            .copied()
            .filter(|b| b.bdf.domain == at.bdf.domain && b.bdf != at.bdf && !up.contains(&b.bdf))
            .filter_map(|b| b.buses.map(|(s, e)| (b, s, e)))
            .filter(|&(_, s, e)| s <= at.bdf.bus && at.bdf.bus <= e && s > 0)
            .filter(|&(b, s, _)| b.bdf.bus < s)
            .min_by_key(|&(_, s, e)| (e - s, std::cmp::Reverse(s)));
        match parent {
            Some((b, _, _)) => {
                up.push(b.bdf);
                at = b;
            }
            None => break,
        }
    }
    up.reverse();
    up
}

/// Writes `functions` as a sysfs tree into `out`, a new or empty directory, for `--sysfs`.
pub fn write_snapshot(functions: &[LspciFunction], out: &Path) -> Result<LspciSummary, SnapshotError> {
    let tree = crate::snapshot::new_output(out)?;
    let io = |e: std::io::Error| SnapshotError::Io(out.to_path_buf(), e);
    let mut s = LspciSummary::default();
    let mut nodes = BTreeSet::new();
    let bridges: Vec<&LspciFunction> = functions.iter().filter(|f| f.buses.is_some()).collect();
    for f in functions {
        let name = f.bdf.to_string();
        let mut attrs: Vec<(&str, String)> = Vec::new();
        if let Some(c) = f.class {
            attrs.push(("class", format!("0x{c:06x}")));
        }
        if let Some((v, d)) = f.ids {
            attrs.push(("vendor", format!("0x{v:04x}")));
            attrs.push(("device", format!("0x{d:04x}")));
        }
        if let Some(n) = f.numa_node {
            attrs.push(("numa_node", n.to_string()));
            nodes.insert(n);
        }
        if let Some((sec, sub)) = f.buses {
            attrs.push(("secondary_bus_number", sec.to_string()));
            attrs.push(("subordinate_bus_number", sub.to_string()));
        }
        if let Some(p) = &f.power_state {
            attrs.push(("power_state", p.clone()));
        }
        let express = match &f.capabilities {
            Capabilities::Decoded { express, .. } => express.as_ref(),
            _ => None,
        };
        if let Some(l) = express.and_then(|x| x.link).or(f.trimmed_link) {
            // An old pciutils cannot name the capability's speed either; a current speed it
            // cannot name beside a named maximum is a link that is down (an empty port's
            // register), not the tool's age.
            s.unknown_speed += usize::from(l.width > 0 && l.max_gts == 0.0);
            attrs.push(("current_link_speed", LinkSpeed::kernel_text(l.gts)));
            attrs.push(("max_link_speed", LinkSpeed::kernel_text(l.max_gts)));
            attrs.push(("current_link_width", l.width.to_string()));
            attrs.push(("max_link_width", l.max_width.to_string()));
        }
        let chain: Vec<String> = chain(f, &bridges).iter().map(Bdf::to_string).collect();
        let chain: Vec<&str> = chain.iter().map(String::as_str).collect();
        let attrs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        write_pci_function(&tree, &chain, &name, &attrs, f.driver.as_deref()).map_err(io)?;
        let (config, from) = f.config();
        match from {
            ConfigFrom::Dump => s.dumped += 1,
            ConfigFrom::Registers => s.decoded += 1,
            ConfigFrom::HeaderOnly => {
                s.header_only += 1;
                s.denied += usize::from(f.capabilities == Capabilities::Denied);
                s.unanswered += usize::from(f.capabilities == Capabilities::Unanswered);
            }
        }
        // The function's own directory, not the bus link `write_config` follows: nothing in
        // the output directory is followed.
        let config_at = format!("{}/config", function_dir(&chain, &name));
        tree.write_new(&config_at, &config).map_err(io)?;
        s.functions += 1;
    }
    for n in nodes {
        let rel = format!("{NUMA_NODES}/node{n}");
        tree.subdir(&rel).map_err(|e| SnapshotError::Io(out.join(&rel), e))?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PciDevice;

    /// The pcie-bench host (E5-2637 v3 with the NFP-6000 and the NetFPGA-SUME) as `lspci -vvv`
    /// printed it as root, from the pcie-bench data directory.
    const E5: &str =
        include_str!("../../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro/sys-lspci.txt");

    /// A GPU behind a switch as `lspci -vvv -nn -D` prints it (registers as pciutils 3.10
    /// decodes them), the switch's upstream link trained at Gen4 x8.
    const SWITCH: &str = "\
0000:15:01.0 PCI bridge [0604]: Intel Corporation Device [8086:352a] (rev 04) (prog-if 00 [Normal decode])
\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tBus: primary=15, secondary=16, subordinate=18, sec-latency=0
\tCapabilities: [40] Express (v2) Root Port (Slot+), MSI 00
\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0
\t\t\tExtTag+ RBE+
\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-
\t\t\tRlxdOrd- ExtTag+ PhantFunc- AuxPwr- NoSnoop-
\t\t\tMaxPayload 256 bytes, MaxReadReq 512 bytes
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\t\tClockPM- Surprise+ LLActRep+ BwNot+ ASPMOptComp+
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+
\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)
\t\t\tTrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-
\t\tDevCap2: Completion Timeout: Range ABCD, TimeoutDis+ NROPrPrP- LTR+
\t\t\t 10BitTagComp+ 10BitTagReq+ OBFF Not Supported, ExtFmt+ EETLPPrefix-
\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR- 10BitTagReq+ OBFF Disabled,
\tCapabilities: [100 v2] Advanced Error Reporting
\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP-
\t\tCESta:\tRxErr+ BadTLP- BadDLLP+ Rollover- Timeout- AdvNonFatalErr-
\tKernel driver in use: pcieport
\tNUMA node: 0

0000:16:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) (prog-if 00 [Normal decode])
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tBus: primary=16, secondary=17, subordinate=18, sec-latency=0
\tCapabilities: [68] Express (v2) Upstream Port, MSI 00
\t\tDevCap:\tMaxPayload 2048 bytes, PhantFunc 0
\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ SlotPowerLimit 0W
\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-
\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+
\t\t\tMaxPayload 256 bytes, MaxReadReq 512 bytes
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkCtl:\tASPM L1 Enabled; Disabled- CommClk+
\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)
\tKernel driver in use: pcieport
\tNUMA node: 0

0000:17:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) (prog-if 00 [Normal decode])
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tBus: primary=17, secondary=18, subordinate=18, sec-latency=0
\tCapabilities: [68] Express (v2) Downstream Port (Slot+), MSI 00
\t\tDevCap:\tMaxPayload 2048 bytes, PhantFunc 0
\t\t\tExtTag+ RBE+
\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-
\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+
\t\t\tMaxPayload 256 bytes, MaxReadReq 512 bytes
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkCtl:\tASPM Disabled; Disabled- CommClk+
\t\tLnkSta:\tSpeed 32GT/s, Width x16
\tKernel driver in use: pcieport

0000:18:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:16c1]
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tCapabilities: [60] Power Management version 3
\t\tFlags: PMEClk- DSI- D1- D2- AuxCurrent=0mA PME(D0+,D1-,D2-,D3hot+,D3cold-)
\t\tStatus: D3 NoSoftRst+ PME-Enable- DSel=0 DScale=0 PME-
\tCapabilities: [78] Express (v2) Endpoint, MSI 00
\t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0, Latency L0s unlimited, L1 <64us
\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0W
\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-
\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-
\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+
\t\tLnkSta:\tSpeed 32GT/s, Width x16
\t\tDevCap2: Completion Timeout: Range AB, TimeoutDis+ NROPrPrP- LTR-
\t\t\t 10BitTagComp+ 10BitTagReq+ OBFF Not Supported, ExtFmt- EETLPPrefix-
\t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR- 10BitTagReq- OBFF Disabled,
\tCapabilities: [100 v1] Advanced Error Reporting
\tKernel driver in use: nvidia
\tNUMA node: 0

0000:30:00.0 Ethernet controller [0200]: Mellanox Technologies MT28908 Family [ConnectX-6] [15b3:101b]
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tCapabilities: <access denied>
\tKernel driver in use: mlx5_core
";

    fn find(fs: &[LspciFunction], bdf: &str) -> LspciFunction {
        let b: Bdf = bdf.parse().unwrap();
        fs.iter().find(|f| f.bdf == b).cloned().unwrap()
    }

    fn express(f: &LspciFunction) -> Express {
        match &f.capabilities {
            Capabilities::Decoded { express: Some(x), .. } => x.clone(),
            other => panic!("{}: {other:?}", f.bdf),
        }
    }

    #[test]
    fn the_pcie_bench_hosts_dump_reads_register_by_register() {
        let fs = parse(E5).unwrap();
        assert_eq!(fs.len(), 91);
        let nfp = find(&fs, "02:00.0");
        assert_eq!((nfp.class, nfp.ids), (Some(0x020000), None));
        assert_eq!(nfp.driver.as_deref(), Some("nfp-pciebench"));
        assert_eq!(nfp.power_state.as_deref(), Some("D0"));
        let x = express(&nfp);
        assert_eq!(x.port_type, PortType::Endpoint);
        assert_eq!(
            (x.mps_supported, x.mps, x.mrrs, x.ext_tag, x.tags10),
            (512, 256, 512, (false, false), None)
        );
        let both = Aspm { l0s: true, l1: true };
        assert_eq!(
            x.link,
            Some(LinkSetup {
                max_gts: 8.0,
                max_width: 8,
                gts: 8.0,
                width: 8,
                aspm_supported: both,
                aspm_enabled: Aspm::default(),
            })
        );
        // AER: the advisory non-fatal bit (CESta NonFatalErr+) is the one status bit set.
        let aer = AerStatus {
            uncorrectable: 0,
            correctable: 1 << 13,
        };
        assert!(matches!(nfp.capabilities, Capabilities::Decoded { aer: Some(a), .. } if a == aer));
        assert_eq!(aer.correctable_names(), ["NonFatalErr"]);
        // The empty root port: its link is down (x0), its bus range its own.
        let port = find(&fs, "00:01.0");
        assert_eq!((port.class, port.buses), (Some(0x060400), Some((1, 1))));
        let l = express(&port).link.unwrap();
        assert_eq!((l.max_gts, l.max_width, l.gts, l.width), (8.0, 8, 2.5, 0));
        assert_eq!(express(&port).target_speed, Some(8.0));
        // The DMI port: Target Link Speed 2.5 GT/s of its 5.
        assert_eq!(l.aspm_supported, Aspm { l0s: false, l1: true });
        assert_eq!(express(&find(&fs, "00:00.0")).target_speed, Some(2.5));
        // The BMC's VGA sits behind the ASPEED bridge below a PCH root port.
        let vga = find(&fs, "06:00.0");
        let bridges: Vec<&LspciFunction> = fs.iter().filter(|f| f.buses.is_some()).collect();
        assert_eq!(
            chain(&vga, &bridges),
            ["00:1c.2".parse::<Bdf>().unwrap(), "05:00.0".parse().unwrap()]
        );
        // Uncore functions without capabilities are read as such, not as unknown.
        let uncore = find(&fs, "ff:13.0");
        assert_eq!(
            uncore.capabilities,
            Capabilities::Decoded {
                express: None,
                aer: None
            }
        );
    }

    #[test]
    fn ids_domains_downgrades_aspm_10_bit_tags_power_and_denied_capabilities() {
        let fs = parse(SWITCH).unwrap();
        assert_eq!(fs.len(), 5);
        let gpu = find(&fs, "0000:18:00.0");
        assert_eq!((gpu.class, gpu.ids), (Some(0x030200), Some((0x10de, 0x2330))));
        assert_eq!((gpu.numa_node, gpu.power_state.as_deref()), (Some(0), Some("D3hot")));
        assert_eq!(express(&gpu).tags10, Some((true, true, false)));
        assert_eq!(express(&gpu).mrrs, 4096);
        let up = find(&fs, "0000:16:00.0");
        let l = express(&up).link.unwrap();
        assert_eq!((l.gts, l.width, l.max_gts, l.max_width), (16.0, 8, 32.0, 16));
        assert_eq!(l.aspm_enabled, Aspm { l0s: false, l1: true });
        assert_eq!(express(&up).port_type, PortType::UpstreamPort);
        let port = find(&fs, "0000:15:01.0");
        assert_eq!(express(&port).tags10, Some((true, true, true)));
        let Capabilities::Decoded { aer: Some(status), .. } = port.capabilities else {
            panic!("{port:?}")
        };
        assert_eq!(
            (status.correctable_names(), status.uncorrectable),
            (vec!["RxErr", "BadDLLP"], 0)
        );
        let bridges: Vec<&LspciFunction> = fs.iter().filter(|f| f.buses.is_some()).collect();
        let names: Vec<String> = chain(&gpu, &bridges).iter().map(Bdf::to_string).collect();
        assert_eq!(names, ["0000:15:01.0", "0000:16:00.0", "0000:17:00.0"]);
        let nic = find(&fs, "0000:30:00.0");
        assert_eq!(nic.capabilities, Capabilities::Denied);
        assert_eq!(nic.ids, Some((0x15b3, 0x101b)));
    }

    fn temp(tag: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("pcie-sysfs-lspci-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn a_snapshot_of_the_dump_reads_back_as_lspci_decoded_it() {
        let fs = parse(SWITCH).unwrap();
        let out = temp("switch");
        let s = write_snapshot(&fs, &out).unwrap();
        assert_eq!(
            (s.functions, s.dumped, s.decoded, s.header_only, s.denied),
            (5, 0, 4, 1, 1)
        );
        assert!(s
            .gaps()
            .unwrap()
            .starts_with("lspci could not read the capabilities of 1 functions"));
        let devs = PciDevice::discover(&out).unwrap();
        assert_eq!(devs.len(), 5);
        let gpu = devs.iter().find(|d| d.bdf.to_string() == "0000:18:00.0").unwrap();
        assert_eq!(
            gpu.upstream_bdf().map(|b| b.to_string()).as_deref(),
            Some("0000:17:00.0")
        );
        assert_eq!(
            (gpu.vendor, gpu.device, gpu.class),
            (Some(0x10de), Some(0x2330), Some(0x030200))
        );
        assert_eq!(gpu.driver.as_deref(), Some("nvidia"));
        let cap = gpu.pcie_capability().unwrap();
        let x = express(&find(&fs, "0000:18:00.0"));
        assert_eq!(
            (cap.control.mps, cap.control.mrrs, cap.control.mps_supported),
            (x.mps, x.mrrs, x.mps_supported)
        );
        let up = devs.iter().find(|d| d.bdf.to_string() == "0000:16:00.0").unwrap();
        assert_eq!(up.current_link_speed.as_deref(), Some("16.0 GT/s PCIe"));
        assert_eq!((up.current_link_width, up.max_link_width), (Some(8), Some(16)));
        let nic = devs.iter().find(|d| d.bdf.to_string() == "0000:30:00.0").unwrap();
        assert_eq!(nic.config_bytes().unwrap().len(), 64);
        assert!(nic.pcie_capability().is_err());
        assert!(out.join(NUMA_NODES).join("node0").is_dir());
        assert!(matches!(write_snapshot(&fs, &out), Err(SnapshotError::Refused(..))));
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_dump_whose_tabs_became_spaces_reads_the_same() {
        for unit in [2, 4, 8] {
            let spaced = SWITCH.replace('\t', &" ".repeat(unit));
            assert_eq!(parse(&spaced).unwrap(), parse(SWITCH).unwrap(), "{unit} spaces");
        }
    }

    #[test]
    fn a_dump_quoted_in_an_e_mail_or_indented_in_a_post_reads_the_same() {
        let frame = |prefix: &str, text: &str| -> String { text.lines().map(|l| format!("{prefix}{l}\n")).collect() };
        let spaced = SWITCH.replace('\t', "    ");
        for framed in [
            frame("> ", SWITCH),
            frame(">> > ", SWITCH),
            frame(">", SWITCH),
            frame("    ", SWITCH),
            frame("    ", &spaced),
            frame("> ", &frame("  ", &spaced)),
        ] {
            assert_eq!(parse(&framed).unwrap(), parse(SWITCH).unwrap(), "{}", &framed[..40]);
        }
    }

    /// A root port and a NIC as an lspci of about 2010 printed them (pciutils 3.1): errors
    /// reported by name in DevCtl, LnkSta's flags on its own line, AER listed but not decoded,
    /// and a link speed it has no name for.
    const OLD: &str = "\
00:1c.0 PCI bridge: Intel Corporation 82801JI (ICH10 Family) PCI Express Root Port 1 (prog-if 00 [Normal decode])
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tBus: primary=00, secondary=02, subordinate=02, sec-latency=0
\tCapabilities: [40] Express (v1) Root Port (Slot+), MSI 00
\t\tDevCap:\tMaxPayload 128 bytes, PhantFunc 0, Latency L0s <64ns, L1 <1us
\t\t\tExtTag- RBE- FLReset-
\t\tDevCtl:\tReport errors: Correctable- Non-Fatal- Fatal- Unsupported-
\t\t\tRlxdOrd- ExtTag- PhantFunc- AuxPwr- NoSnoop-
\t\t\tMaxPayload 128 bytes, MaxReadReq 128 bytes
\t\tLnkCap:\tPort #1, Speed 2.5GT/s, Width x4, ASPM L0s L1, Latency L0 <256ns, L1 <4us
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes Disabled- Retrain- CommClk+
\t\tLnkSta:\tSpeed 2.5GT/s, Width x1, TrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-
\tCapabilities: [100] Virtual Channel <?>
\tKernel driver in use: pcieport

02:00.0 Ethernet controller: Intel Corporation 82574L Gigabit Network Connection
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tCapabilities: [e0] Express (v1) Endpoint, MSI 00
\t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0, Latency L0s <512ns, L1 <64us
\t\t\tExtTag- AttnBtn- AttnInd- PwrInd- RBE+ FLReset-
\t\tDevCtl:\tReport errors: Correctable+ Non-Fatal+ Fatal+ Unsupported+
\t\t\tRlxdOrd- ExtTag- PhantFunc- AuxPwr- NoSnoop+
\t\t\tMaxPayload 128 bytes, MaxReadReq 512 bytes
\t\tLnkCap:\tPort #8, Speed unknown, Width x1, ASPM L0s L1, Latency L0 <128ns, L1 <64us
\t\tLnkCtl:\tASPM L0s L1 Enabled; RCB 64 bytes Disabled- Retrain- CommClk+
\t\tLnkSta:\tSpeed unknown, Width x1, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-
\tCapabilities: [100] Advanced Error Reporting <?>
\tKernel driver in use: e1000e
";

    #[test]
    fn an_old_lspci_reads_and_what_it_could_not_name_is_said() {
        let fs = parse(OLD).unwrap();
        let port = express(&find(&fs, "0000:00:1c.0"));
        assert_eq!(
            (port.port_type, port.mps_supported, port.mps, port.mrrs),
            (PortType::RootPort, 128, 128, 128)
        );
        let l = port.link.unwrap();
        assert_eq!((l.gts, l.width, l.max_gts, l.max_width), (2.5, 1, 2.5, 4));
        let nic = find(&fs, "0000:02:00.0");
        let x = express(&nic);
        assert_eq!((x.mps, x.mrrs, x.ext_tag, x.tags10), (128, 512, (false, false), None));
        let l = x.link.unwrap();
        assert_eq!((l.gts, l.max_gts, l.width), (0.0, 0.0, 1));
        assert_eq!(l.aspm_enabled, Aspm { l0s: true, l1: true });
        // AER listed but not decoded: its status is not known to be clear.
        assert!(
            matches!(nic.capabilities, Capabilities::Decoded { aer: None, .. }),
            "{nic:?}"
        );
        let dir = temp("old");
        let s = write_snapshot(&fs, &dir).unwrap();
        assert_eq!((s.decoded, s.unknown_speed), (2, 1));
        assert!(
            s.gaps()
                .unwrap()
                .starts_with("lspci printed \"Speed unknown\" for 1 links"),
            "{:?}",
            s.gaps()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_hex_dump_is_the_config_space_byte_for_byte() {
        let config = ConfigBuilder::endpoint(0x144d, 0xa80a, 0x010802)
            .mps(512, 128)
            .aer()
            .link(LinkSetup::at_max(16.0, 4))
            .build();
        // Its root port, as `lspci -xxx` alone shows it (256 bytes, no registers decoded): the
        // bus range comes from the type-1 header.
        let mut port = ConfigBuilder::new(0x8086, 0x347a, 0x060400, PortType::RootPort)
            .link(LinkSetup::at_max(16.0, 4))
            .build();
        (port[0x19], port[0x1a]) = (0xc1, 0xc1);
        let dump = |text: &mut String, header: &str, config: &[u8]| {
            text.push_str(header);
            for (i, row) in config.chunks(16).enumerate() {
                let bytes: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
                text.push_str(&format!("{:02x}: {}\n", i * 16, bytes.join(" ")));
            }
            text.push('\n');
        };
        let mut text = String::new();
        dump(
            &mut text,
            "c0:01.1 PCI bridge: Intel Corporation Device 347a\n",
            &port[..256],
        );
        dump(
            &mut text,
            "c1:00.0 Non-Volatile memory controller: Samsung Electronics Co Ltd NVMe SSD Controller PM9A1/PM9A3/980PRO (prog-if 02 [NVM Express])\n\tStatus: Cap+\n",
            &config,
        );
        let fs = parse(&text).unwrap();
        assert_eq!(fs[1].hex, config);
        // Ids and class from the dump's header: the text (without -nn) names no ids.
        assert_eq!((fs[1].class, fs[1].ids), (Some(0x010802), Some((0x144d, 0xa80a))));
        assert_eq!((fs[0].class, fs[0].buses), (Some(0x060400), Some((0xc1, 0xc1))));
        let out = temp("hex");
        assert_eq!(write_snapshot(&fs, &out).unwrap().dumped, 2);
        let devs = PciDevice::discover(&out).unwrap();
        assert_eq!(devs[1].config_bytes().unwrap(), config);
        assert_eq!(devs[1].upstream_bdf(), Some(fs[0].bdf));
        assert_eq!(devs[0].pcie_capability().unwrap().port_type, PortType::RootPort);
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn text_that_is_not_a_dump_is_refused_by_name() {
        assert_eq!(parse(""), Err(LspciError::NoFunctions));
        assert_eq!(parse("total 0\ndrwxr-xr-x 2 root root\n"), Err(LspciError::NoFunctions));
        let twice = "00:01.0 PCI bridge: x\n00:01.0 PCI bridge: x\n";
        assert_eq!(parse(twice), Err(LspciError::Duplicate("00:01.0".parse().unwrap())));
        // A bare `lspci` line and the same function's record, in either order: the record.
        let record = "00:01.0 PCI bridge: x\n\tBus: primary=00, secondary=01, subordinate=01\n";
        for text in [
            format!("00:01.0 PCI bridge: x\n{record}"),
            format!("{record}00:01.0 PCI bridge: x\n"),
        ] {
            let fs = parse(&text).unwrap();
            assert_eq!((fs.len(), fs[0].buses), (1, Some((1, 1))), "{text}");
        }
        assert!(matches!(
            parse(&format!("{record}{record}")),
            Err(LspciError::Duplicate(_))
        ));
        let skipped = "00:01.0 PCI bridge: x\n00: 86 80\n20: 00 00\n";
        assert!(matches!(parse(skipped), Err(LspciError::BadHex { line: 3, .. })));
        // Rows a poster cut (`...`): the rows after the cut are passed over, not refused.
        let cut = "00:01.0 PCI bridge: x\n00: ff ff ff ff\n...\nf0: ff ff\n";
        assert_eq!(parse(cut).unwrap()[0].hex, [0xff; 4]);
        let wide = format!("00:01.0 PCI bridge: x\n00: {}\n", ["00"; 17].join(" "));
        assert!(parse(&wide).unwrap_err().to_string().starts_with("line 2: "));
        // Truncated and mangled registers read as unknown, never a panic.
        let cut: String = SWITCH.chars().take(900).collect();
        assert_eq!(parse(&cut).unwrap().len(), 1);
        let mangled = SWITCH
            .replace("Speed 16GT/s", "Speed 99999999999999999999GT/s")
            .replace("x16", "x");
        for f in parse(&mangled).unwrap() {
            let _ = write_snapshot(&[f], &temp("mangled")).map(|_| ());
            let _ = std::fs::remove_dir_all(temp("mangled"));
        }
    }
}
