//! A function's config space as its `config` file shows it: the capability lists (walked with
//! loop and truncation checks) and the PCI Express capability's registers that sysfs has no
//! attribute for: device/port type, MPS and MRRS, tag sizes, link capabilities, control and
//! status, ASPM. Without root, Linux shows only the first 64 bytes of `config`, so the reasons
//! for a missing answer are kept. Nothing here writes to a device.

use std::fmt;

/// The standard capability list starts after the 64-byte header; the extended list at 0x100.
const HEADER: usize = 0x40;
const EXTENDED: usize = 0x100;
/// Capability IDs: PCI Express; extended: AER, Device Serial Number.
const CAP_PCIE: u8 = 0x10;
pub const EXT_CAP_AER: u16 = 0x0001;
pub const EXT_CAP_DSN: u16 = 0x0003;
/// Access Control Services (PCIe 6.0 7.7.11).
pub const EXT_CAP_ACS: u16 = 0x000d;

/// MPS and MRRS in force (Device Control), and the largest MPS supported (Device
/// Capabilities), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceControl {
    pub mps: u32,
    pub mrrs: u32,
    pub mps_supported: u32,
}

/// Why a config space dump does not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSpaceError {
    /// The `config` file could not be read (the I/O error's text).
    Unreadable(String),
    ShorterThanHeader,
    NoCapabilities,
    /// The capability list points past the readable bytes (their count).
    CapabilityBeyond(usize),
    EndsInsideCapability,
    NoPcieCapability,
    /// The capability list comes back to an offset it visited (that offset).
    CapabilityLoop(usize),
}

impl ConfigSpaceError {
    /// True when only root could read the answer (Linux shows 64 bytes to other users).
    pub fn needs_root(&self) -> bool {
        matches!(
            self,
            ConfigSpaceError::CapabilityBeyond(_) | ConfigSpaceError::EndsInsideCapability
        )
    }
}

impl fmt::Display for ConfigSpaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigSpaceError::Unreadable(e) => write!(f, "config space not readable: {e}"),
            ConfigSpaceError::ShorterThanHeader => f.write_str("config space shorter than its header"),
            ConfigSpaceError::NoCapabilities => f.write_str("the device lists no capabilities"),
            ConfigSpaceError::CapabilityBeyond(len) => write!(
                f,
                "the PCIe capability lies beyond the {len} readable bytes of config space (reading it needs root)"
            ),
            ConfigSpaceError::EndsInsideCapability => {
                f.write_str("config space ends inside the PCIe capability (reading it needs root)")
            }
            ConfigSpaceError::NoPcieCapability => f.write_str("the device has no PCI Express capability"),
            ConfigSpaceError::CapabilityLoop(at) => {
                write!(
                    f,
                    "the capability list loops back to offset {at:#x}: config space is corrupt"
                )
            }
        }
    }
}

impl std::error::Error for ConfigSpaceError {}

/// The device/port type of a function's PCI Express capability (bits 7:4 of its capabilities
/// register): on a root bus, the class code alone does not say what a function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortType {
    /// Type 0.
    Endpoint,
    /// Type 1.
    LegacyEndpoint,
    /// Type 4.
    RootPort,
    /// Type 5: a switch's upstream port.
    UpstreamPort,
    /// Type 6: a switch's downstream port.
    DownstreamPort,
    /// Type 9: a root complex integrated endpoint (RCiEP).
    IntegratedEndpoint,
    /// Type 10: a root complex event collector (RCEC).
    EventCollector,
    /// Bridges to and from conventional PCI, reserved types: the type's number.
    Other(u8),
}

impl PortType {
    fn from_code(t: u8) -> PortType {
        match t {
            0 => PortType::Endpoint,
            1 => PortType::LegacyEndpoint,
            4 => PortType::RootPort,
            5 => PortType::UpstreamPort,
            6 => PortType::DownstreamPort,
            9 => PortType::IntegratedEndpoint,
            10 => PortType::EventCollector,
            t => PortType::Other(t),
        }
    }

    /// Lower-case words for messages and JSON (`root port`, `switch upstream port`).
    pub fn name(self) -> String {
        match self {
            PortType::Endpoint => "endpoint".into(),
            PortType::LegacyEndpoint => "legacy endpoint".into(),
            PortType::RootPort => "root port".into(),
            PortType::UpstreamPort => "switch upstream port".into(),
            PortType::DownstreamPort => "switch downstream port".into(),
            PortType::IntegratedEndpoint => "integrated endpoint".into(),
            PortType::EventCollector => "event collector".into(),
            PortType::Other(7) => "PCIe-to-PCI bridge".into(),
            PortType::Other(8) => "PCI-to-PCIe bridge".into(),
            PortType::Other(t) => format!("type {t}"),
        }
    }

    /// Finds the PCI Express capability in a config space dump and decodes its type.
    pub fn decode(config: &[u8]) -> Result<PortType, ConfigSpaceError> {
        let at = pcie_capability(config)?;
        let caps = u16_at(config, at + 2).ok_or(ConfigSpaceError::EndsInsideCapability)?;
        Ok(PortType::from_code(((caps >> 4) & 0xf) as u8))
    }
}

impl DeviceControl {
    /// Finds the PCI Express capability in a config space dump and decodes its Device
    /// Capabilities and Device Control registers.
    pub fn decode(config: &[u8]) -> Result<DeviceControl, ConfigSpaceError> {
        PcieCapability::decode(config).map(|c| c.control)
    }
}

/// ASPM states, as Link Capabilities lists them supported or Link Control enables them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Aspm {
    pub l0s: bool,
    pub l1: bool,
}

impl Aspm {
    fn from_bits(b: u32) -> Aspm {
        Aspm {
            l0s: b & 1 != 0,
            l1: b & 2 != 0,
        }
    }

    pub fn any(self) -> bool {
        self.l0s || self.l1
    }

    /// `L0s L1`, `L1`, `off`.
    pub fn name(self) -> &'static str {
        match (self.l0s, self.l1) {
            (true, true) => "L0s L1",
            (true, false) => "L0s",
            (false, true) => "L1",
            (false, false) => "off",
        }
    }
}

/// The link registers of a PCI Express capability. Speeds are in GT/s ([`speed_code_gts`]; `None`
/// for a code no generation uses), widths in lanes as the register holds them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkRegisters {
    pub max_speed: Option<f64>,
    pub max_width: u32,
    pub aspm_supported: Aspm,
    pub aspm_enabled: Aspm,
    pub speed: Option<f64>,
    pub width: u32,
    /// Link Control 2's Target Link Speed (version-2 capabilities): on a downstream port, the
    /// highest rate the link may train to, which firmware or `setpci` can set below the maximum.
    pub target_speed: Option<f64>,
}

/// 10-bit tag support (Device Capabilities 2) and the requester enable (Device Control 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tags10 {
    pub completer: bool,
    pub requester: bool,
    pub requester_enabled: bool,
}

/// What a function's PCI Express capability says about its performance settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PcieCapability {
    pub port_type: PortType,
    pub control: DeviceControl,
    /// 8-bit tags: Extended Tag Field Supported (Device Capabilities bit 5) and Enable (Device
    /// Control bit 8).
    pub ext_tag_supported: bool,
    pub ext_tag_enabled: bool,
    /// `None` when the capability has no version-2 registers or the dump ends before them.
    pub tags10: Option<Tags10>,
    /// `None` for integrated endpoints and event collectors (no link), or a dump that ends
    /// before the link registers.
    pub link: Option<LinkRegisters>,
}

/// The rate of a Link Capabilities / Link Status speed code (1 = 2.5 GT/s ... 7 = 128 GT/s).
pub fn speed_code_gts(code: u32) -> Option<f64> {
    [2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0]
        .get((code as usize).wrapping_sub(1))
        .copied()
}

impl PcieCapability {
    /// Finds the PCI Express capability in a config space dump and decodes its registers.
    /// Registers past byte 256 are not the capability's (standard capabilities live in the
    /// first 256 bytes; the extended ones follow): a capability placed too late lacks them.
    pub fn decode(config: &[u8]) -> Result<PcieCapability, ConfigSpaceError> {
        let at = pcie_capability(config)?;
        let config = &config[..config.len().min(EXTENDED)];
        let (Some(caps), Some(devcap), Some(devctl)) =
            (u16_at(config, at + 2), u32_at(config, at + 4), u16_at(config, at + 8))
        else {
            return Err(ConfigSpaceError::EndsInsideCapability);
        };
        let port_type = PortType::from_code(((caps >> 4) & 0xf) as u8);
        let version = caps & 0xf;
        let link = match (
            port_type,
            u32_at(config, at + 0x0c),
            u16_at(config, at + 0x10),
            u16_at(config, at + 0x12),
        ) {
            (PortType::IntegratedEndpoint | PortType::EventCollector, ..) => None,
            (_, Some(cap), Some(ctl), Some(sta)) if cap != 0 => Some(LinkRegisters {
                max_speed: speed_code_gts(cap & 0xf),
                max_width: (cap >> 4) & 0x3f,
                aspm_supported: Aspm::from_bits(cap >> 10),
                aspm_enabled: Aspm::from_bits(ctl as u32),
                speed: speed_code_gts(sta as u32 & 0xf),
                width: (sta as u32 >> 4) & 0x3f,
                target_speed: u16_at(config, at + 0x30)
                    .filter(|_| version >= 2)
                    .and_then(|c| speed_code_gts(c as u32 & 0xf)),
            }),
            _ => None,
        };
        let tags10 = match (version >= 2, u32_at(config, at + 0x24), u16_at(config, at + 0x28)) {
            (true, Some(cap2), Some(ctl2)) => Some(Tags10 {
                completer: cap2 & (1 << 16) != 0,
                requester: cap2 & (1 << 17) != 0,
                requester_enabled: ctl2 & (1 << 12) != 0,
            }),
            _ => None,
        };
        Ok(PcieCapability {
            port_type,
            control: DeviceControl {
                mps: 128 << ((devctl >> 5) & 7).min(5),
                mrrs: 128 << ((devctl >> 12) & 7).min(5),
                mps_supported: 128 << (devcap & 7).min(5),
            },
            ext_tag_supported: devcap & (1 << 5) != 0,
            ext_tag_enabled: devctl & (1 << 8) != 0,
            tags10,
            link,
        })
    }
}

fn u16_at(config: &[u8], o: usize) -> Option<u16> {
    config.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(config: &[u8], o: usize) -> Option<u32> {
    config
        .get(o..o + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The standard capabilities (ID, offset) from the header's pointer, and why the walk stopped
/// early if it did (a loop, or a pointer past the readable bytes).
type Walk = (Vec<(u8, usize)>, Option<ConfigSpaceError>);

fn walk(config: &[u8]) -> Result<Walk, ConfigSpaceError> {
    let status = u16_at(config, 0x06).ok_or(ConfigSpaceError::ShorterThanHeader)?;
    if status & 0x10 == 0 {
        return Err(ConfigSpaceError::NoCapabilities);
    }
    let mut at = config.get(0x34).map(|&p| p as usize & 0xfc).unwrap_or(0);
    let mut found: Vec<(u8, usize)> = Vec::new();
    while at >= HEADER {
        if found.iter().any(|&(_, o)| o == at) {
            return Ok((found, Some(ConfigSpaceError::CapabilityLoop(at))));
        }
        let (Some(&id), Some(&next)) = (config.get(at), config.get(at + 1)) else {
            return Ok((found, Some(ConfigSpaceError::CapabilityBeyond(config.len()))));
        };
        found.push((id, at));
        at = next as usize & 0xfc;
    }
    Ok((found, None))
}

/// The offset of the PCI Express capability (ID 0x10). A list that loops or is cut off before
/// it is found says so; one cut off after it is found still answers.
fn pcie_capability(config: &[u8]) -> Result<usize, ConfigSpaceError> {
    let (found, stop) = walk(config)?;
    match (found.iter().find(|&&(id, _)| id == CAP_PCIE), stop) {
        (Some(&(_, at)), _) => Ok(at),
        (None, Some(e)) => Err(e),
        (None, None) => Err(ConfigSpaceError::NoPcieCapability),
    }
}

/// An extended capability header (PCIe 6.0 7.6.3): its ID and the next capability's offset;
/// `None` at the list's end (zeros, or all ones from a function that does not answer).
fn ext_header(h: u32) -> Option<(u16, usize)> {
    (h != 0 && h != u32::MAX).then_some(((h & 0xffff) as u16, (h >> 20) as usize & 0xffc))
}

/// The extended capabilities (ID, offset) from 0x100; empty when the dump is 256 bytes or
/// shorter (conventional PCI, or a reader without root), `Err` when the list loops.
pub fn extended_capabilities(config: &[u8]) -> Result<Vec<(u16, usize)>, ConfigSpaceError> {
    let mut found: Vec<(u16, usize)> = Vec::new();
    let mut at = EXTENDED;
    while at >= EXTENDED {
        let Some((id, next)) = u32_at(config, at).and_then(ext_header) else {
            break;
        };
        if found.iter().any(|&(_, o)| o == at) {
            return Err(ConfigSpaceError::CapabilityLoop(at));
        }
        found.push((id, at));
        at = next;
    }
    Ok(found)
}

/// Whether the extended capability list holds an AER capability; `None` where the dump does
/// not reach the extended list (256 bytes or fewer) or the list loops.
pub fn has_aer(config: &[u8]) -> Option<bool> {
    if config.len() <= EXTENDED {
        return None;
    }
    let ext = extended_capabilities(config).ok()?;
    Some(ext.iter().any(|&(id, _)| id == EXT_CAP_AER))
}

/// A function's whole config space (PCIe): the most a `config` file shows.
pub const CONFIG_SPACE: usize = 4096;
/// The AER capability's registers up to the end of Correctable Error Status (7.8.4).
const AER_STATUS_END: usize = 0x14;

/// The bytes of a `config` file of `len` bytes that the link checks decode, read piece by piece
/// through `read_at(offset, count)` (which returns fewer bytes where the file ends): the first
/// 256 (the header and the standard capabilities), each extended capability's header along the
/// list, and the AER capability's status registers; zeros elsewhere, so every decoder here
/// gives what it gives on the whole file. On hardware each 4 bytes of `config` read is a
/// configuration cycle (the kernel reads it a dword at a time): this is some 70-80 where the
/// whole file is 1024. Fewer than 256 bytes (Linux shows 64 to users other than root) come back
/// as read.
pub fn read_registers(
    len: usize,
    mut read_at: impl FnMut(usize, usize) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<Vec<u8>> {
    let len = len.min(CONFIG_SPACE);
    let mut bytes = read_at(0, EXTENDED)?;
    if bytes.len() < EXTENDED || len <= EXTENDED {
        return Ok(bytes);
    }
    bytes.resize(len, 0);
    let mut seen: Vec<usize> = Vec::new();
    let mut at = EXTENDED;
    // Along the list as `extended_capabilities` walks it, reading each header; a loop stops
    // at the offset seen before, where that walk sees it.
    while at >= EXTENDED && at + 4 <= bytes.len() && !seen.contains(&at) {
        seen.push(at);
        if !fill(&mut bytes, at, 4, &mut read_at)? {
            break;
        }
        let Some((id, next)) = u32_at(&bytes, at).and_then(ext_header) else {
            break;
        };
        if id == EXT_CAP_AER {
            // Cut short or not, the list goes on from its header.
            fill(&mut bytes, at + 4, AER_STATUS_END - 4, &mut read_at)?;
        } else if id == EXT_CAP_ACS {
            // ACS Capability and Control: one dword.
            fill(&mut bytes, at + 4, 4, &mut read_at)?;
        }
        at = next;
    }
    Ok(bytes)
}

/// Reads `count` bytes at `at` into `bytes` (no further than its end); where the file ends
/// sooner than its size said, `bytes` ends there too, as a whole read would, and the answer is
/// false.
fn fill(
    bytes: &mut Vec<u8>,
    at: usize,
    count: usize,
    read_at: &mut impl FnMut(usize, usize) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<bool> {
    let count = count.min(bytes.len().saturating_sub(at));
    let piece = read_at(at, count)?;
    let got = piece.len().min(count);
    bytes[at..at + got].copy_from_slice(&piece[..got]);
    if got < count {
        bytes.truncate(at + got);
        return Ok(false);
    }
    Ok(true)
}

/// Correctable error status bits (AER, PCIe 6.0 7.8.4.5) by the names the kernel's
/// `aer_dev_correctable` file uses.
pub const CORRECTABLE_BITS: [(u32, &str); 8] = [
    (0, "RxErr"),
    (6, "BadTLP"),
    (7, "BadDLLP"),
    (8, "Rollover"),
    (12, "Timeout"),
    (13, "NonFatalErr"),
    (14, "CorrIntErr"),
    (15, "HeaderOF"),
];

/// Uncorrectable error status bits (7.8.4.2) by the kernel's `aer_dev_nonfatal`/`_fatal` names.
pub const UNCORRECTABLE_BITS: [(u32, &str); 17] = [
    (4, "DLP"),
    (5, "SDES"),
    (12, "TLP"),
    (13, "FCP"),
    (14, "CmpltTO"),
    (15, "CmpltAbrt"),
    (16, "UnxCmplt"),
    (17, "RxOF"),
    (18, "MalfTLP"),
    (19, "ECRC"),
    (20, "UnsupReq"),
    (21, "ACSViol"),
    (22, "UncorrIntErr"),
    (23, "BlockedTLP"),
    (24, "AtomicOpBlocked"),
    (25, "TLPBlockedErr"),
    (26, "PoisonTLPBlocked"),
];

/// The AER capability's status registers: the error types a function has seen since they were
/// last cleared (sticky: they survive a reset). Where the kernel keeps no counters (before
/// Linux 4.17, firmware-first AER, a dump of config space) they are what is left to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct AerStatus {
    pub uncorrectable: u32,
    pub correctable: u32,
}

impl AerStatus {
    /// The status registers of the AER capability; `None` without one (or a dump that does
    /// not reach them).
    pub fn decode(config: &[u8]) -> Option<AerStatus> {
        let ext = extended_capabilities(config).ok()?;
        let &(_, at) = ext.iter().find(|&&(id, _)| id == EXT_CAP_AER)?;
        Some(AerStatus {
            uncorrectable: u32_at(config, at + 4)?,
            correctable: u32_at(config, at + 0x10)?,
        })
    }

    fn names(bits: u32, table: &[(u32, &'static str)]) -> Vec<&'static str> {
        table
            .iter()
            .filter(|(b, _)| bits >> b & 1 == 1)
            .map(|(_, n)| *n)
            .collect()
    }

    pub fn correctable_names(&self) -> Vec<&'static str> {
        AerStatus::names(self.correctable, &CORRECTABLE_BITS)
    }

    pub fn uncorrectable_names(&self) -> Vec<&'static str> {
        AerStatus::names(self.uncorrectable, &UNCORRECTABLE_BITS)
    }
}

/// AtomicOps as Device Capabilities 2 and Device Control 2 hold them (PCIe 6.0 7.5.3.15-16):
/// whether a port routes them (bit 6), which sizes a completer (a root port: the root complex)
/// executes (bits 7-9), and the controls: Requester Enable (bit 6) and Egress Blocking (bit 7).
/// The kernel's `pci_enable_atomic_ops_to_root` (which amdgpu and ROCm need) walks the path with
/// exactly these bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct AtomicOps {
    pub routing: bool,
    pub completer32: bool,
    pub completer64: bool,
    pub completer128: bool,
    pub requester_enabled: bool,
    pub egress_blocked: bool,
}

impl AtomicOps {
    /// The bits in Device Capabilities 2 and Device Control 2.
    pub fn from_registers(devcap2: u32, devctl2: u16) -> AtomicOps {
        AtomicOps {
            routing: devcap2 & 1 << 6 != 0,
            completer32: devcap2 & 1 << 7 != 0,
            completer64: devcap2 & 1 << 8 != 0,
            completer128: devcap2 & 1 << 9 != 0,
            requester_enabled: devctl2 & 1 << 6 != 0,
            egress_blocked: devctl2 & 1 << 7 != 0,
        }
    }

    /// The Device Capabilities 2 and Device Control 2 bits that say this.
    pub fn registers(&self) -> (u32, u16) {
        let cap = u32::from(self.routing) << 6
            | u32::from(self.completer32) << 7
            | u32::from(self.completer64) << 8
            | u32::from(self.completer128) << 9;
        let ctl = u16::from(self.requester_enabled) << 6 | u16::from(self.egress_blocked) << 7;
        (cap, ctl)
    }

    /// The PCI Express capability's AtomicOp bits; `None` where they are unknown: a version-1
    /// capability (PCIe 1.x, before AtomicOps; or an `lspci` paste cut before its DevCap2 line,
    /// which pcie-sysfs lays out as one) or a dump that ends before the registers.
    pub fn decode(config: &[u8]) -> Option<AtomicOps> {
        let at = pcie_capability(config).ok()?;
        let config = &config[..config.len().min(EXTENDED)];
        let version = u16_at(config, at + 2)? & 0xf;
        let (cap2, ctl2) = (u32_at(config, at + 0x24)?, u16_at(config, at + 0x28)?);
        (version >= 2).then(|| AtomicOps::from_registers(cap2, ctl2))
    }
}

/// The ACS controls (PCIe 6.0 7.7.11.2-3), each as supported (ACS Capability) and enabled (ACS
/// Control): bit 0 Source Validation, 1 Translation Blocking, 2 P2P Request Redirect, 3 P2P
/// Completion Redirect, 4 Upstream Forwarding, 5 P2P Egress Control, 6 Direct Translated P2P.
/// On a switch's downstream port, Request Redirect sends a peer's requests up to the root
/// complex instead of across the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Acs {
    pub capability: u16,
    pub control: u16,
}

/// The ACS bits by the names lspci prints (`ACSCap:`, `ACSCtl:`).
pub const ACS_BITS: [(u32, &str); 7] = [
    (0, "SrcValid"),
    (1, "TransBlk"),
    (2, "ReqRedir"),
    (3, "CmpltRedir"),
    (4, "UpstreamFwd"),
    (5, "EgressCtrl"),
    (6, "DirectTrans"),
];

impl Acs {
    pub const REQUEST_REDIRECT: u16 = 1 << 2;
    pub const COMPLETION_REDIRECT: u16 = 1 << 3;
    pub const EGRESS_CONTROL: u16 = 1 << 5;
    pub const DIRECT_TRANSLATED: u16 = 1 << 6;

    /// The ACS extended capability's registers; `None` without one, or where the dump does not
    /// reach it (256 bytes or fewer: no root).
    pub fn decode(config: &[u8]) -> Option<Acs> {
        let ext = extended_capabilities(config).ok()?;
        let &(_, at) = ext.iter().find(|&&(id, _)| id == EXT_CAP_ACS)?;
        Some(Acs {
            capability: u16_at(config, at + 4)?,
            control: u16_at(config, at + 6)?,
        })
    }

    /// Whether a control is enabled (and supported: a bit enabled without support is reserved).
    pub fn enabled(&self, bit: u16) -> bool {
        self.control & self.capability & bit != 0
    }

    /// The enabled controls by lspci's names (`ReqRedir CmpltRedir`).
    pub fn enabled_names(&self) -> Vec<&'static str> {
        ACS_BITS
            .iter()
            .filter(|(b, _)| self.enabled(1 << b))
            .map(|(_, n)| *n)
            .collect()
    }
}

/// Zeroes the serial number of a Device Serial Number capability (a snapshot must not carry
/// it); returns whether one was found.
pub fn blank_serial(config: &mut [u8]) -> bool {
    let Ok(ext) = extended_capabilities(config) else {
        return false;
    };
    let mut found = false;
    for (_, at) in ext.into_iter().filter(|&(id, _)| id == EXT_CAP_DSN) {
        if let Some(serial) = config.get_mut(at + 4..at + 12) {
            serial.fill(0);
            found = true;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::config_with_pcie_capability as config;

    #[test]
    fn mps_and_mrrs_from_config_space() {
        // MPS 256 (1 << 5), MRRS 512 (2 << 12), supports 512 (2).
        let c = DeviceControl::decode(&config(2, (1 << 5) | (2 << 12), 256)).unwrap();
        assert_eq!(
            c,
            DeviceControl {
                mps: 256,
                mrrs: 512,
                mps_supported: 512
            }
        );
        let user = DeviceControl::decode(&config(2, 0, 64)).unwrap_err();
        assert!(user.needs_root());
        let user = user.to_string();
        assert!(
            user.contains("beyond the 64 readable bytes") && user.contains("root"),
            "{user}"
        );
        let mut no_caps = config(2, 0, 256);
        no_caps[0x06] = 0;
        assert_eq!(
            DeviceControl::decode(&no_caps).unwrap_err().to_string(),
            "the device lists no capabilities"
        );
        let mut looped = config(2, 0, 256);
        looped[0x70] = 0x05;
        looped[0x71] = 0x40;
        assert_eq!(
            DeviceControl::decode(&looped).unwrap_err().to_string(),
            "the capability list loops back to offset 0x40: config space is corrupt"
        );
        // Reserved MPS codes (6, 7) read as the largest defined size, never an overflow.
        assert_eq!(DeviceControl::decode(&config(7, 0xffff, 256)).unwrap().mps, 4096);
    }

    #[test]
    fn the_device_port_type_tells_root_complex_functions_apart() {
        let typed = |t: u8| {
            let mut c = config(0, 0, 256);
            c[0x72] = t << 4 | 2; // capability version 2 in the low bits
            PortType::decode(&c)
        };
        assert_eq!(typed(4), Ok(PortType::RootPort));
        assert_eq!(typed(9), Ok(PortType::IntegratedEndpoint));
        assert_eq!(typed(10), Ok(PortType::EventCollector));
        assert_eq!(typed(0), Ok(PortType::Endpoint));
        assert_eq!(typed(5).unwrap().name(), "switch upstream port");
        assert_eq!(typed(12), Ok(PortType::Other(12)));
        // Without root, Linux shows 64 bytes: the capability is past them.
        let user = PortType::decode(&config(0, 0, 64)).unwrap_err().to_string();
        assert!(user.contains("beyond the 64 readable bytes"), "{user}");
        assert_eq!(
            PortType::decode(&config(0, 0, 0x72)).unwrap_err().to_string(),
            "config space ends inside the PCIe capability (reading it needs root)"
        );
    }
}
