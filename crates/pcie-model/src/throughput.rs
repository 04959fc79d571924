//! From traffic to throughput: each direction has a capacity; the direction that fills first
//! sets the rate of units per second.

use crate::config::{LinkConfig, Mode};
use crate::dllp::{self, DLLP_BYTES};
use crate::phy;
use crate::tlp::{FcClass, TlpKind};
use crate::traffic::{Dir, Traffic};
use crate::units::Gbps;
use serde::Serialize;

/// How one direction of the link is used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirLoad {
    /// TLP bytes per unit.
    pub tlp_bytes: f64,
    /// Ack/UpdateFC DLLP bytes per unit, owed for the TLPs of the other direction.
    pub dllp_bytes: f64,
    /// Bandwidth available to link-layer packets in this direction.
    pub capacity: Gbps,
    /// Share of `capacity` used at the solved rate.
    pub utilisation: f64,
}

/// The solved operating point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throughput {
    /// Units (transfers, packets) per second.
    pub units_per_sec: f64,
    /// Payload rate per direction carrying the unit's data.
    pub payload: Gbps,
    pub up: DirLoad,
    pub down: DirLoad,
    /// The direction that limits.
    pub bottleneck: Dir,
}

impl Throughput {
    pub fn load(&self, dir: Dir) -> &DirLoad {
        match dir {
            Dir::Up => &self.up,
            Dir::Down => &self.down,
        }
    }
}

/// DLLP bytes a receiver sends back for the TLPs it received in `dir`: Acks at the spec's Ack
/// rate, and UpdateFC for posted and non-posted credits (completion credits are infinite at
/// root ports and endpoints). Never more DLLPs than TLPs. Flit mode carries both in the DLP.
fn dllps_for(cfg: &LinkConfig, traffic: &Traffic, dir: Dir) -> f64 {
    if cfg.flit || cfg.mode == Mode::PcieModel {
        return 0.0;
    }
    let (n, bytes) = traffic.count(dir, None);
    let acks = n.min(bytes / dllp::bytes_per_ack(cfg));
    let fc: f64 = [FcClass::Posted, FcClass::NonPosted]
        .into_iter()
        .map(|c| {
            let (n, bytes) = traffic.count(dir, Some(c));
            n.min(bytes / dllp::bytes_per_fc_update(cfg))
        })
        .sum();
    (acks + fc) * DLLP_BYTES
}

/// DLLP bytes the receiver of a stream of `kind` TLPs sends back per byte-weighted share of
/// `wire_bytes`: the Ack and (for posted and non-posted TLPs) UpdateFC rate of a busy link.
/// For per-packet accounting in the simulator, where the min(TLPs) clamp does not apply.
pub fn reverse_dllp_bytes(cfg: &LinkConfig, kind: TlpKind, wire_bytes: f64) -> f64 {
    if cfg.flit || cfg.mode == Mode::PcieModel {
        return 0.0;
    }
    let fc = match kind.class() {
        FcClass::Completion => 0.0,
        _ => 1.0 / dllp::bytes_per_fc_update(cfg),
    };
    wire_bytes * DLLP_BYTES * (1.0 / dllp::bytes_per_ack(cfg) + fc)
}

/// Bandwidth per direction for link-layer packets. pcie-model instead deducts its DLLP
/// estimate (not lane-scaled, charged to the data direction) and SKP from the raw rate here.
pub fn capacity(cfg: &LinkConfig) -> Gbps {
    match cfg.mode {
        Mode::Spec => phy::packet_capacity(cfg),
        Mode::PcieModel => {
            let (ack, fc) = dllp::pcie_model_limits(cfg.gen, cfg.lanes, cfg.mps);
            let overheads = DLLP_BYTES / ack as f64 + DLLP_BYTES / fc as f64 + 4.0 / 1538.0;
            let raw = phy::raw(cfg).0;
            Gbps(raw - raw * overheads)
        }
    }
}

/// TLP-layer bandwidth per direction: what is left for TLPs when the other direction is busy
/// with MPS-sized writes (so this direction carries their Acks and UpdateFCs).
pub fn tlp_layer(cfg: &LinkConfig) -> Gbps {
    let cap = capacity(cfg);
    if cfg.flit || cfg.mode == Mode::PcieModel {
        return cap;
    }
    let dllp_share = DLLP_BYTES / dllp::bytes_per_ack(cfg) + DLLP_BYTES / dllp::bytes_per_fc_update(cfg);
    Gbps(cap.0 * (1.0 - dllp_share))
}

/// Solve the rate at which `traffic` (per unit, carrying `payload_bytes` of data per
/// direction) can repeat on the link.
pub fn solve(cfg: &LinkConfig, traffic: &Traffic, payload_bytes: f64) -> Throughput {
    let cap = capacity(cfg);
    let load = |dir: Dir| DirLoad {
        tlp_bytes: traffic.tlp_bytes(dir),
        dllp_bytes: dllps_for(cfg, traffic, dir.reverse()),
        capacity: cap,
        utilisation: 0.0,
    };
    let (mut up, mut down) = (load(Dir::Up), load(Dir::Down));
    let rate = |l: &DirLoad| cap.bytes_per_sec() / (l.tlp_bytes + l.dllp_bytes);
    let (units_per_sec, bottleneck) = if rate(&up) <= rate(&down) {
        (rate(&up), Dir::Up)
    } else {
        (rate(&down), Dir::Down)
    };
    for l in [&mut up, &mut down] {
        l.utilisation = units_per_sec * (l.tlp_bytes + l.dllp_bytes) / cap.bytes_per_sec();
    }
    Throughput {
        units_per_sec,
        payload: Gbps::from_bytes_per_sec(units_per_sec * payload_bytes),
        up,
        down,
        bottleneck,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkParams;
    use crate::traffic::Initiator;

    #[test]
    fn pcie_model_tlp_bandwidth_gen3_x8() {
        let c = LinkConfig::new(&LinkParams {
            mode: Mode::PcieModel,
            ..LinkParams::default()
        })
        .unwrap();
        assert!((tlp_layer(&c).0 - 57.88).abs() < 0.005, "{}", tlp_layer(&c).0);
    }

    #[test]
    fn write_dllps_travel_down_and_are_lane_scaled() {
        let c = LinkConfig::new(&LinkParams::default()).unwrap();
        let mut t = Traffic::default();
        t.write(&c, "data", Initiator::Device, 0, 4096, 1.0);
        let r = solve(&c, &t, 4096.0);
        assert_eq!(r.bottleneck, Dir::Up);
        assert_eq!(r.up.dllp_bytes, 0.0);
        // 16 TLPs of 288 B: 4608 B; Acks every 203 × 8 B and UpdateFC-P as often.
        let expect = 2.0 * 4608.0 / (203.0 * 8.0) * 8.0;
        assert!((r.down.dllp_bytes - expect).abs() < 1e-9);
        assert!((r.up.utilisation - 1.0).abs() < 1e-12);
        assert!(r.down.utilisation < 0.01);
    }
}
