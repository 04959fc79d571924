//! NVIDIA GPUs' own view of their PCIe link, through NVML (pcie-nvml): link generation and
//! width (current and maximum) as the GPU sees it, its replay counter and, when sampled, the
//! replay rate, and its cumulative PCIe TX/RX byte counters, the GPU's payload where no PMU
//! counts it. DCGM serves the same facts as `DCGM_FI_DEV_PCIE_REPLAY_COUNTER`,
//! `DCGM_FI_DEV_PCIE_LINK_GEN`/`_WIDTH`, `DCGM_FI_DEV_PCIE_MAX_LINK_GEN`/`_WIDTH` and
//! `DCGM_FI_PROF_PCIE_TX_BYTES`/`_RX_BYTES` (docs/check.md).
//!
//! A replay is a TLP the link layer sent again after a bit error, so at a given bit error ratio
//! replays grow with the bits the link carries: the threshold is the rate a link at the PCIe
//! specification's bit error ratio ([`REPLAY_BER`]) would see if it carried its full raw rate
//! at its current generation and width. A fixed count flags every fast, wide link (DCGM's
//! fixed threshold once flagged every AWS P5 host) and misses slow, narrow ones.

use crate::finding::{Finding, Kind, Severity};
use pcie_model::Generation;
use pcie_nvml::nvml::GpuPcie;
use pcie_sysfs::Bdf;
use serde::Serialize;

/// The bit error ratio the PCIe Base Specification requires of every lane (10^-12; Gen6 and
/// Gen7 require it after FEC).
pub const REPLAY_BER: f64 = 1e-12;

/// One GPU as NVML reports it (figures NVML could not give are `None`, with why in `unread`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuHealth {
    /// `0000:19:00.0`.
    pub bdf: String,
    pub name: Option<String>,
    pub current_gen: Option<u32>,
    pub current_width: Option<u32>,
    pub max_gen: Option<u32>,
    pub max_width: Option<u32>,
    /// PCIe replays since the driver loaded, at the end of the check.
    pub replays: Option<u64>,
    /// With sampling: replays per second, and the rate above which they are a finding at the
    /// link's current generation and width ([`replay_limit_per_s`]).
    pub replays_per_s: Option<f64>,
    pub replay_limit_per_s: Option<f64>,
    /// Bytes the GPU sent (tx: upstream, into host memory) and received (rx: downstream) over
    /// PCIe since the driver loaded, and with sampling their Gb/s.
    pub tx_bytes: Option<u64>,
    pub rx_bytes: Option<u64>,
    pub tx_gbps: Option<f64>,
    pub rx_gbps: Option<f64>,
    /// What NVML could not give, and why.
    pub unread: Vec<String>,
}

/// Replays per second a link of `gen` (1-7) and `width` lanes would see at [`REPLAY_BER`]
/// carrying its full raw rate: Gen5 x16 0.512/s, Gen3 x8 0.064/s.
pub fn replay_limit_per_s(gen: u32, width: u32) -> Option<f64> {
    let g = Generation::ALL.get((gen as usize).checked_sub(1)?)?;
    (width > 0).then(|| REPLAY_BER * g.gt_per_s() * 1e9 * f64::from(width))
}

/// The GPUs of the last reading `end`, rates from the first (`start`) over `seconds` when the
/// check sampled.
pub fn health(start: Option<&[GpuPcie]>, end: &[GpuPcie], seconds: Option<f64>) -> Vec<GpuHealth> {
    end.iter()
        .map(|g| {
            let mut unread = Vec::new();
            let mut ok = |what: &str, r: &Result<u64, String>| match r {
                Ok(v) => Some(*v),
                Err(e) => {
                    unread.push(format!("{what}: {e}"));
                    None
                }
            };
            let (replays, tx_bytes, rx_bytes) = (
                ok("replay counter", &g.replays),
                ok("PCIe TX bytes", &g.tx_bytes),
                ok("PCIe RX bytes", &g.rx_bytes),
            );
            let link = g.link.as_ref().map_err(|e| unread.push(format!("link: {e}"))).ok();
            let before = start.and_then(|s| s.iter().find(|b| b.bdf == g.bdf));
            // A counter that went back (the driver reloaded) gives no rate.
            let rate = |now: Option<u64>, then: Option<&Result<u64, String>>| {
                let (now, then, secs) = (now?, *then?.as_ref().ok()?, seconds.filter(|s| *s > 0.0)?);
                Some(now.checked_sub(then)? as f64 / secs)
            };
            GpuHealth {
                bdf: g.bdf.clone(),
                name: g.name.clone(),
                current_gen: link.map(|l| l.gen),
                current_width: link.map(|l| l.width),
                max_gen: link.map(|l| l.max_gen),
                max_width: link.map(|l| l.max_width),
                replays,
                replays_per_s: rate(replays, before.map(|b| &b.replays)),
                replay_limit_per_s: link.and_then(|l| replay_limit_per_s(l.gen, l.width)),
                tx_bytes,
                rx_bytes,
                tx_gbps: rate(tx_bytes, before.map(|b| &b.tx_bytes)).map(|b| b * 8.0 / 1e9),
                rx_gbps: rate(rx_bytes, before.map(|b| &b.rx_bytes)).map(|b| b * 8.0 / 1e9),
                unread,
            }
        })
        .collect()
}

/// A warning for each GPU whose sampled replay rate is above its link's limit.
pub fn findings(gpus: &[GpuHealth]) -> Vec<Finding> {
    gpus.iter()
        .filter_map(|g| {
            let (rate, limit) = (g.replays_per_s?, g.replay_limit_per_s?);
            if rate <= limit {
                return None;
            }
            let bdf: Bdf = g.bdf.parse().ok()?;
            Some(Finding {
                severity: Severity::Warning,
                kind: Kind::GpuReplays,
                bdf,
                limited_by: None,
                lost_pct: None,
                demand: None,
                message: format!(
                    "the GPU replayed {rate:.2} TLPs/s, above the {limit:.3}/s a Gen{} x{} link at the specification's bit error ratio (1e-12) would at its full rate: check the slot, riser and retimers",
                    g.current_gen.unwrap_or(0),
                    g.current_width.unwrap_or(0)
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_nvml::NvmlLink;

    fn gpu(replays: u64, tx: u64, rx: Result<u64, String>) -> GpuPcie {
        GpuPcie {
            bdf: "0000:19:00.0".into(),
            name: Some("NVIDIA H100".into()),
            link: Ok(NvmlLink {
                gen: 5,
                width: 16,
                max_gen: 5,
                max_width: 16,
            }),
            replays: Ok(replays),
            tx_bytes: Ok(tx),
            rx_bytes: rx,
        }
    }

    #[test]
    fn the_limit_follows_generation_and_width() {
        assert!((replay_limit_per_s(5, 16).unwrap() - 0.512).abs() < 1e-12);
        assert!((replay_limit_per_s(3, 8).unwrap() - 0.064).abs() < 1e-12);
        assert_eq!(replay_limit_per_s(0, 16), None);
        assert_eq!(replay_limit_per_s(9, 16), None);
        assert_eq!(replay_limit_per_s(4, 0), None);
    }

    #[test]
    fn rates_come_from_two_readings_and_a_fast_replayer_is_a_finding() {
        let start = [gpu(100, 1_000, Ok(0))];
        let end = [gpu(110, 1_000 + 25_000_000_000, Err("error 3".into()))];
        let h = health(Some(&start), &end, Some(2.0));
        let g = &h[0];
        assert_eq!((g.replays, g.replays_per_s), (Some(110), Some(5.0)));
        assert_eq!(g.tx_gbps, Some(100.0));
        assert_eq!((g.rx_bytes, g.rx_gbps), (None, None));
        assert_eq!(g.unread, ["PCIe RX bytes: error 3"]);
        let f = findings(&h);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].kind, f[0].severity), (Kind::GpuReplays, Severity::Warning));
        assert!(
            f[0].message.contains("5.00 TLPs/s, above the 0.512/s a Gen5 x16 link"),
            "{}",
            f[0].message
        );
        // Below the limit, without sampling, or with a counter that went back: no finding.
        let slow = health(Some(&start), &[gpu(101, 0, Ok(0))], Some(10.0));
        assert_eq!(slow[0].replays_per_s, Some(0.1));
        assert!(findings(&slow).is_empty());
        let totals = health(None, &end, None);
        assert_eq!((totals[0].replays, totals[0].replays_per_s), (Some(110), None));
        assert!(findings(&totals).is_empty());
        assert_eq!(
            health(Some(&start), &[gpu(5, 0, Ok(0))], Some(1.0))[0].replays_per_s,
            None
        );
    }
}
