//! The PCI Express capability in a function's config space: the device/port type, the MPS and
//! MRRS in force and the largest MPS supported, which sysfs has no attribute for. Without root, Linux shows only the
//! first 64 bytes of `config`, so the reasons for a missing answer are kept.

use std::fmt;

/// MPS and MRRS in force (Device Control), and the largest MPS supported (Device
/// Capabilities), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceControl {
    pub mps: u32,
    pub mrrs: u32,
    pub mps_supported: u32,
}

/// Why a config space dump gives no [`DeviceControl`].
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
        }
    }
}

impl std::error::Error for ConfigSpaceError {}

/// The device/port type of a function's PCI Express capability (bits 7:4 of its capabilities
/// register): on a root bus, the class code alone does not say what a function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortType {
    /// Type 4.
    RootPort,
    /// Type 9: a root complex integrated endpoint (RCiEP).
    IntegratedEndpoint,
    /// Type 10: a root complex event collector (RCEC).
    EventCollector,
    /// Endpoints, switch ports and bridges: the type's number.
    Other(u8),
}

impl PortType {
    /// Finds the PCI Express capability in a config space dump and decodes its type.
    pub fn decode(config: &[u8]) -> Result<PortType, ConfigSpaceError> {
        let at = pcie_capability(config)?;
        let caps = u16_at(config, at + 2).ok_or(ConfigSpaceError::EndsInsideCapability)?;
        Ok(match (caps >> 4) & 0xf {
            4 => PortType::RootPort,
            9 => PortType::IntegratedEndpoint,
            10 => PortType::EventCollector,
            t => PortType::Other(t as u8),
        })
    }
}

impl DeviceControl {
    /// Finds the PCI Express capability in a config space dump and decodes its Device
    /// Capabilities and Device Control registers.
    pub fn decode(config: &[u8]) -> Result<DeviceControl, ConfigSpaceError> {
        let at = pcie_capability(config)?;
        let caps = config
            .get(at + 4..at + 8)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let (Some(caps), Some(ctl)) = (caps, u16_at(config, at + 8)) else {
            return Err(ConfigSpaceError::EndsInsideCapability);
        };
        Ok(DeviceControl {
            mps: 128 << ((ctl >> 5) & 7),
            mrrs: 128 << ((ctl >> 12) & 7),
            mps_supported: 128 << (caps & 7),
        })
    }
}

fn u16_at(config: &[u8], o: usize) -> Option<u16> {
    config.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]))
}

/// The offset of the PCI Express capability (ID 0x10), walking the capability list.
fn pcie_capability(config: &[u8]) -> Result<usize, ConfigSpaceError> {
    let status = u16_at(config, 0x06).ok_or(ConfigSpaceError::ShorterThanHeader)?;
    if status & 0x10 == 0 {
        return Err(ConfigSpaceError::NoCapabilities);
    }
    let mut at = config.get(0x34).map(|&p| p as usize & 0xfc).unwrap_or(0);
    // 48 capabilities fit in the 192 bytes after the header: more means a loop.
    for _ in 0..48 {
        if at < 0x40 {
            break;
        }
        let (Some(&id), Some(&next)) = (config.get(at), config.get(at + 1)) else {
            return Err(ConfigSpaceError::CapabilityBeyond(config.len()));
        };
        if id == 0x10 {
            return Ok(at);
        }
        at = next as usize & 0xfc;
    }
    Err(ConfigSpaceError::NoPcieCapability)
}

#[cfg(test)]
mod tests {
    use super::{DeviceControl, PortType};
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
        let user = DeviceControl::decode(&config(2, 0, 64)).unwrap_err().to_string();
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
            "the device has no PCI Express capability"
        );
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
        assert_eq!(typed(0), Ok(PortType::Other(0)));
        // Without root, Linux shows 64 bytes: the capability is past them.
        let user = PortType::decode(&config(0, 0, 64)).unwrap_err().to_string();
        assert!(user.contains("beyond the 64 readable bytes"), "{user}");
        assert_eq!(
            PortType::decode(&config(0, 0, 0x72)).unwrap_err().to_string(),
            "config space ends inside the PCIe capability (reading it needs root)"
        );
    }
}
