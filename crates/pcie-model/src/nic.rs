//! NIC models (pcie-bench's simple NIC and Intel 82599 "Niantic" with the Linux kernel driver
//! or DPDK): the PCIe transactions per packet, against the Ethernet line rate.

use crate::config::{LinkConfig, Mode};
use crate::error::ConfigError;
use crate::ethernet::{check_frame, Ethernet};
use crate::throughput::solve;
use crate::traffic::{Dir, Initiator, Traffic};
use crate::units::Gbps;
use serde::Serialize;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NicKind {
    /// Every packet: pointer updates, one descriptor, data, interrupt, head-pointer read.
    Simple,
    /// 82599 with the Linux ixgbe driver: descriptor batching, interrupt moderation.
    Kernel,
    /// 82599 with a DPDK poll-mode driver: no interrupts or head-pointer reads, batched tail updates.
    Dpdk,
}

impl NicKind {
    pub const ALL: [NicKind; 3] = [NicKind::Simple, NicKind::Kernel, NicKind::Dpdk];

    pub fn name(self) -> &'static str {
        match self {
            NicKind::Simple => "simple",
            NicKind::Kernel => "kernel",
            NicKind::Dpdk => "dpdk",
        }
    }

    fn steps(self) -> &'static [Step] {
        match self {
            NicKind::Simple => SIMPLE,
            NicKind::Kernel => KERNEL,
            NicKind::Dpdk => DPDK,
        }
    }
}

impl FromStr for NicKind {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<NicKind, ConfigError> {
        NicKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| ConfigError::one_of("nic", s, &["simple", "kernel", "dpdk"]))
    }
}

/// Packet path: transmit (host → wire) or receive (wire → host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Tx,
    Rx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Host writes a device register (tail pointer).
    HostWrite,
    /// Host reads a device register (head pointer).
    HostRead,
    /// Device DMA-reads host memory.
    DevRead,
    /// Device DMA-writes host memory.
    DevWrite,
    /// Device raises an MSI-X interrupt.
    Msi,
}

/// Size of what a step moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    Bytes(u32),
    Packet,
}

/// One device/driver interaction, done once every `every` packets.
#[derive(Debug, Clone, Copy)]
struct Step {
    path: Path,
    what: &'static str,
    action: Action,
    size: Size,
    every: u32,
}

const fn step(path: Path, what: &'static str, action: Action, size: Size, every: u32) -> Step {
    Step {
        path,
        what,
        action,
        size,
        every,
    }
}

const PTR: Size = Size::Bytes(4);
const DESC: u32 = 16;
/// pcie-model overwrites the device's RX-path byte count when it adds the packet write,
/// dropping this step's read request; compat mode reproduces that.
const RX_DESC_FETCH: &str = "RX descriptor fetch";

use Action::*;
use Path::*;

const SIMPLE: &[Step] = &[
    step(Tx, "TX tail pointer", HostWrite, PTR, 1),
    step(Tx, "TX descriptor fetch", DevRead, Size::Bytes(DESC), 1),
    step(Tx, "TX packet read", DevRead, Size::Packet, 1),
    step(Tx, "TX interrupt", Msi, PTR, 1),
    step(Tx, "TX head pointer", HostRead, PTR, 1),
    step(Rx, "RX tail pointer", HostWrite, PTR, 1),
    step(Rx, RX_DESC_FETCH, DevRead, Size::Bytes(DESC), 1),
    step(Rx, "RX packet write", DevWrite, Size::Packet, 1),
    step(Rx, "RX descriptor write-back", DevWrite, Size::Bytes(DESC), 1),
    step(Rx, "RX interrupt", Msi, PTR, 1),
    step(Rx, "RX head pointer", HostRead, PTR, 1),
];

/// 82599 datasheet §7.2.3 / §7.1.7: TX descriptors fetched 40 at a time and written back 8 at
/// a time (WTHRESH 8); RX descriptors one per packet. ixgbe: TX tail per packet, free buffers
/// 32 at a time, RX head every 8 packets, one interrupt per 32 packets.
const KERNEL: &[Step] = &[
    step(Tx, "TX tail pointer", HostWrite, PTR, 1),
    step(Tx, "TX descriptor fetch", DevRead, Size::Bytes(DESC * 40), 40),
    step(Tx, "TX packet read", DevRead, Size::Packet, 1),
    step(Tx, "TX descriptor write-back", DevWrite, Size::Bytes(DESC * 8), 8),
    step(Tx, "TX interrupt", Msi, PTR, 32),
    step(Tx, "TX head pointer", HostRead, PTR, 1),
    step(Rx, "RX tail pointer", HostWrite, PTR, 32),
    step(Rx, RX_DESC_FETCH, DevRead, Size::Bytes(DESC), 1),
    step(Rx, "RX packet write", DevWrite, Size::Packet, 1),
    step(Rx, "RX descriptor write-back", DevWrite, Size::Bytes(DESC), 1),
    step(Rx, "RX interrupt", Msi, PTR, 32),
    step(Rx, "RX head pointer", HostRead, PTR, 8),
];

/// DPDK poll-mode driver: TX tail every 32 packets, descriptor-done polling instead of
/// interrupts and head-pointer reads.
const DPDK: &[Step] = &[
    step(Tx, "TX tail pointer", HostWrite, PTR, 32),
    step(Tx, "TX descriptor fetch", DevRead, Size::Bytes(DESC * 40), 40),
    step(Tx, "TX packet read", DevRead, Size::Packet, 1),
    step(Tx, "TX descriptor write-back", DevWrite, Size::Bytes(DESC * 8), 8),
    step(Rx, "RX tail pointer", HostWrite, PTR, 32),
    step(Rx, RX_DESC_FETCH, DevRead, Size::Bytes(DESC), 1),
    step(Rx, "RX packet write", DevWrite, Size::Packet, 1),
    step(Rx, "RX descriptor write-back", DevWrite, Size::Bytes(DESC), 1),
];

/// Which packet paths are busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PacketPaths {
    /// Transmit and receive at the same packet rate.
    Bidir,
    /// Transmit only.
    Tx,
    /// Receive only.
    Rx,
}

/// PCIe traffic per packet of `data` bytes (the frame without FCS).
pub fn traffic(cfg: &LinkConfig, kind: NicKind, paths: PacketPaths, data: u32) -> Traffic {
    let mut t = Traffic::default();
    let on = |p: Path| match paths {
        PacketPaths::Bidir => true,
        PacketPaths::Tx => p == Tx,
        PacketPaths::Rx => p == Rx,
    };
    for s in kind.steps().iter().filter(|s| on(s.path)) {
        let len = match s.size {
            Size::Bytes(b) => b,
            Size::Packet => data,
        };
        let w = 1.0 / s.every as f64;
        match s.action {
            HostWrite => t.write(cfg, s.what, Initiator::Host, 0, len, w),
            HostRead => t.read(cfg, s.what, Initiator::Host, 0, len, w),
            DevRead => t.read(cfg, s.what, Initiator::Device, 0, len, w),
            DevWrite => t.write(cfg, s.what, Initiator::Device, 0, len, w),
            Msi => t.msi(cfg, s.what, w),
        }
    }
    if cfg.mode == Mode::PcieModel {
        t.retain(|f| !(f.what == RX_DESC_FETCH && f.dir == Dir::Up));
    }
    t
}

/// NIC throughput at one frame size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NicPoint {
    /// Frame size, FCS included.
    pub frame: u32,
    /// Host payload rate of the Ethernet line (FCS stripped).
    pub line: Gbps,
    /// Payload rate per direction when transmitting and receiving.
    pub bidir: Gbps,
    pub tx_only: Gbps,
    pub rx_only: Gbps,
}

pub fn nic_point(cfg: &LinkConfig, kind: NicKind, eth: Ethernet, frame: u32) -> Result<NicPoint, ConfigError> {
    check_frame(frame)?;
    let data = frame - 4;
    let rate = |d| solve(cfg, &traffic(cfg, kind, d, data), data as f64).payload;
    Ok(NicPoint {
        frame,
        line: eth.host_rate(cfg.mode, frame),
        bidir: rate(PacketPaths::Bidir),
        tx_only: rate(PacketPaths::Tx),
        rx_only: rate(PacketPaths::Rx),
    })
}

/// Where a NIC keeps up with the line in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Crossover {
    /// Smallest frame at which it keeps up.
    pub first: Option<u32>,
    /// Smallest frame from which it keeps up at every larger frame of the sweep.
    pub sustained: Option<u32>,
}

/// Crossover of a sweep sorted by frame size.
pub fn crossover(points: &[NicPoint]) -> Crossover {
    let keeps_up = |p: &NicPoint| p.bidir.0 >= p.line.0;
    let first = points.iter().find(|p| keeps_up(p)).map(|p| p.frame);
    let tail = points.iter().rev().take_while(|p| keeps_up(p)).count();
    let sustained = (tail > 0).then(|| points[points.len() - tail].frame);
    Crossover { first, sustained }
}

/// One NIC over a sweep of frame sizes, with its crossover.
#[derive(Debug, Serialize)]
pub struct NicSweep {
    pub nic: NicKind,
    pub crossover: Crossover,
    pub points: Vec<NicPoint>,
}

/// `kind` at every frame of `frames` (sorted by size).
pub fn nic_sweep(cfg: &LinkConfig, kind: NicKind, eth: Ethernet, frames: &[u32]) -> Result<NicSweep, ConfigError> {
    let points = frames
        .iter()
        .map(|&f| nic_point(cfg, kind, eth, f))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(NicSweep {
        nic: kind,
        crossover: crossover(&points),
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkParams;

    fn compat() -> LinkConfig {
        LinkConfig::new(&LinkParams {
            mode: Mode::PcieModel,
            ..LinkParams::default()
        })
        .unwrap()
    }

    fn sweep(cfg: &LinkConfig, kind: NicKind) -> Vec<NicPoint> {
        (64..1500)
            .map(|f| nic_point(cfg, kind, Ethernet { gbps: 40 }, f).unwrap())
            .collect()
    }

    #[test]
    fn paper_crossovers_in_compat_mode() {
        let cfg = compat();
        let expect = [
            (NicKind::Simple, 584, 12.58),
            (NicKind::Kernel, 300, 17.63),
            (NicKind::Dpdk, 182, 20.65),
        ];
        for (kind, sustained, at64) in expect {
            let pts = sweep(&cfg, kind);
            assert_eq!(crossover(&pts).sustained, Some(sustained), "{kind:?}");
            assert!((pts[0].bidir.0 - at64).abs() < 0.005, "{kind:?}: {}", pts[0].bidir.0);
        }
    }

    #[test]
    fn paper_first_crossings() {
        let cfg = compat();
        assert_eq!(crossover(&sweep(&cfg, NicKind::Simple)).first, Some(477));
        assert_eq!(crossover(&sweep(&cfg, NicKind::Kernel)).first, Some(246));
    }

    #[test]
    fn batching_helps_in_spec_mode_too() {
        let cfg = LinkConfig::new(&LinkParams::default()).unwrap();
        let at = |k| nic_point(&cfg, k, Ethernet { gbps: 40 }, 64).unwrap().bidir.0;
        assert!(at(NicKind::Simple) < at(NicKind::Kernel));
        assert!(at(NicKind::Kernel) < at(NicKind::Dpdk));
    }

    #[test]
    fn directions_split_the_work() {
        let cfg = LinkConfig::new(&LinkParams::default()).unwrap();
        let p = nic_point(&cfg, NicKind::Kernel, Ethernet { gbps: 40 }, 512).unwrap();
        assert!(p.bidir.0 < p.tx_only.0 && p.bidir.0 < p.rx_only.0);
        assert_eq!(
            nic_point(&cfg, NicKind::Kernel, Ethernet { gbps: 40 }, 60)
                .unwrap_err()
                .param,
            "sizes"
        );
    }
}
