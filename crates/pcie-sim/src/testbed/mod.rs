//! The DMA test bed: pcie-bench's host, link and DMA device as one machine. A [`Simulator`] joins
//! a host and a device profile; [`Simulator::run`] runs one pcie-bench test ([`Workload`]) and
//! returns what the device's counters would read ([`Measured`]).

mod bound;
mod costs;
mod iommu;
mod llc;
mod machine;
mod power;
mod profile;
mod steady;
mod tlp_time;
mod wire;
mod workload;

pub use machine::Measured;
pub use profile::{builtin_devices, builtin_hosts, DeviceProfile, HostProfile};
pub use workload::{Addresses, CachePrep, TestOp, Workload, BUFFER_BYTES};

use crate::profile_file::ProfileError;
use pcie_model::{LinkConfig, LinkParams};

/// A cache line, the unit the host's memory system moves.
const LINE: u64 = 64;

/// Transactions one test may run at most (the bench caps its counts here). With it the
/// simulator's time base holds: a host and device pair is refused when its worst-case
/// transaction, times this many, would not fit 64-bit picoseconds.
pub const MAX_TRANSACTIONS: u64 = 1 << 32;

/// Longest worst case of one transaction, about 4.29 ms: [`MAX_TRANSACTIONS`] of them plus the
/// latency test's random start (less than a timestamp tick, at most 1024 cycles of 1 MHz) stay
/// below 2^64 ps.
const MAX_TRANSACTION_PS: u64 = u64::MAX / (MAX_TRANSACTIONS + 1);

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
        let s = Simulator { host, device, link };
        let bound_ps = s.worst_transaction_ns() * 1000.0;
        if bound_ps > MAX_TRANSACTION_PS as f64 {
            return Err(ProfileError {
                file: format!("{} + {}", s.host.name, s.device.name),
                message: format!(
                    "one transaction may take up to {} ns of simulated time (the profiles' times weighted by how \
                     often one transaction meets them); the simulator's 64-bit picosecond clock holds {} \
                     transactions of at most {} ns: lower the largest times",
                    crate::profile_file::show((bound_ps / 1000.0).round()),
                    MAX_TRANSACTIONS,
                    MAX_TRANSACTION_PS / 1000
                ),
            });
        }
        Ok(s)
    }

    /// An upper bound of the simulated time one transaction of any test takes or adds to a
    /// run, in nanoseconds (every profile time weighted by how often one transaction meets it,
    /// plus the rounding of each to whole picoseconds).
    pub fn worst_transaction_ns(&self) -> f64 {
        bound::transaction_bound_ns(&self.host, &self.device, &self.link) + 10.0
    }

    /// Load built-in profiles (or TOML files) by name.
    pub fn load(host: &str, device: &str) -> Result<Simulator, ProfileError> {
        Simulator::new(HostProfile::load(host)?, DeviceProfile::load(device)?)
    }

    /// Length of one device clock cycle in picoseconds.
    pub fn cycle_ps(&self) -> f64 {
        1e6 / self.device.clock.mhz
    }

    /// Run one test. The same workload and seed always give the same result. A bandwidth
    /// test is simulated until its steady state is known and its remaining DMAs are accounted
    /// at that rate ([`steady`]).
    ///
    /// # Panics
    ///
    /// On a workload of more than [`MAX_TRANSACTIONS`] (pcie-bench caps its counts there).
    pub fn run(&self, w: &Workload, seed: u64) -> Measured {
        self.run_as(w, seed, false)
    }

    /// Run one test simulating every DMA of a bandwidth test (for checking [`Simulator::run`]
    /// and for measuring the simulator's speed). Panics as [`Simulator::run`] does.
    pub fn run_every(&self, w: &Workload, seed: u64) -> Measured {
        self.run_as(w, seed, true)
    }

    /// The machine adds its times without saturating: the pair's bound on one transaction
    /// (checked by [`Simulator::new`]) times at most [`MAX_TRANSACTIONS`] keeps every sum from
    /// wrapping, so a test of more is refused here, once, rather than guarded per event.
    fn run_as(&self, w: &Workload, seed: u64, every: bool) -> Measured {
        assert!(
            w.count <= MAX_TRANSACTIONS,
            "{} transactions in one test: the simulator's clock holds at most {MAX_TRANSACTIONS}",
            w.count
        );
        let mut m = machine::Machine::new(&self.host, &self.device, &self.link, w, seed);
        if w.op.is_bandwidth() {
            m.run_bandwidth(w, every)
        } else {
            m.run_latency(w)
        }
    }
}
