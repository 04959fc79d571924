//! A monitor run kept per target over time — each root port's (or event's) values at every
//! interval — for charts and summaries after the run (`pcieperf pmu record --svg/--html`).

use crate::monitor::Target;

/// One target's values per interval: (seconds since the start, the target's values then).
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub target: Target,
    pub points: Vec<(f64, Target)>,
}

impl History {
    /// Adds one interval's `targets` at `time` to `history`, which holds one entry per target
    /// name in the order the names first appear.
    pub fn record(history: &mut Vec<History>, time: f64, targets: Vec<Target>) {
        for t in targets {
            match history.iter_mut().find(|h| h.target.name == t.name) {
                Some(h) => h.points.push((time, t)),
                None => history.push(History {
                    target: t.clone(),
                    points: vec![(time, t)],
                }),
            }
        }
    }

    /// Whether the target carries payload Gb/s (else only a count rate).
    pub fn is_payload(&self) -> bool {
        self.points
            .iter()
            .any(|(_, v)| v.rx_gbps.is_some() || v.tx_gbps.is_some())
    }

    /// Mean and peak of `value` over the intervals that have one, with their number.
    pub fn mean_peak(&self, value: impl Fn(&Target) -> Option<f64>) -> Option<(f64, f64, usize)> {
        let v: Vec<f64> = self.points.iter().filter_map(|(_, t)| value(t)).collect();
        (!v.is_empty()).then(|| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let peak = v.iter().copied().fold(f64::MIN, f64::max);
            (mean, peak, v.len())
        })
    }
}
