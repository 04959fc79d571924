//! Opened counters: events opened on a source (catalog groups as perf event groups), read
//! every interval into wrap-safe, multiplex-scaled deltas and rows.

use super::events::unpolled_width;
use super::plan::{Plan, Port, Watch};
use super::row::{short_event, Row};
use super::MonitorError;
use crate::accumulate::gbps;
use crate::{Accumulator, CounterId, CounterSource, Delta, ResolvedEvent};

/// One counter being read.
struct Counter {
    watch: Watch,
    id: CounterId,
    acc: Accumulator,
    event: String,
    /// `name: member, member` when opened in a group.
    group: Option<String>,
}

/// Opened counters and their accumulators.
pub struct Monitor {
    counters: Vec<Counter>,
    pub ports: Vec<Port>,
    /// Unix time when the counters were opened: rows' `time_s` counts from here.
    started: f64,
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Monitor {
    /// Open every planned event on `src`; events of one group on one PMU (a catalog group's
    /// also with the same filter terms) as one perf event group, in plan order, the first as
    /// leader.
    pub fn open(src: &mut dyn CounterSource, plan: Plan) -> Result<Monitor, MonitorError> {
        let watches = plan.watches;
        let together = |a: &Watch, b: &Watch| {
            a.group.is_some()
                && a.group == b.group
                && a.user_group == b.user_group
                && a.ev.pmu == b.ev.pmu
                && (a.user_group || a.ev.config[1..] == b.ev.config[1..])
        };
        let mut opened: Vec<Option<(CounterId, Option<String>)>> = vec![None; watches.len()];
        for i in 0..watches.len() {
            if opened[i].is_some() {
                continue;
            }
            let members: Vec<usize> = (i..watches.len())
                .filter(|&j| j == i || together(&watches[i], &watches[j]))
                .collect();
            let evs: Vec<&ResolvedEvent> = members.iter().map(|&j| &watches[j].ev).collect();
            let ids = src.open_group(&evs)?;
            let label = (members.len() > 1).then(|| {
                let names: Vec<String> = evs.iter().map(|e| short_event(e)).collect();
                format!(
                    "{}: {}",
                    watches[i].group.as_deref().unwrap_or_default(),
                    names.join(", ")
                )
            });
            for (&j, id) in members.iter().zip(ids) {
                opened[j] = Some((id, label.clone()));
            }
        }
        let counters = watches
            .into_iter()
            .zip(opened)
            .map(|(watch, o)| {
                let (id, group) = o.expect("every watch was opened");
                Counter {
                    event: short_event(&watch.ev),
                    acc: Accumulator::new(unpolled_width(&watch.ev).unwrap_or(64)),
                    watch,
                    id,
                    group,
                }
            })
            .collect();
        Ok(Monitor {
            counters,
            ports: plan.ports,
            started: unix_now(),
        })
    }

    /// (PMU, event) of every counter, as rows name them.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.counters
            .iter()
            .map(|c| (c.watch.ev.pmu.as_str(), c.event.as_str()))
    }

    fn row(&self, c: &Counter, d: &Delta, time_s: f64, interval_s: f64) -> Row {
        let bytes = c.watch.bytes_per_count.and_then(|b| d.bytes(b));
        Row {
            time_s,
            unix_time: ((self.started + time_s) * 1000.0).round() / 1000.0,
            interval_s,
            pmu: c.watch.ev.pmu.clone(),
            event: c.event.clone(),
            root_port: c.watch.port.map(|p| self.ports[p].name.clone()),
            metric: c.watch.metric,
            raw: d.raw,
            scaled: d.scaled,
            running_pct: d.running_pct(),
            enabled_ns: d.enabled_ns,
            running_ns: d.running_ns,
            bytes,
            gbps: bytes.map(|b| gbps(b, interval_s)),
            group: c.group.clone(),
            port: c.watch.port,
        }
    }

    /// Read every counter and fold the reads into the totals (drivers without a poller update
    /// their 64-bit count from a narrow hardware counter only when read).
    pub fn refresh(&mut self, src: &mut dyn CounterSource) -> Result<(), MonitorError> {
        self.read(src).map(drop)
    }

    fn read(&mut self, src: &mut dyn CounterSource) -> Result<Vec<Option<Delta>>, MonitorError> {
        let mut out = Vec::with_capacity(self.counters.len());
        for c in self.counters.iter_mut() {
            out.push(c.acc.update(src.read(c.id)?));
        }
        Ok(out)
    }

    /// Close an interval of `interval_s` ending `time_s` after the start: one row per event.
    pub fn sample(
        &mut self,
        src: &mut dyn CounterSource,
        time_s: f64,
        interval_s: f64,
    ) -> Result<Vec<Row>, MonitorError> {
        let deltas = self.read(src)?;
        Ok(self
            .counters
            .iter()
            .zip(deltas)
            .filter_map(|(c, d)| d.map(|d| self.row(c, &d, time_s, interval_s)))
            .collect())
    }

    /// The whole run so far, one row per event.
    pub fn totals(&mut self, src: &mut dyn CounterSource, elapsed: f64) -> Result<Vec<Row>, MonitorError> {
        self.refresh(src)?;
        Ok(self
            .counters
            .iter()
            .map(|c| self.row(c, &c.acc.total(), elapsed, elapsed))
            .collect())
    }

    /// Every counter's watch with its total over the reads so far, in plan order.
    pub fn total_deltas(&self) -> impl Iterator<Item = (&Watch, Delta)> {
        self.counters.iter().map(|c| (&c.watch, c.acc.total()))
    }
}
