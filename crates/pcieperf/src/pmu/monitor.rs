//! The sampling core behind `pmu stat`, `top`, `record` and `serve`: which events to count and
//! what they mean (bytes per count, metric, root port and its link model), opening them on a
//! [`CounterSource`], reading them every interval into rows, summing rows per root port, and the
//! run loop (interval, duration, command, Ctrl-C) that waits and timestamps through the source.

use super::source::{self, SimArgs, SourceArgs};
use crate::error::CliError;
use crate::output::{Cell, Table};
use clap::Args;
use pcie_model::{stream, Generation, LinkConfig, LinkParams, Op};
use pcie_pmu::accumulate::{gbps, max_interval_secs};
use pcie_pmu::counter::event_name;
use pcie_pmu::{
    Accumulator, CounterError, CounterId, CounterSource, Delta, PciDevice, PcieView, PmuError, PmuEvent, ResolvedEvent,
    System,
};
use serde::Serialize;
use std::collections::VecDeque;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Options shared by the live commands (`top`, `record`, `serve`).
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Events: PMU/EVENT[,TERM=VALUE...]/ specs separated by commas, may be repeated [default:
    /// the rx_bytes / tx_bytes payload events of every PCIe PMU]
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub events: Vec<String>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Read the counters every MS milliseconds
    #[arg(short = 'I', long = "interval", value_name = "MS", default_value_t = 1000)]
    pub interval: u64,
}

impl WatchArgs {
    /// Discover, resolve the events (or the default payload events), plan and open them.
    pub fn open(&self) -> Result<(Monitor, Box<dyn CounterSource>), CliError> {
        check_interval(Some(self.interval))?;
        let (sys, mut src) = source::open(&self.source, &self.sim)?;
        let events = if self.events.is_empty() {
            let place = match self.source.source.as_str() {
                "perf" => format!("--sysfs {}", self.source.sysfs.display()),
                other => format!("--source {other}"),
            };
            payload_events(&sys, &place)?
        } else {
            resolve_events(&sys, &self.events)?
        };
        let plan = Plan::new(&sys, events)?;
        plan.warn_wraps(self.interval as f64 / 1000.0);
        let mon = Monitor::open(src.as_mut(), plan)?;
        Ok((mon, src))
    }
}

pub fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

pub fn counter_err(e: CounterError) -> CliError {
    if e.is_input() {
        CliError::Usage(e.to_string())
    } else {
        CliError::Runtime(e.to_string())
    }
}

/// `-I 0` is refused: the interval must be at least 1 ms.
pub fn check_interval(ms: Option<u64>) -> Result<(), CliError> {
    match ms {
        Some(0) => Err(usage("-I 0: the interval must be at least 1 ms")),
        _ => Ok(()),
    }
}

/// `--duration S`: a positive, finite number of seconds.
pub fn check_duration(d: Option<f64>) -> Result<(), CliError> {
    match d {
        Some(d) if !(d.is_finite() && d > 0.0) => {
            Err(usage(format!("--duration {d}: must be a positive number of seconds")))
        }
        Some(d) if d > 1e9 => Err(usage(format!("--duration {d}: too long"))),
        _ => Ok(()),
    }
}

/// Split `-e` text at the commas that separate events, not those between an event's slashes.
pub fn split_events(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut slashes = 0;
    for c in text.chars() {
        match c {
            '/' => {
                slashes += 1;
                cur.push(c);
            }
            ',' if slashes % 2 == 0 => {
                out.push(std::mem::take(&mut cur));
                slashes = 0;
            }
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

/// Resolve every `-e` spec (a PMU base name may give several events).
pub fn resolve_events(sys: &System, specs: &[String]) -> Result<Vec<ResolvedEvent>, CliError> {
    let mut events = Vec::new();
    for text in specs {
        for spec in split_events(text) {
            if spec.is_empty() {
                return Err(usage(format!("-e {text:?}: empty event between commas")));
            }
            events.extend(sys.resolve_all(&spec)?);
        }
    }
    Ok(events)
}

/// The payload events (catalog metric `rx_bytes`/`tx_bytes` in bytes, no required parameter)
/// of every PCIe PMU: what the live commands count without `-e`.
pub fn payload_events(sys: &System, place: &str) -> Result<Vec<ResolvedEvent>, CliError> {
    let mut out = Vec::new();
    for v in sys.pcie_pmus()? {
        for e in &v.events {
            let payload = matches!(e.metric.as_deref(), Some("rx_bytes" | "tx_bytes"));
            if payload && e.unit.as_deref() == Some("bytes") && e.required_params.is_empty() {
                let spec = match e.origin {
                    pcie_pmu::catalog::Origin::Sysfs => format!("{}/{}/", v.pmu.name, e.name),
                    pcie_pmu::catalog::Origin::Catalog => format!("{}/{}/", v.pmu.name, e.encoding),
                };
                out.push(sys.resolve(&spec)?);
            }
        }
    }
    if out.is_empty() {
        return Err(usage(format!(
            "{place}: no PCIe PMU with rx_bytes/tx_bytes payload events here; name events with -e \
             (e.g. -e software/cpu-clock/), see `pcieperf pmu list`"
        )));
    }
    Ok(out)
}

/// Bytes per count of a payload event: the family catalog's value (which knows each kernel
/// variant's unit), else the kernel's `.scale` with a byte `.unit`; and the catalog's metric.
/// `views` are the system's [`System::pcie_pmus`].
pub fn payload(views: &[PcieView], ev: &ResolvedEvent) -> (Option<f64>, Option<String>) {
    if let Some(e) = catalog_event(views, ev) {
        let bpc = if e.unit.as_deref() == Some("bytes") {
            e.bytes_per_count
        } else {
            None
        };
        return (bpc, e.metric.clone());
    }
    let mult = match ev.unit.as_deref() {
        Some("MiB") => Some(1048576.0),
        Some("KiB") => Some(1024.0),
        Some("B" | "Bytes" | "bytes") => Some(1.0),
        _ => None,
    };
    (mult.map(|m| m * ev.scale.unwrap_or(1.0)), None)
}

/// The annotated event a resolved one names, when its PMU is a PCIe PMU.
fn catalog_event<'a>(views: &'a [PcieView], ev: &ResolvedEvent) -> Option<&'a PmuEvent> {
    let name = ev.event.as_ref()?;
    views
        .iter()
        .filter(|v| v.pmu.name == ev.pmu)
        .find_map(|v| v.events.iter().find(|e| e.name.eq_ignore_ascii_case(name)))
}

/// What a link can carry, from sysfs `current_link_speed` ("32.0 GT/s PCIe") and width.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkModel {
    /// Raw rate after line encoding.
    pub raw_gbps: f64,
    /// Payload the model gives for streams of 4 KB DMA writes (device → host, Rx at the root
    /// port) and reads (completions host → device, Tx), MPS 256, MRRS 512.
    pub rx_gbps: f64,
    pub tx_gbps: f64,
}

impl LinkModel {
    pub fn of(speed: &str, lanes: u32) -> Option<LinkModel> {
        let gt: f64 = speed.split_whitespace().next()?.parse().ok()?;
        let gen = Generation::ALL.into_iter().find(|g| (g.gt_per_s() - gt).abs() < 0.01)?;
        let cfg = LinkConfig::new(&LinkParams {
            gen,
            lanes,
            ..LinkParams::default()
        })
        .ok()?;
        Some(LinkModel {
            raw_gbps: gt * gen.encoding().efficiency() * lanes as f64,
            rx_gbps: stream(&cfg, Op::Wr, 4096, 0).ok()?.payload.0,
            tx_gbps: stream(&cfg, Op::Rd, 4096, 0).ok()?.payload.0,
        })
    }

    fn of_port(p: &PciDevice) -> Option<LinkModel> {
        LinkModel::of(p.current_link_speed.as_deref()?, p.current_link_width?)
    }

    fn add(self, o: LinkModel) -> LinkModel {
        LinkModel {
            raw_gbps: self.raw_gbps + o.raw_gbps,
            rx_gbps: self.rx_gbps + o.rx_gbps,
            tx_gbps: self.tx_gbps + o.tx_gbps,
        }
    }
}

/// The root port(s) one PMU watches.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    /// `0000:30:03.0`, or several joined with `+` when one PMU covers them.
    pub name: String,
    /// `32.0 GT/s PCIe x16` as sysfs shows it.
    pub link: Option<String>,
    /// Sum over the ports; `None` when a port's speed or width is unknown.
    pub model: Option<LinkModel>,
}

/// An event to count with what turns its counts into bytes and link shares.
#[derive(Debug, Clone)]
pub struct Watch {
    pub ev: ResolvedEvent,
    pub bytes_per_count: Option<f64>,
    pub metric: Option<String>,
    /// Index into [`Plan::ports`] for PCIe PMUs that name their root ports.
    pub port: Option<usize>,
    /// The catalog's group: events of one group on one PMU, with the same filter terms, are
    /// opened as one perf event group (HiSilicon's flux/time pairs must count together).
    pub group: Option<String>,
}

/// The events to count and the root ports they belong to.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub watches: Vec<Watch>,
    pub ports: Vec<Port>,
}

impl Plan {
    pub fn new(sys: &System, events: Vec<ResolvedEvent>) -> Result<Plan, PmuError> {
        let views = sys.pcie_pmus()?;
        let mut plan = Plan::default();
        for ev in events {
            let (bytes_per_count, metric) = payload(&views, &ev);
            let rps = views
                .iter()
                .find(|v| v.pmu.name == ev.pmu)
                .map(|v| v.root_ports.as_slice())
                .unwrap_or_default();
            let port = (!rps.is_empty()).then(|| {
                let name = rps.iter().map(|r| r.bdf.to_string()).collect::<Vec<_>>().join("+");
                plan.ports.iter().position(|p| p.name == name).unwrap_or_else(|| {
                    let devs: Vec<&PciDevice> = rps.iter().filter_map(|r| r.port.as_ref()).collect();
                    let model = (devs.len() == rps.len())
                        .then(|| devs.iter().map(|d| LinkModel::of_port(d)).collect::<Option<Vec<_>>>())
                        .flatten()
                        .and_then(|m| m.into_iter().reduce(LinkModel::add));
                    let link = devs
                        .iter()
                        .filter_map(|d| d.link_summary())
                        .collect::<Vec<_>>()
                        .join(" + ");
                    plan.ports.push(Port {
                        name,
                        link: (!link.is_empty()).then_some(link),
                        model,
                    });
                    plan.ports.len() - 1
                })
            });
            let group = catalog_event(&views, &ev).and_then(|e| e.group.clone());
            plan.watches.push(Watch {
                ev,
                bytes_per_count,
                metric,
                port,
                group,
            });
        }
        Ok(plan)
    }

    /// Events whose narrow, unpolled counter can wrap more than once between two reads when the
    /// root port's link runs at its raw rate.
    pub fn wrap_warnings(&self, read_every: f64) -> Vec<String> {
        let mut out = Vec::new();
        for w in &self.watches {
            let (Some(width), Some(bpc)) = (unpolled_width(&w.ev), w.bytes_per_count) else {
                continue;
            };
            let Some(gbps) = w.port.and_then(|p| self.ports[p].model).map(|m| m.raw_gbps) else {
                continue;
            };
            if let Some(limit) = max_interval_secs(width, bpc, gbps) {
                if read_every > limit {
                    out.push(format!(
                        "{}: a {width}-bit counter of {bpc} B units wraps every {limit:.2} s at the link's {gbps:.1} Gb/s, \
                         and reads every {read_every} s can miss wraps; use -I {} or a kernel whose driver polls the counter",
                        event_name(&w.ev),
                        (limit * 500.0).floor().max(1.0)
                    ));
                }
            }
        }
        out
    }

    pub fn warn_wraps(&self, read_every: f64) {
        for w in self.wrap_warnings(read_every) {
            eprintln!("warning: {w}");
        }
    }
}

/// Bits of the hardware register behind an event whose driver does not poll it: the
/// pre-upstream DWC driver (`pcie_bdf_*`) reads only the low 32 bits of the payload counter,
/// so its values are accumulated modulo 2^32.
pub(super) fn unpolled_width(ev: &ResolvedEvent) -> Option<u32> {
    ev.pmu.starts_with("pcie_bdf_").then_some(32)
}

/// One event over an interval (or the whole run): the row of `pmu stat` and `pmu record`.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Seconds since counting started (on the source's clock), at the end of the interval.
    pub time_s: f64,
    /// Length of the interval in seconds.
    pub interval_s: f64,
    pub pmu: String,
    pub event: String,
    pub root_port: Option<String>,
    pub metric: Option<String>,
    pub raw: u64,
    /// Raw × enabled / running; absent when the event never ran.
    pub scaled: Option<f64>,
    pub running_pct: f64,
    pub enabled_ns: u64,
    pub running_ns: u64,
    pub bytes: Option<f64>,
    pub gbps: Option<f64>,
    /// The perf event group the event was opened in, with its members (JSON only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(skip)]
    pub port: Option<usize>,
}

const COLUMNS: [(&str, &str); 13] = [
    ("time_s", "Time (s)"),
    ("interval_s", "Interval (s)"),
    ("pmu", "PMU"),
    ("event", "Event"),
    ("root_port", "Root port"),
    ("metric", "Metric"),
    ("raw", "Count"),
    ("scaled", "Scaled"),
    ("running_pct", "Running %"),
    ("enabled_ns", "Enabled ns"),
    ("running_ns", "Running ns"),
    ("bytes", "Bytes"),
    ("gbps", "Gb/s"),
];

/// Rows as the CSV of `pmu stat` and `pmu record`.
pub fn csv_table(rows: &[Row]) -> Table {
    let mut t = Table::new(&COLUMNS);
    let opt = |x: Option<f64>, dec: usize| x.map_or(Cell::Empty, |x| Cell::num(x, dec));
    let text = |x: &Option<String>| x.as_deref().map_or(Cell::Empty, Cell::text);
    for r in rows {
        t.push(vec![
            Cell::num(r.time_s, 6),
            Cell::num(r.interval_s, 6),
            Cell::text(r.pmu.as_str()),
            Cell::text(r.event.as_str()),
            text(&r.root_port),
            text(&r.metric),
            Cell::Int(r.raw),
            opt(r.scaled, 0),
            Cell::num(r.running_pct, 2),
            Cell::Int(r.enabled_ns),
            Cell::Int(r.running_ns),
            opt(r.bytes, 0),
            r.gbps.map_or(Cell::Empty, Cell::gbps),
        ]);
    }
    t
}

/// CSV lines of `rows`, with the header only when asked (interval output appends).
pub fn csv_lines(rows: &[Row], header: bool) -> String {
    strip_header(csv_table(rows).to_csv(), header)
}

/// CSV text without its header line unless `header`.
pub fn strip_header(csv: String, header: bool) -> String {
    if header {
        csv
    } else {
        csv.split_once('\n').map_or(String::new(), |(_, body)| body.to_string())
    }
}

/// One JSON object per row, one per line.
pub fn json_lines(rows: &[Row]) -> String {
    rows.iter()
        .map(|r| serde_json::to_string(r).expect("rows serialise") + "\n")
        .collect()
}

/// The event as rows show it: the alias (`cpu-clock`) or the terms (`config=0x10`).
fn short_event(e: &ResolvedEvent) -> String {
    let n = event_name(e);
    n.strip_prefix(&format!("{}/", e.pmu))
        .and_then(|s| s.strip_suffix('/'))
        .map_or(n.clone(), str::to_string)
}

/// What one row shows per root port (or, for an event of no root port, per event): the
/// command-independent summary `top` draws and `serve` exports.
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
}

impl Monitor {
    /// Open every planned event on `src`; events of one catalog group (same PMU and filter
    /// terms) as one perf event group, in plan order, the first as leader.
    pub fn open(src: &mut dyn CounterSource, plan: Plan) -> Result<Monitor, CliError> {
        let watches = plan.watches;
        let together = |a: &Watch, b: &Watch| {
            a.group.is_some() && a.group == b.group && a.ev.pmu == b.ev.pmu && a.ev.config[1..] == b.ev.config[1..]
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
            let ids = src.open_group(&evs).map_err(counter_err)?;
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
            interval_s,
            pmu: c.watch.ev.pmu.clone(),
            event: c.event.clone(),
            root_port: c.watch.port.map(|p| self.ports[p].name.clone()),
            metric: c.watch.metric.clone(),
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
    pub fn refresh(&mut self, src: &mut dyn CounterSource) -> Result<(), CliError> {
        self.read(src).map(drop)
    }

    fn read(&mut self, src: &mut dyn CounterSource) -> Result<Vec<Option<Delta>>, CliError> {
        let mut out = Vec::with_capacity(self.counters.len());
        for c in self.counters.iter_mut() {
            out.push(c.acc.update(src.read(c.id).map_err(counter_err)?));
        }
        Ok(out)
    }

    /// Close an interval of `interval_s` ending `time_s` after the start: one row per event.
    pub fn sample(&mut self, src: &mut dyn CounterSource, time_s: f64, interval_s: f64) -> Result<Vec<Row>, CliError> {
        let deltas = self.read(src)?;
        Ok(self
            .counters
            .iter()
            .zip(deltas)
            .filter_map(|(c, d)| d.map(|d| self.row(c, &d, time_s, interval_s)))
            .collect())
    }

    /// The whole run so far, one row per event.
    pub fn totals(&mut self, src: &mut dyn CounterSource, elapsed: f64) -> Result<Vec<Row>, CliError> {
        self.refresh(src)?;
        Ok(self
            .counters
            .iter()
            .map(|c| self.row(c, &c.acc.total(), elapsed, elapsed))
            .collect())
    }

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
            match (r.metric.as_deref(), r.gbps) {
                (Some("rx_bytes"), Some(g)) => add(&mut t.rx_gbps, g),
                (Some("tx_bytes"), Some(g)) => add(&mut t.tx_gbps, g),
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

/// What a command does with each interval the run loop closes.
pub trait Sink {
    /// An interval's rows; `Ok(false)` ends the run (a closed pipe, a full disk).
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, CliError>;
    /// Called at every wake-up between intervals; `Ok(false)` ends the run (a key).
    fn wake(&mut self, _mon: &Monitor) -> Result<bool, CliError> {
        Ok(true)
    }
    /// How often to wake up at most.
    fn poll(&self) -> Duration {
        Duration::from_millis(100)
    }
}

/// When the run loop reads and when it stops.
#[derive(Debug, Clone, Copy)]
pub struct Schedule<'a> {
    /// Close an interval every this long; `None`: only refresh every second (totals only).
    pub interval: Option<Duration>,
    pub duration: Option<f64>,
    /// Count while this command runs.
    pub command: &'a [String],
}

/// SIGINT/SIGTERM set the flag; a second one ends the program at once (exit 130).
pub fn cancel_on_signals() -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&cancel));
        let _ = signal_hook::flag::register(sig, Arc::clone(&cancel));
    }
    cancel
}

/// Count until the duration passes, the command exits, `cancel` is set or the sink says stop,
/// handing each closed interval to the sink (the end of the run closes a last, partial one).
/// Returns the seconds counted, on the source's clock.
pub fn run(
    src: &mut dyn CounterSource,
    mon: &mut Monitor,
    sched: Schedule,
    cancel: &AtomicBool,
    sink: &mut dyn Sink,
) -> Result<f64, CliError> {
    let start = src.elapsed();
    mon.refresh(src)?;
    let mut child = match sched.command.split_first() {
        Some((prog, args)) => Some(
            std::process::Command::new(prog)
                .args(args)
                .spawn()
                .map_err(|e| CliError::Runtime(format!("cannot run {prog:?}: {e}")))?,
        ),
        None => None,
    };
    let deadline = sched.duration.map(|d| start + Duration::from_secs_f64(d));
    let step = sched.interval;
    let mut next_tick = step.map(|s| start + s);
    let mut last_tick = start;
    // Without an interval the counters are still read every second: drivers without a poller
    // update their count only when read, and the multiplexing scale is applied per read interval.
    let refresh = Duration::from_secs(1);
    let mut next_refresh = step.is_none().then_some(start + refresh);
    // Wake up at least this often to notice the command's exit (10 ms), Ctrl-C or a key.
    let poll = if child.is_some() {
        Duration::from_millis(10)
    } else {
        sink.poll()
    };
    let mut status = None;
    loop {
        let now = src.elapsed();
        let wake = [deadline, next_tick, next_refresh, Some(now + poll)]
            .into_iter()
            .flatten()
            .min();
        if let Some(w) = wake.filter(|w| *w > now) {
            src.sleep(w - now).map_err(counter_err)?;
        }
        let now = src.elapsed();
        let mut done = cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) || !sink.wake(mon)?;
        if let Some(ch) = child.as_mut() {
            if let Some(s) = ch
                .try_wait()
                .map_err(|e| CliError::Runtime(format!("waiting for the command: {e}")))?
            {
                status = Some(s);
                done = true;
            }
        }
        if let Some(t) = next_refresh.as_mut().filter(|t| !done && now >= **t) {
            mon.refresh(src)?;
            while *t <= now {
                *t += refresh;
            }
        }
        let tick = next_tick.is_some_and(|t| now >= t);
        if step.is_some() && (tick || (done && now > last_tick)) {
            let rows = mon.sample(src, (now - start).as_secs_f64(), (now - last_tick).as_secs_f64())?;
            if !sink.interval(mon, &rows)? {
                done = true;
            }
            last_tick = now;
            if let (Some(t), Some(s)) = (next_tick.as_mut(), step) {
                while *t <= now {
                    *t += s;
                }
            }
        }
        if done {
            break;
        }
    }
    if let Some(mut ch) = child {
        let s = match status {
            Some(s) => s,
            // Interrupted: the command got the same signal; wait for it.
            None => ch
                .wait()
                .map_err(|e| CliError::Runtime(format!("waiting for the command: {e}")))?,
        };
        if !s.success() {
            eprintln!("warning: the command exited with {s}");
        }
    }
    Ok((src.elapsed() - start).as_secs_f64())
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use pcie_pmu::fixture::{self, DwcVariant, Tree};
    use pcie_pmu::Reading;

    #[test]
    fn events_split_at_commas_outside_slashes() {
        assert_eq!(
            split_events("dwc_rootport_3018/rx_memory_read,lane=4/,software/cpu-clock/"),
            vec!["dwc_rootport_3018/rx_memory_read,lane=4/", "software/cpu-clock/"]
        );
        assert_eq!(split_events("msr/tsc/"), vec!["msr/tsc/"]);
        assert_eq!(split_events("a/b/,,c/d/"), vec!["a/b/", "", "c/d/"]);
    }

    /// A source whose counters advance by a fixed step per read and run half the time, on a
    /// clock that only moves when the monitor sleeps.
    #[derive(Default)]
    pub struct Fake {
        pub reads: Vec<Reading>,
        pub now: Duration,
    }

    impl CounterSource for Fake {
        fn open(&mut self, _e: &ResolvedEvent) -> Result<CounterId, CounterError> {
            self.reads.push(Reading::default());
            Ok(CounterId(self.reads.len() - 1))
        }
        fn read(&mut self, id: CounterId) -> Result<Reading, CounterError> {
            let r = &mut self.reads[id.0];
            let now = *r;
            r.value += 1_000_000;
            r.enabled += 100_000_000;
            r.running += 50_000_000;
            Ok(now)
        }
        fn elapsed(&self) -> Duration {
            self.now
        }
        fn sleep(&mut self, d: Duration) -> Result<(), CounterError> {
            self.now += d;
            Ok(())
        }
    }

    /// A host with a Gen5 x16 root port behind an upstream DWC PMU and a pre-upstream one.
    pub fn dwc_host(name: &str) -> Tree {
        let t = Tree::new(name);
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.root_port("0000:30:03.0", "0"); // 32 GT/s x16: 504 Gb/s
        t
    }

    #[test]
    fn bytes_per_count_follows_the_catalog_and_the_kernel_scale() {
        let t = Tree::new("monitor-payload");
        fixture::common_pmus(&t);
        fixture::dwc_pmu(&t, "pcie_bdf_300300", 26, "0", DwcVariant::V1);
        fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
        t.intel_cpu(143);
        fixture::intel_iio_pmus(&t, 0, 40, "3.0517578125e-5", &["0000:00"]);
        let sys = System::discover(t.path()).unwrap();
        let views = sys.pcie_pmus().unwrap();
        let p = |spec: &str| payload(&views, &sys.resolve(spec).unwrap());
        assert_eq!(
            p("pcie_bdf_300300/Rx_PCIe_TLP_Data_Payload/"),
            (Some(16.0), Some("rx_bytes".into()))
        );
        assert_eq!(
            p("dwc_rootport_3018/tx_pcie_tlp_data_payload/"),
            (Some(1.0), Some("tx_bytes".into()))
        );
        // A counting event has a metric but no bytes.
        let (b, m) = p("dwc_rootport_3018/rx_memory_read,lane=1/");
        assert_eq!(b, None);
        assert!(m.is_some());
        assert_eq!(p("uncore_iio_free_running_0/bw_in_port0/").0, Some(32.0));
        assert_eq!(p("msr/tsc/"), (None, None));
        assert_eq!(p("software/cpu-clock/"), (None, None));
        // Every instance of a PMU base name resolves.
        let all = sys.resolve_all("dwc_rootport/rx_pcie_tlp_data_payload/").unwrap();
        assert_eq!(all.len(), 1);
    }

    #[test]
    fn narrow_unpolled_counters_warn_when_reads_are_too_far_apart() {
        let t = dwc_host("monitor-wrap");
        let sys = System::discover(t.path()).unwrap();
        let plan = |spec: &str| Plan::new(&sys, vec![sys.resolve(spec).unwrap()]).unwrap();
        let v1 = plan("pcie_bdf_300300/Rx_PCIe_TLP_Data_Payload/");
        // 2^32 x 16 B at 504 Gb/s: a wrap every 1.09 s.
        assert!(v1.wrap_warnings(1.0).is_empty());
        let w = v1.wrap_warnings(2.0);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("wraps every 1.09 s") && w[0].contains("-I 545"),
            "{}",
            w[0]
        );
        // Upstream drivers read 64 bits.
        let upstream = plan("dwc_rootport_3018/rx_pcie_tlp_data_payload/");
        assert!(upstream.wrap_warnings(10.0).is_empty());
        let g = LinkModel::of("8.0 GT/s PCIe", 8).unwrap();
        assert_eq!((g.raw_gbps * 100.0).round(), 6302.0);
        assert_eq!(LinkModel::of("unknown", 8), None);
    }

    #[test]
    fn link_model_follows_pcie_model() {
        let m = LinkModel::of("32.0 GT/s PCIe", 16).unwrap();
        let cfg = LinkConfig::new(&LinkParams {
            gen: Generation::Gen5,
            lanes: 16,
            ..LinkParams::default()
        })
        .unwrap();
        assert_eq!(m.rx_gbps, stream(&cfg, Op::Wr, 4096, 0).unwrap().payload.0);
        assert_eq!(m.tx_gbps, stream(&cfg, Op::Rd, 4096, 0).unwrap().payload.0);
        // TLP and DLLP overheads keep the payload below the raw rate.
        assert!(m.rx_gbps < m.raw_gbps && m.rx_gbps > 0.8 * m.raw_gbps, "{m:?}");
    }

    #[test]
    fn default_events_are_the_payload_metrics_of_every_pcie_pmu() {
        let t = dwc_host("monitor-default");
        let sys = System::discover(t.path()).unwrap();
        let evs = payload_events(&sys, "here").unwrap();
        let names: Vec<String> = evs.iter().map(event_name).collect();
        assert_eq!(names.len(), 4, "{names:?}");
        for pmu in ["pcie_bdf_300300", "dwc_rootport_3018"] {
            assert!(names
                .iter()
                .any(|n| n.starts_with(pmu) && n.to_lowercase().contains("rx_pcie_tlp_data_payload")));
            assert!(names
                .iter()
                .any(|n| n.starts_with(pmu) && n.to_lowercase().contains("tx_pcie_tlp_data_payload")));
        }
        let bare = Tree::new("monitor-no-pcie");
        fixture::common_pmus(&bare);
        let sys = System::discover(bare.path()).unwrap();
        let e = payload_events(&sys, "--sysfs /x").unwrap_err().to_string();
        assert!(e.starts_with("--sysfs /x: no PCIe PMU") && e.contains("-e"), "{e}");
    }

    #[test]
    fn rows_sum_per_root_port_with_the_link_share() {
        let t = dwc_host("monitor-targets");
        let sys = System::discover(t.path()).unwrap();
        let mut events = resolve_events(
            &sys,
            &["dwc_rootport_3018/rx_pcie_tlp_data_payload/,dwc_rootport_3018/tx_pcie_tlp_data_payload/".into()],
        )
        .unwrap();
        events.extend(resolve_events(&sys, &["software/cpu-clock/".into()]).unwrap());
        let plan = Plan::new(&sys, events).unwrap();
        assert_eq!(plan.ports.len(), 1);
        assert_eq!(plan.ports[0].name, "0000:30:03.0");
        let model = plan.ports[0].model.unwrap();
        let mut src = Fake::default();
        let mut mon = Monitor::open(&mut src, plan).unwrap();
        mon.refresh(&mut src).unwrap();
        let rows = mon.sample(&mut src, 0.1, 0.1).unwrap();
        assert_eq!(rows.len(), 3);
        // 1e6 counts running half the time: 2e6 bytes in 0.1 s = 0.16 Gb/s.
        assert_eq!(rows[0].gbps, Some(0.16));
        assert_eq!(rows[0].root_port.as_deref(), Some("0000:30:03.0"));
        assert_eq!(rows[2].root_port, None);
        let targets = mon.targets(&rows);
        assert_eq!(targets.len(), 2);
        let port = &targets[0];
        assert_eq!(port.name, "0000:30:03.0");
        assert_eq!((port.rx_gbps, port.tx_gbps), (Some(0.16), Some(0.16)));
        assert_eq!(port.rx_pct, Some(100.0 * 0.16 / model.rx_gbps));
        assert_eq!(port.tx_pct, Some(100.0 * 0.16 / model.tx_gbps));
        assert_eq!(port.running_pct, 50.0);
        assert_eq!(port.rate, None);
        let sw = &targets[1];
        assert_eq!(sw.name, "software/cpu-clock/");
        assert_eq!(sw.rate, Some(2e7));
        assert_eq!((sw.rx_gbps, sw.rx_pct), (None, None));
    }

    #[test]
    fn trends_keep_the_last_values_per_target() {
        let t = |name: &str, rx: Option<f64>, rate: Option<f64>| Target {
            name: name.into(),
            pmus: "p".into(),
            link: None,
            rx_gbps: rx,
            tx_gbps: rx.map(|r| r / 2.0),
            rx_pct: None,
            tx_pct: None,
            rate,
            running_pct: 100.0,
        };
        let mut trends = Vec::new();
        for i in 0..5 {
            let x = i as f64;
            add_interval(
                &mut trends,
                vec![t("port", Some(x), None), t("sw/ev/", None, Some(10.0 * x))],
                3,
            );
        }
        assert_eq!(trends.len(), 2);
        // Rx + Tx of the last three intervals; the count rate where there is no payload.
        assert_eq!(trends[0].history, [3.0, 4.5, 6.0]);
        assert_eq!(trends[1].history, [20.0, 30.0, 40.0]);
        assert_eq!(trends[0].last.rx_gbps, Some(4.0));
    }

    /// Collects what the loop hands over.
    struct Collect(Vec<Vec<Row>>);

    impl Sink for Collect {
        fn interval(&mut self, _mon: &Monitor, rows: &[Row]) -> Result<bool, CliError> {
            self.0.push(rows.to_vec());
            Ok(true)
        }
    }

    #[test]
    fn the_loop_closes_intervals_on_the_source_clock() {
        let t = dwc_host("monitor-loop");
        let sys = System::discover(t.path()).unwrap();
        let plan = Plan::new(&sys, resolve_events(&sys, &["software/cpu-clock/".into()]).unwrap()).unwrap();
        let mut src = Fake::default();
        let mut mon = Monitor::open(&mut src, plan).unwrap();
        let sched = Schedule {
            interval: Some(Duration::from_millis(250)),
            duration: Some(1.1),
            command: &[],
        };
        let mut sink = Collect(Vec::new());
        let secs = run(&mut src, &mut mon, sched, &AtomicBool::new(false), &mut sink).unwrap();
        assert!((secs - 1.1).abs() < 1e-9, "{secs}");
        let times: Vec<f64> = sink.0.iter().map(|r| (r[0].time_s * 1000.0).round()).collect();
        assert_eq!(times, vec![250.0, 500.0, 750.0, 1000.0, 1100.0]);
        assert!((sink.0[4][0].interval_s - 0.1).abs() < 1e-9);
    }
}
