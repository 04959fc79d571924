//! AER counters over time: each error type's rate over a sampling interval, and the
//! thresholds a rate is flagged at. Sustained correctable errors mean replayed TLPs (each
//! costs the link a retransmission and the TLP its latency); the issue trackers' storms run
//! at 200 and more per second.

use crate::read::Func;
use pcie_sysfs::{AerCounts, AerFiles, SysfsError};
use std::time::{Duration, Instant};

/// Correctable errors per second (peak over one interval) that make a warning, and an error.
pub const CORRECTABLE_WARN_PER_S: f64 = 1.0;
pub const CORRECTABLE_ERROR_PER_S: f64 = 100.0;

/// How long to watch the counters (AER and traffic), and how often to read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    pub interval: Duration,
    pub duration: Duration,
}

/// What one function's counters did while sampled.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AerRates {
    /// `(type, per second)`, the peak over one interval, correctable types then uncorrectable.
    pub peak: Vec<(String, f64)>,
    /// The peak rate of all correctable errors together.
    pub correctable_peak: f64,
    /// Uncorrectable (non-fatal and fatal) errors counted while sampled.
    pub uncorrectable_new: u64,
}

fn files(a: &AerFiles) -> [Option<&AerCounts>; 3] {
    fn ok(f: &Option<Result<AerCounts, String>>) -> Option<&AerCounts> {
        f.as_ref().and_then(|r| r.as_ref().ok())
    }
    [ok(&a.correctable), ok(&a.nonfatal), ok(&a.fatal)]
}

/// Per-type rates between two readings `secs` apart (counters that went back, as after a
/// reset, count from zero), and the correctable total's rate.
pub fn interval_rates(before: &AerFiles, after: &AerFiles, secs: f64) -> (Vec<(String, f64)>, f64, u64) {
    let mut rates = Vec::new();
    let (mut correctable, mut uncorrectable) = (0.0, 0u64);
    for (class, (b, a)) in files(before).into_iter().zip(files(after)).enumerate() {
        let Some(a) = a else { continue };
        for (name, n) in &a.types {
            let was = b
                .and_then(|b| b.types.iter().find(|(m, _)| m == name))
                .map_or(0, |(_, c)| *c);
            let delta = if *n >= was { n - was } else { *n };
            rates.push((name.clone(), delta as f64 / secs));
        }
        let was = b.map_or(0, |b| b.total);
        let delta = if a.total >= was { a.total - was } else { a.total };
        if class == 0 {
            correctable = delta as f64 / secs;
        } else {
            uncorrectable = uncorrectable.saturating_add(delta);
        }
    }
    (rates, correctable, uncorrectable)
}

/// Reads every function's AER files each `interval` for `duration` and keeps the peaks;
/// `each` reads what else is watched, with the interval's seconds.
pub(crate) fn sample(
    funcs: &[Func],
    s: Sampling,
    mut each: impl FnMut(f64) -> Result<(), SysfsError>,
) -> Result<(Vec<AerRates>, f64), SysfsError> {
    let start = Instant::now();
    let mut last: Vec<AerFiles> = funcs.iter().map(|f| f.aer.clone()).collect();
    let mut out = vec![AerRates::default(); funcs.len()];
    let mut at = start;
    loop {
        let left = s.duration.saturating_sub(start.elapsed());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(s.interval.min(left));
        let now = Instant::now();
        let secs = (now - at).as_secs_f64().max(1e-6);
        at = now;
        for (i, f) in funcs.iter().enumerate() {
            let read = f.dev.files()?.aer_files()?;
            let (rates, correctable, uncorrectable) = interval_rates(&last[i], &read, secs);
            let r = &mut out[i];
            for (name, rate) in rates {
                match r.peak.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, p)) => *p = p.max(rate),
                    None => r.peak.push((name, rate)),
                }
            }
            r.correctable_peak = r.correctable_peak.max(correctable);
            r.uncorrectable_new = r.uncorrectable_new.saturating_add(uncorrectable);
            last[i] = read;
        }
        each(secs)?;
    }
    Ok((out, start.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(cor: &str, nonfatal: &str) -> AerFiles {
        AerFiles {
            correctable: Some(AerCounts::parse(cor)),
            nonfatal: Some(AerCounts::parse(nonfatal)),
            fatal: None,
            rootport: None,
        }
    }

    #[test]
    fn rates_per_type_over_an_interval() {
        let a = files(
            "RxErr 10\nBadDLLP 0\nTOTAL_ERR_COR 10\n",
            "Undefined 0\nTOTAL_ERR_NONFATAL 0\n",
        );
        let b = files(
            "RxErr 10\nBadDLLP 420\nTOTAL_ERR_COR 430\n",
            "Undefined 2\nTOTAL_ERR_NONFATAL 2\n",
        );
        let (rates, cor, uncor) = interval_rates(&a, &b, 2.0);
        assert_eq!(
            rates,
            [
                ("RxErr".to_string(), 0.0),
                ("BadDLLP".to_string(), 210.0),
                ("Undefined".to_string(), 1.0)
            ]
        );
        assert_eq!((cor, uncor), (210.0, 2));
        // A counter that went back counts from zero.
        let (_, cor, _) = interval_rates(&b, &a, 1.0);
        assert_eq!(cor, 10.0);
    }
}
