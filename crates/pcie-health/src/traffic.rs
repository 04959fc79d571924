//! The payload each function's links carry, where no PCIe PMU counts it: the bytes its block
//! devices and network interfaces moved (pcie-sysfs [`read_traffic`]), summed per function,
//! and with sampling their rates against what the model says the path carries (4 KiB DMA
//! writes upstream, 4 KiB DMA reads downstream). A link whose payload comes within
//! [`BUSY_PCT`] of that at its busiest interval is the device's bottleneck.

use crate::read::Func;
use crate::report::Traffic;
use pcie_sysfs::{read_traffic, DeviceTraffic, SysfsError};
use std::collections::HashMap;
use std::path::Path;

/// Share of the model's bandwidth from which a link's payload makes a `link_busy` finding.
pub const BUSY_PCT: f64 = 90.0;

/// Per function, the upstream and downstream byte totals of the devices below it.
type Totals = Vec<Option<(u64, u64, Vec<String>)>>;

/// The function each device lives below: the nearest function directory among its ancestors.
fn per_function(funcs: &[Func], dirs: &HashMap<&Path, usize>, devices: Vec<DeviceTraffic>) -> Totals {
    let mut out: Totals = vec![None; funcs.len()];
    for d in devices {
        let Some(&i) = d.dir.ancestors().find_map(|a| dirs.get(a)) else {
            continue;
        };
        let t = out[i].get_or_insert_with(|| (0, 0, Vec::new()));
        t.0 = t.0.saturating_add(d.upstream_bytes);
        t.1 = t.1.saturating_add(d.downstream_bytes);
        t.2.push(d.name);
    }
    out
}

/// What the functions below one port moved together over a sampled check: the link below
/// the port carries all of it (a switch's upstream link, a multi-function device's link).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shared {
    /// The functions below with traffic (indices), at least two, and their devices.
    pub functions: Vec<usize>,
    pub devices: Vec<String>,
    /// The busiest interval's upstream and downstream Gb/s, summed over them.
    pub peak: (f64, f64),
}

/// The traffic counters of a host, read at the start of a check and at each sampling interval.
pub(crate) struct Watch<'a> {
    root: &'a Path,
    funcs: &'a [Func],
    parents: &'a [Option<usize>],
    dirs: HashMap<&'a Path, usize>,
    first: Totals,
    last: Totals,
    /// Per function, the peak upstream and downstream Gb/s over one interval: its own, and
    /// summed over every function below it.
    peak: Vec<(f64, f64)>,
    below_peak: Vec<(f64, f64)>,
}

impl<'a> Watch<'a> {
    pub fn start(root: &'a Path, funcs: &'a [Func], parents: &'a [Option<usize>]) -> Result<Watch<'a>, SysfsError> {
        let dirs = funcs.iter().enumerate().map(|(i, f)| (f.dev.dir(), i)).collect();
        let first = per_function(funcs, &dirs, read_traffic(root)?);
        Ok(Watch {
            root,
            funcs,
            parents,
            dirs,
            last: first.clone(),
            first,
            peak: vec![(0.0, 0.0); funcs.len()],
            below_peak: vec![(0.0, 0.0); funcs.len()],
        })
    }

    /// Reads the counters again, `secs` after the last reading: each function's rates over
    /// the interval, and their sums at every port above it (returned: per function, the
    /// (up, down) Gb/s of the functions below it).
    pub fn interval(&mut self, secs: f64) -> Result<Vec<(f64, f64)>, SysfsError> {
        let now = per_function(self.funcs, &self.dirs, read_traffic(self.root)?);
        let mut below = vec![(0.0, 0.0); self.funcs.len()];
        for (i, (was, is)) in self.last.iter().zip(&now).enumerate() {
            if let (Some(was), Some(is)) = (was, is) {
                let (up, down) = (gbps(was.0, is.0, secs), gbps(was.1, is.1, secs));
                let p = &mut self.peak[i];
                *p = (p.0.max(up), p.1.max(down));
                for &a in crate::path::chain(self.parents, i).iter().rev().skip(1) {
                    below[a].0 += up;
                    below[a].1 += down;
                }
            }
        }
        for (p, b) in self.below_peak.iter_mut().zip(&below) {
            *p = (p.0.max(b.0), p.1.max(b.1));
        }
        self.last = now;
        Ok(below)
    }

    /// Per function, what two or more functions below it moved together, where the check
    /// was sampled.
    pub fn shared(&self, sampled: bool) -> Vec<Option<Shared>> {
        let mut below: Vec<Vec<usize>> = vec![Vec::new(); self.funcs.len()];
        if sampled {
            for i in (0..self.funcs.len()).filter(|&i| self.last[i].is_some()) {
                for &a in crate::path::chain(self.parents, i).iter().rev().skip(1) {
                    below[a].push(i);
                }
            }
        }
        below
            .into_iter()
            .zip(&self.below_peak)
            .map(|(functions, &peak)| {
                let devices = functions
                    .iter()
                    .flat_map(|&i| self.last[i].iter().flat_map(|t| t.2.iter().cloned()))
                    .collect();
                (functions.len() >= 2).then_some(Shared {
                    functions,
                    devices,
                    peak,
                })
            })
            .collect()
    }

    /// Each function's traffic: totals from the last reading, rates where it was sampled for
    /// `sampled` seconds.
    pub fn finish(self, sampled: Option<f64>) -> Vec<Option<Traffic>> {
        self.last
            .into_iter()
            .zip(&self.first)
            .zip(self.peak)
            .map(|((last, first), peak)| {
                let (up, down, devices) = last?;
                let rate = |was: Option<u64>, is: u64| sampled.zip(was).map(|(s, w)| gbps(w, is, s));
                let first = first.as_ref();
                let sampled_peak = |p: f64| sampled.map(|_| p);
                Some(Traffic {
                    devices,
                    upstream_bytes: up,
                    downstream_bytes: down,
                    upstream_gbps: rate(first.map(|f| f.0), up),
                    upstream_peak_gbps: sampled_peak(peak.0),
                    downstream_gbps: rate(first.map(|f| f.1), down),
                    downstream_peak_gbps: sampled_peak(peak.1),
                    upstream_capacity_gbps: None,
                    downstream_capacity_gbps: None,
                })
            })
            .collect()
    }
}

/// Gb/s between two byte counts `secs` apart; a counter that went back (a device reset, an
/// interface recreated) counts from zero.
fn gbps(was: u64, is: u64, secs: f64) -> f64 {
    let bytes = if is >= was { is - was } else { is };
    bytes as f64 * 8.0 / 1e9 / secs.max(1e-9)
}

#[cfg(test)]
mod tests {
    use super::gbps;

    #[test]
    fn rates_count_from_zero_after_a_reset() {
        assert_eq!(gbps(1_000, 1_000 + 125_000_000, 1.0), 1.0);
        assert!((gbps(5_000, 250_000_000, 2.0) - 0.99998).abs() < 1e-12);
        assert_eq!(gbps(7, 7, 0.5), 0.0);
    }
}
