//! Faults a PMU host profile can carry (`[[fault]]` tables), so that link-health checks, the
//! exporter and its alert rules can be shown and tested on a simulated host: a link that trained
//! below what both ends can do, an MPS or MRRS set smaller than the path allows, ASPM enabled,
//! and correctable AER errors arriving at a steady rate.
//!
//! A fault names a function by address: a root port or the device plugged into it. Link faults
//! act on the link between the two (the simulation moves its traffic over the degraded link too);
//! MPS, MRRS and ASPM are that function's own Device and Link Control settings.

use crate::profile_file::{between, one_of, SIZES};
use serde::Deserialize;

/// The kernel's names of the correctable errors, in `aer_dev_correctable`'s order (Linux
/// `drivers/pci/pcie/aer.c`, `aer_correctable_error_string`).
pub const CORRECTABLE_KINDS: [&str; 8] = [
    "RxErr",
    "BadTLP",
    "BadDLLP",
    "Rollover",
    "Timeout",
    "NonFatalErr",
    "CorrIntErr",
    "HeaderOF",
];

/// The most correctable errors a second a fault may give: far beyond the storms users report
/// (hundreds a second), small enough that a year of them fits a 64-bit count many times over.
const MAX_AER_PER_S: f64 = 1e6;

/// ASPM states a Link Control register can enable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aspm {
    Off,
    L0s,
    L1,
    L0sL1,
}

impl Aspm {
    /// (L0s, L1) enabled.
    pub fn states(self) -> (bool, bool) {
        (
            matches!(self, Aspm::L0s | Aspm::L0sL1),
            matches!(self, Aspm::L1 | Aspm::L0sL1),
        )
    }
}

/// One function's faults; every key but `bdf` is optional.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// A root port's `bdf` or a port's `device_bdf`.
    pub bdf: String,
    /// The generation the link trained at, below what both ends support.
    pub link_gen: Option<u32>,
    /// The width the link trained at.
    pub link_lanes: Option<u32>,
    /// Max Payload Size in the function's Device Control.
    pub mps: Option<u32>,
    /// Max Read Request Size in the function's Device Control.
    pub mrrs: Option<u32>,
    /// ASPM enabled in the function's Link Control.
    pub aspm: Option<Aspm>,
    /// Correctable errors the function reports per second of simulated time ...
    pub aer_correctable_per_s: Option<f64>,
    /// ... of this kind (one of [`CORRECTABLE_KINDS`]; `RxErr` when absent).
    pub aer_correctable_kind: Option<String>,
}

impl FaultSpec {
    /// Check the keys on their own; `key` names the table (`fault[0]`), `link` is the best link
    /// the two ends could train (generation, lanes), `max_mps` the function's largest MPS.
    pub(crate) fn check(&self, key: &str, link: (u32, u32), max_mps: u32) -> Result<(), String> {
        if let Some(g) = self.link_gen {
            let allowed: Vec<u32> = (1..=link.0).collect();
            one_of(&format!("{key}.link_gen"), g, &allowed)
                .map_err(|e| format!("{e} (the link's ends support Gen{} at most)", link.0))?;
        }
        if let Some(w) = self.link_lanes {
            let allowed: Vec<u32> = [1, 2, 4, 8, 16].into_iter().filter(|&w| w <= link.1).collect();
            one_of(&format!("{key}.link_lanes"), w, &allowed)
                .map_err(|e| format!("{e} (the link's ends have x{} at most)", link.1))?;
        }
        if let Some(m) = self.mps {
            let allowed: Vec<u32> = SIZES.into_iter().filter(|&s| s <= max_mps).collect();
            one_of(&format!("{key}.mps"), m, &allowed)
                .map_err(|e| format!("{e} (the function supports {max_mps} B at most)"))?;
        }
        if let Some(m) = self.mrrs {
            one_of(&format!("{key}.mrrs"), m, &SIZES)?;
        }
        if let Some(r) = self.aer_correctable_per_s {
            between(
                &format!("{key}.aer_correctable_per_s"),
                r,
                0.0,
                MAX_AER_PER_S,
                " per second",
            )?;
        }
        if let Some(k) = &self.aer_correctable_kind {
            if !CORRECTABLE_KINDS.contains(&k.as_str()) {
                return Err(format!(
                    "{key}.aer_correctable_kind = {k:?}: must be one of {}",
                    CORRECTABLE_KINDS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Index of the correctable error kind in [`CORRECTABLE_KINDS`].
    pub fn correctable_kind(&self) -> usize {
        self.aer_correctable_kind
            .as_deref()
            .and_then(|k| CORRECTABLE_KINDS.iter().position(|x| *x == k))
            .unwrap_or(0)
    }

    /// Correctable errors reported by `ns` nanoseconds of simulated time: the rate's whole
    /// errors so far (a steady rate, so the same time always gives the same count).
    pub fn correctable_by(&self, ns: u64) -> u64 {
        let rate = self.aer_correctable_per_s.unwrap_or(0.0);
        (rate * ns as f64 / 1e9).floor() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(extra: &str) -> FaultSpec {
        toml::from_str(&format!("bdf = \"0000:b1:00.0\"\n{extra}")).unwrap()
    }

    #[test]
    fn keys_are_checked_against_the_link_and_the_function() {
        let f = |extra: &str| fault(extra).check("fault[0]", (3, 16), 512);
        assert_eq!(f("link_gen = 2\nlink_lanes = 8\nmps = 128\nmrrs = 256"), Ok(()));
        assert_eq!(
            f("link_gen = 4").unwrap_err(),
            "fault[0].link_gen = 4: must be one of 1, 2, 3 (the link's ends support Gen3 at most)"
        );
        assert_eq!(
            fault("link_lanes = 8").check("fault[1]", (5, 4), 512).unwrap_err(),
            "fault[1].link_lanes = 8: must be one of 1, 2, 4 (the link's ends have x4 at most)"
        );
        assert_eq!(
            f("mps = 1024").unwrap_err(),
            "fault[0].mps = 1024: must be one of 128, 256, 512 (the function supports 512 B at most)"
        );
        assert!(f("mrrs = 100")
            .unwrap_err()
            .starts_with("fault[0].mrrs = 100: must be one of 128"));
        assert_eq!(
            f("aer_correctable_per_s = -1").unwrap_err(),
            "fault[0].aer_correctable_per_s = -1: must be between 0 and 1000000 per second"
        );
        assert_eq!(
            f("aer_correctable_kind = \"rxerr\"").unwrap_err(),
            "fault[0].aer_correctable_kind = \"rxerr\": must be one of RxErr, BadTLP, BadDLLP, Rollover, \
             Timeout, NonFatalErr, CorrIntErr, HeaderOF"
        );
        let e = toml::from_str::<FaultSpec>("bdf = \"0000:b1:00.0\"\naspm = \"l2\"").unwrap_err();
        assert!(e.to_string().contains("l0s_l1"), "{e}");
    }

    #[test]
    fn correctable_errors_grow_at_the_rate_over_simulated_time() {
        let f = fault("aer_correctable_per_s = 250.0\naer_correctable_kind = \"BadDLLP\"");
        assert_eq!(f.correctable_kind(), 2);
        assert_eq!(f.correctable_by(0), 0);
        assert_eq!(f.correctable_by(3_999_999), 0);
        assert_eq!(f.correctable_by(4_000_000), 1);
        assert_eq!(f.correctable_by(10_000_000_000), 2500);
        assert_eq!(fault("").correctable_by(10_000_000_000), 0);
        assert_eq!(fault("").correctable_kind(), 0);
    }
}
