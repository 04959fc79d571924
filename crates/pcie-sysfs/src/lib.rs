//! One reader of PCI devices in a Linux sysfs tree and of the host's facts, shared by pcie-bench
//! (the host information of a run), pcie-nvml (a GPU's sysfs record), pcie-pmu (which devices sit below the root ports a PMU watches) and pcie-health
//! (the link checks).
//!
//! Every reader takes a root directory: `/` on a host, a temporary directory in tests, where
//! [`tree::write_pci_function`] lays out fake functions (as Meta's `below` tests its procfs
//! reader). Owned here:
//!
//! - [`Bdf`]: the PCI address, parsed with or without its domain and printed as `dddd:bb:dd.f`;
//!   a bad text gives a [`BdfError`] naming it and the allowed form.
//! - [`PciDevice`]: one function's ids, class, driver, link speed and width (as sysfs writes
//!   them: `pcie_model::Generation::from_sysfs_speed` reads the speed), NUMA node and bridge
//!   bus range, read with
//!   [`PciDevice::read`] or all at once with [`PciDevice::discover`].
//! - [`PcieCapability`]: the PCI Express capability's registers from the function's config
//!   space (found by a capability walk that stops at loops and truncation): [`PortType`], MPS and
//!   MRRS ([`DeviceControl`]), 8- and 10-bit tags, link capabilities, control and status, ASPM;
//!   or why they are unknown ([`ConfigSpaceError`], e.g. the 64 bytes Linux shows without root).
//!   [`has_aer`] and [`blank_serial`] look at the extended capabilities; [`AtomicOps`] (Device
//!   Capabilities/Control 2) and [`Acs`] (Access Control Services) say how AtomicOps and
//!   peer-to-peer requests are routed.
//! - [`LinkFiles`] ([`LinkSpeed`], [`LinkWidth`]: values or "cannot tell"), [`AerFiles`] (the
//!   `aer_dev_*` counters), and [`host`]: the ASPM policy and the NUMA nodes.
//! - The host's facts as a benchmark run records them: the NUMA layout ([`numa_layout`]: CPUs
//!   and memory per node), the kernel's IOMMU settings ([`KernelIommu`]) and a device's record
//!   ([`DeviceRecord`]: link, MPS/MRRS or why not, IOMMU group type).
//! - [`read_traffic`]: the bytes block devices and network interfaces moved ([`DeviceTraffic`]),
//!   and [`line_rate_mbps`], what a network function's interfaces can move,
//!   each with its directory below its PCI function's: a link's payload where no PMU counts it;
//!   [`sata_links`] and [`usb_root_hubs`], what a storage or USB controller's ports negotiated
//!   (what its traffic can ask of its link).
//! - [`ConfigBuilder`]: realistic config spaces for fixture trees and simulated hosts.
//! - [`snapshot`]: a copy of exactly the files pcieperf reads, for `--sysfs DIR` offline;
//!   [`lspci`]: the same tree laid out from an `lspci -vvv` dump (a bug report's).
//! - [`files`]: the file conventions (trimmed attributes, sorted listings, `0x` numbers) other
//!   sysfs readers share, and [`files::Dir`], a directory held open whose files are opened by
//!   name (a function's twenty files without twenty walks of its path); a large tree is read on
//!   several threads ([`PciDevice::discover_map`]).
//!
//! ```
//! use pcie_sysfs::{Bdf, PciDevice};
//!
//! let bdf: Bdf = "30:03.0".parse().unwrap();
//! assert_eq!(bdf.to_string(), "0000:30:03.0");
//! let root = std::env::temp_dir().join(format!("pcie-sysfs-doc-{}", std::process::id()));
//! # #[cfg(unix)]
//! # {
//! pcie_sysfs::tree::write_pci_function(&root, &[], "0000:30:03.0", &[("class", "0x060400")], None).unwrap();
//! let port = PciDevice::read(&root, bdf).unwrap();
//! assert!(port.is_bridge());
//! assert_eq!(PciDevice::discover(&root).unwrap(), vec![port]);
//! # }
//! # let _ = std::fs::remove_dir_all(&root);
//! ```

mod aer;
mod bdf;
mod config_builder;
mod config_space;
mod device;
mod error;
pub mod files;
/// Fake config space for tests (here and in other crates), not part of the product.
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
pub mod host;
mod host_facts;
mod link_files;
#[cfg(unix)]
pub mod lspci;
mod ports;
#[cfg(unix)]
pub mod snapshot;
mod traffic;
#[cfg(unix)]
pub mod tree;

pub use aer::{AerCounts, AerFiles};
pub use bdf::{Bdf, BdfError};
pub use config_builder::{ConfigBuilder, LinkSetup};
pub use config_space::{
    blank_serial, extended_capabilities, has_aer, read_registers, speed_code_gts, Acs, AerStatus, Aspm, AtomicOps,
    ConfigSpaceError, DeviceControl, LinkRegisters, PcieCapability, PortType, Tags10, ACS_BITS, CONFIG_SPACE,
    CORRECTABLE_BITS, UNCORRECTABLE_BITS,
};
pub use device::{FunctionFiles, PciDevice, DEVICE_FILES, PCI_DEVICES};
pub use error::SysfsError;
pub use host_facts::{numa_layout, DeviceRecord, KernelIommu, NumaNode};
pub use link_files::{LinkFiles, LinkSpeed, LinkWidth, MAX_WIDTH};
pub use ports::{port_files, sata_links, usb_root_hubs, UsbRootHub};
pub use traffic::{line_rate_mbps, read_traffic, CounterKind, DeviceTraffic};
