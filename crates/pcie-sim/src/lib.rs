//! A deterministic transaction-level simulator of host + PCIe link + DMA device.
//!
//! Time is kept in picoseconds, randomness comes from a seeded generator, and every number is
//! produced by a mechanism whose parameters live in a host or device profile (TOML data with the
//! source of every value). One simulation is single-threaded; parallelism is across independent
//! simulations.

mod engine;
pub mod host;
mod iommu;
mod llc;
mod profile;
mod rng;
mod tlp_time;
mod workload;

pub use engine::Measured;
pub use profile::{builtin_devices, builtin_hosts, DeviceProfile, HostProfile, ProfileError};
pub use rng::{mix_seed, Rng};
pub use workload::{Addresses, CachePrep, Op, Workload, BUFFER_BYTES};

use pcie_model::{LinkConfig, LinkParams};

/// A host and a device joined by a link.
#[derive(Debug, Clone)]
pub struct Simulator {
    pub host: HostProfile,
    pub device: DeviceProfile,
    pub link: LinkConfig,
}

impl Simulator {
    /// The link trains to the device's generation and width; MPS is the smaller of both sides'.
    pub fn new(host: HostProfile, device: DeviceProfile) -> Result<Simulator, ProfileError> {
        let params = LinkParams {
            gen: pcie_model::Generation::ALL[device.link.gen as usize - 1],
            lanes: device.link.lanes,
            mps: host.link.max_mps.min(device.link.max_mps),
            mrrs: device.link.mrrs,
            rcb: host.link.rcb,
            ..LinkParams::default()
        };
        let link = LinkConfig::new(&params).map_err(|e| ProfileError {
            file: device.name.clone(),
            message: format!("link: {e}"),
        })?;
        Ok(Simulator { host, device, link })
    }

    /// Load built-in profiles (or TOML files) by name.
    pub fn load(host: &str, device: &str) -> Result<Simulator, ProfileError> {
        Simulator::new(HostProfile::load(host)?, DeviceProfile::load(device)?)
    }

    /// Length of one device clock cycle in picoseconds.
    pub fn cycle_ps(&self) -> f64 {
        1e6 / self.device.clock.mhz
    }

    /// Run one test. The same workload and seed always give the same result.
    pub fn run(&self, w: &Workload, seed: u64) -> Measured {
        let mut m = engine::Machine::new(&self.host, &self.device, &self.link, w, seed);
        if w.op.is_bandwidth() {
            m.run_bandwidth(w)
        } else {
            m.run_latency(w)
        }
    }
}
