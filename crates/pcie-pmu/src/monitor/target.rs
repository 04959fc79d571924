//! Per root port (or, for an event of no root port, per event) sums of an interval's rows:
//! the command-independent summary `top` draws and `serve` exports, with a short history for
//! sparklines.

use super::counting::Monitor;
use super::row::Row;
use crate::PmuMetric;
use serde::Serialize;
use std::collections::VecDeque;

/// What one line shows per root port (or per event without one).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// The root port, or `pmu/event/` for events without one.
    pub name: String,
    pub pmus: String,
    pub link: Option<String>,
    pub rx_gbps: Option<f64>,
    pub tx_gbps: Option<f64>,
    /// Rx / Tx as a share of the link's model bandwidth, in percent.
    pub rx_pct: Option<f64>,
    pub tx_pct: Option<f64>,
    /// Scaled counts per second of the target's events that do not measure payload.
    pub rate: Option<f64>,
    /// The lowest running share of the target's events.
    pub running_pct: f64,
}

impl Target {
    /// The one number a sparkline shows: Rx + Tx Gb/s, or the count rate when the target has
    /// no payload event.
    pub fn headline(&self) -> f64 {
        match (self.rx_gbps, self.tx_gbps) {
            (None, None) => self.rate.unwrap_or(0.0),
            (r, x) => r.unwrap_or(0.0) + x.unwrap_or(0.0),
        }
    }
}

impl Monitor {
    /// Sum an interval's rows per root port (events without one stay on their own).
    pub fn targets(&self, rows: &[Row]) -> Vec<Target> {
        let mut out: Vec<Target> = Vec::new();
        for r in rows {
            let name = r.root_port.clone().unwrap_or_else(|| format!("{}/{}/", r.pmu, r.event));
            let i = out.iter().position(|t| t.name == name).unwrap_or_else(|| {
                let port = r.port.map(|p| &self.ports[p]);
                out.push(Target {
                    name,
                    pmus: String::new(),
                    link: port.and_then(|p| p.link.clone()),
                    rx_gbps: None,
                    tx_gbps: None,
                    rx_pct: None,
                    tx_pct: None,
                    rate: None,
                    running_pct: 100.0,
                });
                out.len() - 1
            });
            let t = &mut out[i];
            if !t.pmus.split(',').any(|p| p == r.pmu) {
                if !t.pmus.is_empty() {
                    t.pmus.push(',');
                }
                t.pmus.push_str(&r.pmu);
            }
            t.running_pct = t.running_pct.min(r.running_pct);
            let add = |x: &mut Option<f64>, v: f64| *x = Some(x.unwrap_or(0.0) + v);
            match (r.metric, r.gbps) {
                (Some(PmuMetric::RxBytes), Some(g)) => add(&mut t.rx_gbps, g),
                (Some(PmuMetric::TxBytes), Some(g)) => add(&mut t.tx_gbps, g),
                (_, Some(_)) => {}
                (_, None) if r.interval_s > 0.0 => add(&mut t.rate, r.scaled.unwrap_or(0.0) / r.interval_s),
                (_, None) => {}
            }
        }
        for t in out.iter_mut() {
            let model = rows
                .iter()
                .find(|r| r.root_port.as_deref() == Some(t.name.as_str()))
                .and_then(|r| r.port)
                .and_then(|p| self.ports[p].model);
            if let Some(m) = model {
                t.rx_pct = t.rx_gbps.map(|g| 100.0 * g / m.rx_gbps);
                t.tx_pct = t.tx_gbps.map(|g| 100.0 * g / m.tx_gbps);
            }
        }
        out
    }
}

/// A target's last interval and the headlines of its recent ones, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    #[serde(flatten)]
    pub last: Target,
    pub history: VecDeque<f64>,
}

/// Add an interval's targets to `trends`, keeping at most `keep` values each.
pub fn add_interval(trends: &mut Vec<Trend>, targets: Vec<Target>, keep: usize) {
    for t in targets {
        let v = t.headline();
        match trends.iter_mut().find(|x| x.last.name == t.name) {
            Some(x) => {
                x.history.push_back(v);
                if x.history.len() > keep {
                    x.history.pop_front();
                }
                x.last = t;
            }
            None => trends.push(Trend {
                last: t,
                history: VecDeque::from([v]),
            }),
        }
    }
}
