//! Test support for this crate and its users: fake sysfs contents that are tedious to build
//! by hand. Not part of the product (behind the `fixture` feature).

/// A type-0 config header with a capability list: power management at 0x40, then the PCIe
/// capability at 0x70 with the given Device Capabilities and Device Control, cut to `len` bytes.
pub fn config_with_pcie_capability(devcap: u32, devctl: u16, len: usize) -> Vec<u8> {
    let mut c = vec![0u8; 256];
    c[0x06] = 0x10;
    c[0x34] = 0x40;
    c[0x40] = 0x01;
    c[0x41] = 0x70;
    c[0x70] = 0x10;
    c[0x74..0x78].copy_from_slice(&devcap.to_le_bytes());
    c[0x78..0x7a].copy_from_slice(&devctl.to_le_bytes());
    c.truncate(len);
    c
}
