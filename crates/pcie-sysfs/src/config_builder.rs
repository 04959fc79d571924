//! Writing a realistic config space: the header, a power-management capability, the PCI
//! Express capability with the performance settings [`crate::PcieCapability`] reads back, and
//! optionally the AER and Device Serial Number extended capabilities. A simulated host and
//! fixture trees describe their functions with it, so the readers see what a real host shows.

use crate::config_space::{
    speed_code_gts, Acs, AerStatus, Aspm, AtomicOps, PortType, EXT_CAP_ACS, EXT_CAP_AER, EXT_CAP_DSN,
};

/// A link as its registers hold it: rates in GT/s (2.5 ... 128), widths in lanes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSetup {
    pub max_gts: f64,
    pub max_width: u32,
    pub gts: f64,
    pub width: u32,
    pub aspm_supported: Aspm,
    pub aspm_enabled: Aspm,
}

impl LinkSetup {
    /// A link running at its maximum, ASPM L1 supported and off.
    pub fn at_max(gts: f64, width: u32) -> LinkSetup {
        LinkSetup {
            max_gts: gts,
            max_width: width,
            gts,
            width,
            aspm_supported: Aspm { l0s: false, l1: true },
            aspm_enabled: Aspm::default(),
        }
    }
}

/// A function's config space, built field by field (see the module text).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigBuilder {
    vendor: u16,
    device: u16,
    class: u32,
    /// `None`: conventional PCI, no PCI Express capability.
    port_type: Option<PortType>,
    mps_supported: u32,
    mps: u32,
    mrrs: u32,
    ext_tag: (bool, bool),
    tags10: Option<(bool, bool, bool)>,
    link: Option<LinkSetup>,
    /// Link Control 2's Target Link Speed; `None`: the link's maximum, as after reset.
    target_gts: Option<f64>,
    aer: Option<AerStatus>,
    serial: Option<u64>,
    atomics: Option<AtomicOps>,
    acs: Option<Acs>,
    /// The version-2 registers are not known (a paste without DevCap2): a version-1
    /// capability, whose readers leave them unknown, unless a version-2 setting was given.
    v2_unknown: bool,
}

fn size_code(bytes: u32) -> u32 {
    (bytes.max(128) / 128).trailing_zeros().min(5)
}

fn speed_code(gts: f64) -> u32 {
    (1..=7).find(|&c| speed_code_gts(c) == Some(gts)).unwrap_or(0)
}

fn put16(c: &mut [u8], at: usize, v: u16) {
    c[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(c: &mut [u8], at: usize, v: u32) {
    c[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

impl ConfigBuilder {
    /// A PCI Express function of `port_type`: MPS 256 of 512 supported, MRRS 512, 8-bit tags
    /// supported and enabled, no 10-bit tags, no link (add one with [`ConfigBuilder::link`]).
    pub fn new(vendor: u16, device: u16, class: u32, port_type: PortType) -> ConfigBuilder {
        ConfigBuilder {
            vendor,
            device,
            class,
            port_type: Some(port_type),
            mps_supported: 512,
            mps: 256,
            mrrs: 512,
            ext_tag: (true, true),
            tags10: None,
            link: None,
            target_gts: None,
            aer: None,
            serial: None,
            atomics: None,
            acs: None,
            v2_unknown: false,
        }
    }

    /// An endpoint (type 0).
    pub fn endpoint(vendor: u16, device: u16, class: u32) -> ConfigBuilder {
        ConfigBuilder::new(vendor, device, class, PortType::Endpoint)
    }

    /// A conventional PCI function: a header and a power-management capability only.
    pub fn conventional(vendor: u16, device: u16, class: u32) -> ConfigBuilder {
        ConfigBuilder {
            port_type: None,
            ..ConfigBuilder::endpoint(vendor, device, class)
        }
    }

    /// The largest MPS supported and the MPS in force, in bytes.
    pub fn mps(mut self, supported: u32, configured: u32) -> ConfigBuilder {
        (self.mps_supported, self.mps) = (supported, configured);
        self
    }

    pub fn mrrs(mut self, mrrs: u32) -> ConfigBuilder {
        self.mrrs = mrrs;
        self
    }

    /// 8-bit tags supported and enabled; 10-bit tags as (completer, requester supported,
    /// requester enabled), `None` for a version-1 capability without those registers.
    pub fn tags(mut self, ext_supported: bool, ext_enabled: bool, tags10: Option<(bool, bool, bool)>) -> ConfigBuilder {
        self.ext_tag = (ext_supported, ext_enabled);
        self.tags10 = tags10;
        self
    }

    pub fn link(mut self, link: LinkSetup) -> ConfigBuilder {
        self.link = Some(link);
        self
    }

    /// Link Control 2's Target Link Speed in GT/s, below the link's maximum: a port whose
    /// firmware (or `setpci`) caps the rate its link trains to.
    pub fn target_speed(mut self, gts: f64) -> ConfigBuilder {
        self.target_gts = Some(gts);
        self
    }

    /// An AER extended capability with no error status bits set (its counters live in sysfs
    /// files, not here).
    pub fn aer(self) -> ConfigBuilder {
        self.aer_status(AerStatus::default())
    }

    /// An AER extended capability whose status registers hold `status`.
    pub fn aer_status(mut self, status: AerStatus) -> ConfigBuilder {
        self.aer = Some(status);
        self
    }

    /// A Device Serial Number extended capability holding `serial`.
    pub fn serial(mut self, serial: u64) -> ConfigBuilder {
        self.serial = Some(serial);
        self
    }

    /// AtomicOp routing, completer sizes and controls (Device Capabilities 2, Device Control 2).
    pub fn atomics(mut self, atomics: AtomicOps) -> ConfigBuilder {
        self.atomics = Some(atomics);
        self
    }

    /// Device Capabilities 2 and Device Control 2 unknown: unless 10-bit tags, AtomicOps or a
    /// Target Link Speed are given, the capability is written as version 1 (no such registers),
    /// so readers say "unknown" rather than read zeros as "not supported".
    pub fn v2_unknown(mut self) -> ConfigBuilder {
        self.v2_unknown = true;
        self
    }

    /// An Access Control Services extended capability holding `acs`.
    pub fn acs(mut self, acs: Acs) -> ConfigBuilder {
        self.acs = Some(acs);
        self
    }

    /// The 4096 bytes root reads from `config`.
    pub fn build(&self) -> Vec<u8> {
        let mut c = vec![0u8; 4096];
        put16(&mut c, 0x00, self.vendor);
        put16(&mut c, 0x02, self.device);
        put16(&mut c, 0x06, 0x10); // capability list present
        c[0x09..0x0c].copy_from_slice(&self.class.to_le_bytes()[..3]);
        c[0x0e] = u8::from(self.class >> 8 == 0x0604); // bridges have a type-1 header
        c[0x34] = 0x40;
        c[0x40] = 0x01; // power management
        let Some(port_type) = self.port_type else {
            return c;
        };
        c[0x41] = 0x70;
        let at = 0x70;
        c[at] = 0x10;
        let code = match port_type {
            PortType::Endpoint => 0,
            PortType::LegacyEndpoint => 1,
            PortType::RootPort => 4,
            PortType::UpstreamPort => 5,
            PortType::DownstreamPort => 6,
            PortType::IntegratedEndpoint => 9,
            PortType::EventCollector => 10,
            PortType::Other(t) => t as u16 & 0xf,
        };
        let v2_given = self.tags10.is_some() || self.atomics.is_some() || self.target_gts.is_some();
        let version = if v2_given || (self.link.is_some() && !self.v2_unknown) {
            2
        } else {
            1
        };
        put16(&mut c, at + 2, code << 4 | version);
        let devcap = size_code(self.mps_supported) | u32::from(self.ext_tag.0) << 5;
        put32(&mut c, at + 4, devcap);
        let devctl = size_code(self.mps) << 5 | u32::from(self.ext_tag.1) << 8 | size_code(self.mrrs) << 12;
        put16(&mut c, at + 8, devctl as u16);
        if let Some(l) = self.link {
            let bits = |a: Aspm| u32::from(a.l0s) | u32::from(a.l1) << 1;
            let lnkcap = speed_code(l.max_gts) | (l.max_width & 0x3f) << 4 | bits(l.aspm_supported) << 10;
            put32(&mut c, at + 0x0c, lnkcap);
            put16(&mut c, at + 0x10, bits(l.aspm_enabled) as u16);
            put16(&mut c, at + 0x12, (speed_code(l.gts) | (l.width & 0x3f) << 4) as u16);
            // Link Capabilities 2's supported speeds vector is left empty: readers take the
            // maximum from Link Capabilities.
            put16(
                &mut c,
                at + 0x30,
                speed_code(self.target_gts.unwrap_or(l.max_gts)) as u16,
            );
        }
        let (mut cap2, mut ctl2) = self.atomics.map_or((0, 0), |a| a.registers());
        if let Some((completer, requester, enabled)) = self.tags10 {
            cap2 |= u32::from(completer) << 16 | u32::from(requester) << 17;
            ctl2 |= u16::from(enabled) << 12;
        }
        put32(&mut c, at + 0x24, cap2);
        put16(&mut c, at + 0x28, ctl2);
        let mut ext = Vec::new();
        if let Some(status) = self.aer {
            ext.push((EXT_CAP_AER, 0x100usize));
            put32(&mut c, 0x104, status.uncorrectable);
            put32(&mut c, 0x110, status.correctable);
        }
        if let Some(serial) = self.serial {
            ext.push((EXT_CAP_DSN, 0x150));
            put32(&mut c, 0x154, serial as u32);
            put32(&mut c, 0x158, (serial >> 32) as u32);
        }
        if let Some(acs) = self.acs {
            ext.push((EXT_CAP_ACS, 0x160));
            put16(&mut c, 0x164, acs.capability);
            put16(&mut c, 0x166, acs.control);
        }
        for (i, &(id, at)) in ext.iter().enumerate() {
            let next = ext.get(i + 1).map_or(0, |&(_, n)| n as u32);
            put32(&mut c, at, id as u32 | 1 << 16 | next << 20);
        }
        if let Some(&(_, first)) = ext.first().filter(|&&(_, at)| at != 0x100) {
            // The extended list must start at 0x100: a null capability pointing on.
            put32(&mut c, 0x100, (first as u32) << 20);
        }
        c
    }
}

/// What the builder writes, read back by the decoders.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_space::*;

    #[test]
    fn link_tag_and_aspm_registers_decode() {
        let link = LinkSetup {
            max_gts: 32.0,
            max_width: 16,
            gts: 16.0,
            width: 8,
            aspm_supported: Aspm { l0s: true, l1: true },
            aspm_enabled: Aspm { l0s: false, l1: true },
        };
        let bytes = ConfigBuilder::endpoint(0x10de, 0x2330, 0x030200)
            .mps(512, 256)
            .mrrs(1024)
            .tags(true, false, Some((true, true, false)))
            .link(link)
            .aer()
            .serial(0x1122_3344_5566_7788)
            .build();
        let c = PcieCapability::decode(&bytes).unwrap();
        assert_eq!(c.port_type, PortType::Endpoint);
        assert_eq!(
            c.control,
            DeviceControl {
                mps: 256,
                mrrs: 1024,
                mps_supported: 512
            }
        );
        assert!(c.ext_tag_supported && !c.ext_tag_enabled);
        assert_eq!(
            c.tags10,
            Some(Tags10 {
                completer: true,
                requester: true,
                requester_enabled: false
            })
        );
        let l = c.link.unwrap();
        assert_eq!(
            (l.max_speed, l.max_width, l.speed, l.width),
            (Some(32.0), 16, Some(16.0), 8)
        );
        assert_eq!((l.aspm_supported.name(), l.aspm_enabled.name()), ("L0s L1", "L1"));
        // Target Link Speed: the maximum after reset, or what firmware set.
        assert_eq!(l.target_speed, Some(32.0));
        let capped = ConfigBuilder::new(0x8086, 0x347a, 0x060400, PortType::RootPort)
            .link(link)
            .target_speed(8.0)
            .build();
        assert_eq!(
            PcieCapability::decode(&capped).unwrap().link.unwrap().target_speed,
            Some(8.0)
        );
        assert_eq!(has_aer(&bytes), Some(true));
        assert_eq!(has_aer(&bytes[..256]), None);
        let mut blanked = bytes.clone();
        assert!(blank_serial(&mut blanked));
        assert_ne!(blanked, bytes);
        assert_eq!(PcieCapability::decode(&blanked), Ok(c));
        assert_eq!(has_aer(&blanked), Some(true));
        // Without the extended capabilities, nothing to blank.
        let plain = ConfigBuilder::endpoint(1, 2, 0x020000).build();
        assert_eq!(has_aer(&plain), Some(false));
        assert!(!blank_serial(&mut plain.clone()));
    }

    #[test]
    fn aer_status_bits_read_back_by_name() {
        let status = AerStatus {
            uncorrectable: 1 << 14 | 1 << 20,
            correctable: 1 | 1 << 7,
        };
        let bytes = ConfigBuilder::endpoint(1, 2, 0x020000)
            .aer_status(status)
            .serial(7)
            .build();
        let read = AerStatus::decode(&bytes).unwrap();
        assert_eq!(read, status);
        assert_eq!(read.correctable_names(), ["RxErr", "BadDLLP"]);
        assert_eq!(read.uncorrectable_names(), ["CmpltTO", "UnsupReq"]);
        assert_eq!(
            AerStatus::decode(&ConfigBuilder::endpoint(1, 2, 0x020000).build()),
            None
        );
        assert_eq!(AerStatus::decode(&bytes[..0x108]), None);
    }

    #[test]
    fn atomics_and_acs_read_back() {
        let atomics = AtomicOps {
            routing: true,
            completer32: true,
            completer64: true,
            egress_blocked: true,
            ..AtomicOps::default()
        };
        let acs = Acs {
            capability: 0x5f,
            control: Acs::REQUEST_REDIRECT | Acs::COMPLETION_REDIRECT | 1,
        };
        let port = ConfigBuilder::new(0x10b5, 0x8747, 0x060400, PortType::DownstreamPort)
            .link(LinkSetup::at_max(8.0, 16))
            .tags(true, true, Some((true, false, false)))
            .atomics(atomics)
            .acs(acs)
            .build();
        assert_eq!(AtomicOps::decode(&port), Some(atomics));
        assert!(PcieCapability::decode(&port).unwrap().tags10.unwrap().completer);
        assert_eq!(Acs::decode(&port), Some(acs));
        assert_eq!(
            Acs::decode(&port).unwrap().enabled_names(),
            ["SrcValid", "ReqRedir", "CmpltRedir"]
        );
        // A control enabled without its capability bit is reserved: not enabled.
        let odd = Acs {
            capability: 0,
            control: 0x7f,
        };
        assert!(odd.enabled_names().is_empty());
        // Alone (the list starts with a null capability) and with AER and a serial number.
        let both = ConfigBuilder::endpoint(1, 2, 0x030000).aer().serial(9).acs(acs).build();
        assert_eq!(Acs::decode(&both), Some(acs));
        assert_eq!(has_aer(&both), Some(true));
        // Without root (256 bytes), or without the capability: unknown, or none.
        assert_eq!(Acs::decode(&port[..256]), None);
        assert_eq!(Acs::decode(&ConfigBuilder::endpoint(1, 2, 0x030000).build()), None);
        // Version-2 registers of zeros: nothing routed or supported; not known (an lspci dump
        // cut before DevCap2): unknown.
        let zeros = ConfigBuilder::endpoint(1, 2, 0x030000).link(LinkSetup::at_max(8.0, 16));
        assert_eq!(AtomicOps::decode(&zeros.clone().build()), Some(AtomicOps::default()));
        let unknown = zeros.v2_unknown().build();
        assert_eq!(AtomicOps::decode(&unknown), None);
        assert!(PcieCapability::decode(&unknown).unwrap().link.is_some());
        let v1 = ConfigBuilder::endpoint(1, 2, 0x030000).build();
        assert_eq!(AtomicOps::decode(&v1), None);
        // The piecewise reader reads the ACS registers too.
        let (regs, read) = registers(&port, port.len());
        assert_eq!(Acs::decode(&regs), Some(acs));
        assert_eq!(read, 256 + 4 + 4 + 4);
    }

    #[test]
    fn a_looping_extended_list_and_bad_speed_codes_are_named() {
        let mut bytes = ConfigBuilder::endpoint(1, 2, 0x020000).aer().build();
        // The AER header's next pointer back to itself.
        bytes[0x102] = 0x01;
        bytes[0x103] = 0x10;
        assert_eq!(
            extended_capabilities(&bytes),
            Err(ConfigSpaceError::CapabilityLoop(0x100))
        );
        assert!(!blank_serial(&mut bytes));
        assert_eq!(speed_code_gts(0), None);
        assert_eq!(speed_code_gts(8), None);
        assert_eq!(speed_code_gts(4), Some(16.0));
    }

    #[test]
    fn a_capability_at_the_end_of_the_standard_space_stops_there() {
        // Found by the fuzzer: the PCIe capability at 0xf0 with a serial number capability at
        // 0x100 overlapping where its version-2 registers would be.
        let mut c = ConfigBuilder::endpoint(1, 2, 0x020000).serial(u64::MAX).build();
        c[0x41] = 0xf0;
        c.copy_within(0x70..0x7c, 0xf0);
        c[0xf2] = 0x02; // version 2: Device Capabilities 2 would be at 0x114
        let before = PcieCapability::decode(&c).unwrap();
        assert_eq!(before.tags10, None);
        assert!(blank_serial(&mut c));
        assert_eq!(PcieCapability::decode(&c), Ok(before));
    }

    /// `read_registers` over `file` (a file whose size says `len`): the bytes, and how many
    /// were read.
    fn registers(file: &[u8], len: usize) -> (Vec<u8>, usize) {
        let mut read = 0;
        let bytes = read_registers(len, |at, n| {
            let piece = file.get(at..).map_or(&[][..], |b| &b[..n.min(b.len())]);
            read += piece.len();
            Ok(piece.to_vec())
        })
        .unwrap();
        (bytes, read)
    }

    #[test]
    fn the_registers_read_piece_by_piece_decode_as_the_whole_file() {
        let status = AerStatus {
            uncorrectable: 1 << 20,
            correctable: 1 << 7,
        };
        let whole = ConfigBuilder::endpoint(0x15b3, 0x1017, 0x020000)
            .link(LinkSetup::at_max(16.0, 16))
            .aer_status(status)
            .serial(0x1234)
            .build();
        let (regs, read) = registers(&whole, whole.len());
        assert_eq!(regs.len(), whole.len());
        assert_eq!(PcieCapability::decode(&regs), PcieCapability::decode(&whole));
        assert_eq!(extended_capabilities(&regs), extended_capabilities(&whole));
        assert_eq!((has_aer(&regs), AerStatus::decode(&regs)), (Some(true), Some(status)));
        // 256 bytes, the AER header and status registers, the serial number's header: 76
        // configuration cycles where the whole file is 1024.
        assert_eq!(read, 256 + 0x14 + 4);
        // Not the serial number (at 0x154): nothing decodes it, and zeros stand for it.
        assert_ne!(whole[0x154..0x15c], [0; 8]);
        assert_eq!(regs[0x154..0x15c], [0; 8]);
        // Without root (64 bytes), and a conventional function (256): as read.
        assert_eq!(registers(&whole[..64], 4096).0, whole[..64]);
        assert_eq!(registers(&whole[..256], 256).0, whole[..256]);
        // A list that loops stops where the walk sees the loop.
        let mut looping = whole.clone();
        looping[0x102] = 0x01;
        looping[0x103] = 0x10;
        assert_eq!(
            extended_capabilities(&registers(&looping, 4096).0),
            Err(ConfigSpaceError::CapabilityLoop(0x100))
        );
        // A file that ends before the size it gives, inside the AER capability or a header:
        // what the whole (short) file says.
        for cut in [0x102, 0x10a, 0x112, 0x116, 0x152] {
            let (regs, _) = registers(&whole[..cut], 4096);
            assert_eq!(has_aer(&regs), has_aer(&whole[..cut]), "{cut:#x}");
            assert_eq!(AerStatus::decode(&regs), AerStatus::decode(&whole[..cut]), "{cut:#x}");
            assert_eq!(
                extended_capabilities(&regs),
                extended_capabilities(&whole[..cut]),
                "{cut:#x}"
            );
        }
    }
}
