//! The simulator as a `Backend`: `sim[:HOST[,DEVICE]]`, by default the E5-2637 v3 host with
//! the NFP-6000 it was measured with.

use crate::backend::{Backend, BackendError, BackendInfo, BandwidthTotals, LatencySamples, Outcome};
use crate::params::{check_tags, Numa, ParamError, TestParams};
use crate::runner::{test_seed, workload};
use pcie_sim::{DeviceProfile, HostProfile, Measured, ProfileError, Simulator};

pub const DEFAULT_HOST: &str = "e5-2637v3";
pub const DEFAULT_DEVICE: &str = "nfp6000";

/// A simulated host and device.
#[derive(Debug)]
pub struct SimBackend {
    name: String,
    sim: Simulator,
    /// Simulate every DMA of a bandwidth test rather than stopping at its steady state.
    every_dma: bool,
}

impl SimBackend {
    /// Refuses a placement on a socket the simulated host does not have (`sockets` of its
    /// profile: 2, the device's and the one across the socket link `memory.remote_ns` away, or 1).
    pub fn check_numa(&self, numa: Numa) -> Result<(), ParamError> {
        let sockets = self.sim.host.sockets;
        if [numa.dev, numa.mem, numa.cpu].iter().all(|s| u32::from(*s) < sockets) {
            return Ok(());
        }
        let message = if sockets == 1 {
            format!(
                "the simulated host {} is a single-socket part: dev, mem and cpu must be 0",
                self.sim.host.name
            )
        } else {
            format!("the simulated host has {sockets} sockets: dev, mem and cpu must be 0 or 1")
        };
        Err(ParamError::new("numa", numa, message))
    }

    /// Parse `sim`, `sim:HOST` or `sim:HOST,DEVICE` (names of built-in profiles or paths to
    /// profile files).
    pub fn from_spec(spec: &str) -> Result<SimBackend, ProfileError> {
        let rest = spec
            .strip_prefix("sim")
            .filter(|r| r.is_empty() || r.starts_with(':'))
            .ok_or_else(|| ProfileError {
                file: spec.to_string(),
                message: "must be sim, sim:HOST, sim:HOST,DEVICE or exec:PROGRAM [ARGS]".into(),
            })?;
        let rest = rest.trim_start_matches(':');
        let (host, device) = match rest.split_once(',') {
            Some((h, d)) => (h, d),
            None if rest.is_empty() => (DEFAULT_HOST, DEFAULT_DEVICE),
            None => (rest, DEFAULT_DEVICE),
        };
        SimBackend::from_profiles(HostProfile::load(host)?, DeviceProfile::load(device)?)
    }

    /// A host and device given as profiles (a fit's candidates), checked as a pair.
    pub fn from_profiles(host: HostProfile, device: DeviceProfile) -> Result<SimBackend, ProfileError> {
        let sim = Simulator::new(host, device)?;
        Ok(SimBackend {
            name: format!("sim:{},{}", sim.host.name, sim.device.name),
            sim,
            every_dma: false,
        })
    }

    /// The same host and device with the device's outstanding read tags set to `tags` for the
    /// run (`--tags`): 1 to the profile's `dma.read_tags`, the device's maximum.
    pub fn with_read_tags(self, tags: u32) -> Result<SimBackend, ParamError> {
        let mut device = self.sim.device.clone();
        check_tags(tags, device.dma.read_tags, &device.name)?;
        device.dma.read_tags = tags;
        // Fewer tags make a read wait longer: the time base's bound is checked again.
        let sim =
            Simulator::new(self.sim.host.clone(), device).map_err(|e| ParamError::new("tags", tags, e.message))?;
        Ok(SimBackend { sim, ..self })
    }

    /// The same backend simulating every DMA of each bandwidth test (`--every-dma`) instead of
    /// accounting the DMAs after its steady state at its rate.
    pub fn with_every_dma(self, every_dma: bool) -> SimBackend {
        SimBackend { every_dma, ..self }
    }

    pub fn simulator(&self) -> &Simulator {
        &self.sim
    }
}

impl Backend for SimBackend {
    fn info(&self) -> BackendInfo {
        let describe = |name: &str, description: &str, sources: &[String]| serde_json::json!({ "name": name, "description": description, "sources": sources });
        let (h, d) = (&self.sim.host, &self.sim.device);
        let mut device = describe(&d.name, &d.description, &d.sources);
        // The tags the run used (the profile's, or --tags).
        device["read_tags"] = d.dma.read_tags.into();
        let bandwidth_dmas = if self.every_dma {
            "every DMA simulated"
        } else {
            "simulated until the rate is known within 0.1 % (95 % confidence) after two passes over the window; the rest accounted at that rate"
        };
        BackendInfo {
            name: self.name.clone(),
            description: serde_json::json!({
                "host": describe(&h.name, &h.description, &h.sources),
                "device": device,
                "bandwidth_dmas": bandwidth_dmas,
            }),
            max_transfer: d.dma.max_transfer,
        }
    }

    fn link(&self) -> Option<serde_json::Value> {
        serde_json::to_value(&self.sim.link).ok()
    }

    fn run(&self, t: &TestParams, seed: u64) -> Result<Outcome, BackendError> {
        t.check(self.sim.device.dma.max_transfer)
            .and_then(|()| self.check_numa(t.numa))
            .map_err(|e| BackendError {
                test: format!("{} size {}", t.kind, t.size),
                message: e.to_string(),
            })?;
        let cycle_ps = self.sim.cycle_ps();
        let (w, seed) = (workload(t), test_seed(seed, t));
        let measured = if self.every_dma {
            self.sim.run_every(&w, seed)
        } else {
            self.sim.run(&w, seed)
        };
        Ok(match measured {
            Measured::Latency { cycles, total_cycles } => Outcome::Latency(LatencySamples {
                cycles,
                cycle_ps,
                total_cycles,
            }),
            Measured::Bandwidth {
                bytes,
                transactions,
                time_cycles,
                ..
            } => Outcome::Bandwidth(BandwidthTotals {
                bytes,
                transactions,
                time_cycles,
                cycle_ps,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{sample, TestKind};

    fn params(kind: TestKind) -> TestParams {
        sample(kind, 2000)
    }

    #[test]
    fn specs() {
        assert_eq!(
            SimBackend::from_spec("sim").unwrap().info().name,
            "sim:e5-2637v3,nfp6000"
        );
        assert_eq!(
            SimBackend::from_spec("sim:gen4-server").unwrap().info().name,
            "sim:gen4-server,nfp6000"
        );
        assert!(SimBackend::from_spec("sim:nope")
            .unwrap_err()
            .to_string()
            .contains("unknown host profile"));
        assert!(SimBackend::from_spec("simulator").is_err());
        assert!(SimBackend::from_spec("sim:e5-2637v3,fpga")
            .unwrap_err()
            .to_string()
            .contains("device"));
    }

    #[test]
    fn read_tags_are_set_for_the_run_within_the_device_maximum() {
        let b = SimBackend::from_spec("sim:e5-2637v3,netfpga-sume").unwrap();
        assert_eq!(b.info().description["device"]["read_tags"], 32);
        let t = TestParams {
            size: 512,
            ..params(TestKind::BwRd)
        };
        let gbps = |b: &SimBackend| match b.run(&t, 1).unwrap() {
            Outcome::Bandwidth(x) => x.bytes as f64 / (x.time_cycles as f64 * x.cycle_ps),
            Outcome::Latency(_) => panic!("a bandwidth test"),
        };
        let all = gbps(&b);
        let two = b.with_read_tags(2).unwrap();
        assert_eq!(two.info().description["device"]["read_tags"], 2);
        // Two 512 B reads per ~0.5 us round trip: far below the link.
        assert!(gbps(&two) < all / 3.0, "{} vs {all}", gbps(&two));
        let e = SimBackend::from_spec("sim").unwrap().with_read_tags(23).unwrap_err();
        assert_eq!(
            e.to_string(),
            "tags 23: must be from 1 to 22 (the read tags of nfp6000)"
        );
    }

    #[test]
    fn same_seed_same_outcome_and_seeds_follow_parameters() {
        let b = SimBackend::from_spec("sim").unwrap();
        let t = params(TestKind::LatRd);
        assert_eq!(b.run(&t, 7).unwrap(), b.run(&t, 7).unwrap());
        assert_ne!(b.run(&t, 7).unwrap(), b.run(&t, 8).unwrap());
        assert_ne!(test_seed(1, &t), test_seed(1, &TestParams { size: 128, ..t.clone() }));
    }

    #[test]
    fn refuses_bad_parameters_naming_the_test() {
        let b = SimBackend::from_spec("sim").unwrap();
        let e = b
            .run(
                &TestParams {
                    size: 5000,
                    ..params(TestKind::BwRd)
                },
                1,
            )
            .unwrap_err();
        assert!(e.to_string().contains("BW_RD size 5000"), "{e}");
    }
}
