//! A root port's DWC RAS-DES counters as perf sees them: one time-based counter (Group#0 LTSSM
//! residency, Group#1 payload in 16 B units) and one lane event counter (TLP and DLLP events).
//! Events that want the same counter take turns, as the kernel's multiplexing rotates them
//! every `perf_event_mux_interval_ms`: each is enabled from its opening and running only in
//! its turns, and counts only then.

use super::link::{LinkDirection, Tally};
use super::profile::{PmuDriver, PmuSpec};
use crate::time::Ps;
use pcie_model::{reverse_dllp_bytes, LinkConfig, TlpKind};

/// What an event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Payload received (device to host) or transmitted, in 16 B units.
    RxPayload,
    TxPayload,
    /// TLPs of a kind received or transmitted.
    RxTlps(TlpKind),
    TxTlps(TlpKind),
    /// Ack and UpdateFC DLLPs the port sends (for the TLPs it received) or receives (for the
    /// TLPs it sent).
    AcksSent,
    AcksReceived,
    UpdateFcsSent,
    UpdateFcsReceived,
    /// Controller clock cycles (`one_cycle`, and `L0` while the link is up).
    Cycles,
    /// Something the simulation never produces (L1 residency, errors, CCIX).
    Nothing,
}

impl Measure {
    /// The time-based counter (Group#0/#1) or the lane counter.
    fn time_based(self) -> bool {
        matches!(self, Measure::RxPayload | Measure::TxPayload | Measure::Cycles)
    }
}

/// A DWC event's perf config (`eventid`, `type`, `lane`) under a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventConfig {
    pub eventid: u16,
    pub lane_event: bool,
    pub lane: u8,
}

impl EventConfig {
    /// Decode `perf_event_attr.config`: eventid bits 0-15, type 16-19, lane 20-27. The type
    /// numbers differ by driver (upstream 0 time / 1 lane; pcie_bdf 1 / 2).
    pub fn decode(driver: PmuDriver, config: u64) -> Option<EventConfig> {
        let t = (config >> 16) & 0xf;
        let (time, lane) = match driver {
            PmuDriver::DwcRootport => (0, 1),
            PmuDriver::PcieBdf => (1, 2),
        };
        let lane_event = match t {
            x if x == time => false,
            x if x == lane => true,
            _ => return None,
        };
        Some(EventConfig {
            eventid: (config & 0xffff) as u16,
            lane_event,
            lane: ((config >> 20) & 0xff) as u8,
        })
    }

    /// What the event counts on a port whose link is `up` and `lanes` wide; `None` for an
    /// eventid the hardware does not have or a lane beyond the width.
    pub fn measure(&self, up: bool, lanes: u32) -> Option<Measure> {
        use Measure::*;
        if self.lane_event {
            if self.lane as u32 >= lanes {
                return None;
            }
            return Some(match self.eventid {
                0x700 => TxTlps(TlpKind::MWr),
                0x701 => TxTlps(TlpKind::MRd),
                0x707 => TxTlps(TlpKind::CplD),
                0x70b => RxTlps(TlpKind::MWr),
                0x70c => RxTlps(TlpKind::MRd),
                0x712 => RxTlps(TlpKind::CplD),
                0x600 => AcksSent,
                0x601 => UpdateFcsSent,
                0x602 => AcksReceived,
                0x603 => UpdateFcsReceived,
                0x604..=0x606 | 0x702..=0x706 | 0x708..=0x70a | 0x70f..=0x711 | 0x713..=0x717 => Nothing,
                _ => return None,
            });
        }
        Some(match self.eventid {
            0x00 => Cycles,
            0x03 if up => Cycles,
            0x01..=0x09 => Nothing,
            0x20 => TxPayload,
            0x21 => RxPayload,
            0x22 | 0x23 => Nothing,
            _ => return None,
        })
    }
}

/// One opened event.
#[derive(Debug, Clone)]
struct Event {
    measure: Measure,
    opened: Ps,
    running: Ps,
    /// Hardware counts while it ran (16 B units for payload), in 64 bits.
    count: u64,
}

/// The events sharing one hardware counter of one port, in rotation order.
#[derive(Debug, Clone, Default)]
struct Rotation {
    events: Vec<usize>,
    /// When the current rotation started (the event set last changed).
    epoch: Ps,
}

/// A port's counters: the time-based one and the lane one.
#[derive(Debug, Clone, Default)]
struct PortCounters {
    rotations: [Rotation; 2],
    /// Until when events have been brought up to date, and what had crossed then.
    at: Ps,
    rx: Tally,
    tx: Tally,
}

/// Every port's counters.
#[derive(Debug, Clone)]
pub struct Bank {
    spec: PmuSpec,
    turns: Turns,
    ports: Vec<PortCounters>,
    events: Vec<Event>,
}

/// A port's two link directions as the bank reads them, and its DLLP rates.
pub struct PortLink<'a> {
    pub rx: &'a mut LinkDirection,
    pub tx: &'a mut LinkDirection,
    pub dllps: DllpRates,
}

/// DLLPs a receiver returns per link byte of TLPs: Acks for every TLP, UpdateFCs for posted
/// and non-posted ones (completion credits are infinite), at the spec's rates
/// (`pcie_model::reverse_dllp_bytes`), never more than one per TLP.
#[derive(Debug, Clone, Copy, Default)]
pub struct DllpRates {
    pub ack_per_byte: f64,
    pub update_fc_per_byte: f64,
}

impl DllpRates {
    pub fn of(link: &LinkConfig) -> DllpRates {
        let ack = reverse_dllp_bytes(link, TlpKind::CplD, 1.0);
        DllpRates {
            ack_per_byte: ack / DLLP_BYTES,
            update_fc_per_byte: (reverse_dllp_bytes(link, TlpKind::MWr, 1.0) - ack) / DLLP_BYTES,
        }
    }

    fn acks(&self, t: &Tally) -> u64 {
        ((t.wire_bytes as f64 * self.ack_per_byte) as u64).min(t.all_tlps())
    }

    fn update_fcs(&self, t: &Tally) -> u64 {
        let credited = t.all_tlps() - t.tlps_of(TlpKind::CplD);
        ((t.credited_bytes as f64 * self.update_fc_per_byte) as u64).min(credited)
    }
}

/// A DLLP on the wire: framing, 4 B of content, CRC.
const DLLP_BYTES: f64 = 8.0;

fn value(m: Measure, rx: &Tally, tx: &Tally, t: Ps, clock_mhz: f64, d: &DllpRates) -> u64 {
    match m {
        Measure::RxPayload => rx.payload_dw / 4,
        Measure::TxPayload => tx.payload_dw / 4,
        Measure::RxTlps(k) => rx.tlps_of(k),
        Measure::TxTlps(k) => tx.tlps_of(k),
        Measure::AcksSent => d.acks(rx),
        Measure::AcksReceived => d.acks(tx),
        Measure::UpdateFcsSent => d.update_fcs(rx),
        Measure::UpdateFcsReceived => d.update_fcs(tx),
        Measure::Cycles => (t as f64 * clock_mhz / 1e6) as u64,
        Measure::Nothing => 0,
    }
}

impl Bank {
    pub fn new(spec: &PmuSpec, ports: usize) -> Bank {
        Bank {
            spec: spec.clone(),
            turns: Turns {
                mux: ((spec.mux_interval_ms * 1e9) as Ps).max(1),
                blind: (spec.config_access_ns * 1000.0 * SWITCH_ACCESSES as f64) as Ps,
            },
            ports: vec![PortCounters::default(); ports],
            events: Vec::new(),
        }
    }

    /// Bring `port`'s events up to `t`: walk the rotation's turns since the last update and
    /// give each turn's counts to the event whose turn it was.
    pub fn advance(&mut self, port: usize, t: Ps, link: Option<PortLink<'_>>) {
        let clock = self.spec.core_clock_mhz;
        let p = &mut self.ports[port];
        if t <= p.at {
            return;
        }
        let Some(link) = link else {
            // No link: only cycle counts move; give them out turn by turn below.
            let none = &mut |_| (Tally::default(), Tally::default());
            let none_dllps = DllpRates::default();
            return advance_turns(p, &mut self.events, self.turns, t, clock, &none_dllps, none);
        };
        let PortLink { rx, tx, dllps } = link;
        advance_turns(p, &mut self.events, self.turns, t, clock, &dllps, &mut |x| {
            (rx.at(x), tx.at(x))
        });
    }

    /// Open an event on `port` at `t` (the port must be advanced to `t`). Returns its index.
    pub fn open(&mut self, port: usize, measure: Measure, t: Ps) -> usize {
        let id = self.events.len();
        self.events.push(Event {
            measure,
            opened: t,
            running: 0,
            count: 0,
        });
        let r = &mut self.ports[port].rotations[usize::from(!measure.time_based())];
        r.events.push(id);
        r.epoch = t;
        id
    }

    /// What perf's read returns at `t` (the port must be advanced to `t`): value, enabled and
    /// running nanoseconds. Upstream drivers return 64-bit counts with payload in bytes; the
    /// pcie_bdf driver returns the hardware register, 16 B units, wrapped at its width.
    pub fn read(&self, id: usize, t: Ps) -> (u64, u64, u64) {
        let e = &self.events[id];
        let value = match self.spec.driver {
            PmuDriver::DwcRootport if matches!(e.measure, Measure::RxPayload | Measure::TxPayload) => e.count * 16,
            PmuDriver::DwcRootport => e.count,
            PmuDriver::PcieBdf => {
                let bits = if e.measure.time_based() {
                    self.spec.throughput_bits
                } else {
                    self.spec.lane_bits
                };
                if bits >= 64 {
                    e.count
                } else {
                    e.count & ((1u64 << bits) - 1)
                }
            }
        };
        (value, (t - e.opened) / 1000, e.running / 1000)
    }
}

/// Configuration accesses a rotation makes after reading the outgoing event's count before the
/// counter counts again for the incoming one (Linux `dwc_pcie_pmu.c`: stop disables the counter
/// with a read-modify-write, add selects the incoming event with a write, start enables it with
/// a read-modify-write).
pub const SWITCH_ACCESSES: u32 = 5;

/// How events sharing a counter take turns: the rotation period, and how long the counter
/// counts nothing after each rotation.
#[derive(Debug, Clone, Copy)]
struct Turns {
    mux: Ps,
    blind: Ps,
}

fn advance_turns(
    p: &mut PortCounters,
    events: &mut [Event],
    Turns { mux, blind }: Turns,
    t: Ps,
    clock: f64,
    dllps: &DllpRates,
    crossed: &mut dyn FnMut(Ps) -> (Tally, Tally),
) {
    // When a counter's events take turns, turn k >= 1 starts at `epoch + k * mux` and counts
    // from `blind` later. Every moment where some count starts or ends, in order.
    let shared = |r: &Rotation| r.events.len() > 1;
    let mut points: Vec<Ps> = vec![p.at, t];
    for r in p.rotations.iter().filter(|r| shared(r)) {
        let mut k = (p.at - r.epoch) / mux;
        while r.epoch + k * mux < t {
            let b = r.epoch + k * mux;
            if b > p.at {
                points.push(b);
            }
            if k > 0 && b + blind > p.at {
                points.push((b + blind).min(t));
            }
            k += 1;
        }
    }
    points.sort_unstable();
    points.dedup();
    let tallies: Vec<(Tally, Tally)> = points
        .iter()
        .map(|&x| if x == p.at { (p.rx, p.tx) } else { crossed(x) })
        .collect();
    let at = |x: Ps| points.binary_search(&x).expect("every boundary is a point");
    for r in p.rotations.iter().filter(|r| !r.events.is_empty()) {
        let n = r.events.len() as u64;
        let mut from = p.at;
        while from < t {
            let k = (from - r.epoch) / mux;
            let to = if n > 1 { (r.epoch + (k + 1) * mux).min(t) } else { t };
            let counts_from = if n > 1 && k > 0 {
                from.max(r.epoch + k * mux + blind).min(to)
            } else {
                from
            };
            let e = &mut events[r.events[(k % n) as usize]];
            let (rx1, tx1) = &tallies[at(to)];
            let (rx0, tx0) = &tallies[at(counts_from)];
            e.count +=
                value(e.measure, rx1, tx1, to, clock, dllps) - value(e.measure, rx0, tx0, counts_from, clock, dllps);
            e.running += to - from;
            from = to;
        }
    }
    let (rx, tx) = tallies[at(t)];
    p.rx = rx;
    p.tx = tx;
    p.at = t;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_decode_per_driver() {
        let up = EventConfig::decode(PmuDriver::DwcRootport, 0x21).unwrap();
        assert_eq!(up.measure(true, 4), Some(Measure::RxPayload));
        let v1 = EventConfig::decode(PmuDriver::PcieBdf, 0x10021).unwrap();
        assert_eq!(v1.measure(true, 4), Some(Measure::RxPayload));
        // rx_memory_read,lane=3 upstream; lane 4 is beyond an x4 port.
        let lane = EventConfig::decode(PmuDriver::DwcRootport, 0x31070c).unwrap();
        assert_eq!(lane.measure(true, 4), Some(Measure::RxTlps(TlpKind::MRd)));
        let lane = EventConfig::decode(PmuDriver::DwcRootport, 0x41070c).unwrap();
        assert_eq!(lane.measure(true, 4), None);
        assert_eq!(EventConfig::decode(PmuDriver::DwcRootport, 0x50021), None);
        let l0 = EventConfig::decode(PmuDriver::DwcRootport, 0x3).unwrap();
        assert_eq!(
            (l0.measure(true, 4), l0.measure(false, 4)),
            (Some(Measure::Cycles), Some(Measure::Nothing))
        );
    }
}
