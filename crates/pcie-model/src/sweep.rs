//! A transfer-size sweep of streaming DMA, as `pcieperf model bw` prints it: for each size,
//! each operation's throughput with the traffic behind it, the Ethernet line rate and the
//! read latency bound; [`OpResult::explain`] keeps the TLP and DLLP trail behind each number.

use crate::config::LinkConfig;
use crate::error::ConfigError;
use crate::ethernet::Ethernet;
use crate::latency::{read_bound, ReadBound};
use crate::stream::{stream, traffic, Op};
use crate::throughput::Throughput;
use crate::traffic::{Dir, Flow};
use crate::units::{Gbps, Picos};
use serde::Serialize;
use std::fmt::Write;

/// One operation at one size, with the traffic that produced it.
#[derive(Debug, Serialize)]
pub struct OpResult {
    pub op: Op,
    #[serde(flatten)]
    pub throughput: Throughput,
    pub flows: Vec<Flow>,
}

/// Everything the model says about one transfer size.
#[derive(Debug, Serialize)]
pub struct SizePoint {
    pub size: u32,
    /// In the order of the operations asked for.
    pub results: Vec<OpResult>,
    /// The Ethernet line rate for frames carrying this size, when one was given and it fits.
    pub eth_gbps: Option<Gbps>,
    /// The read latency bound, when a round trip was given.
    pub read_bound: Option<ReadBound>,
}

/// Evaluates `ops` at every size of `sizes`, transfers starting `offset` bytes past a 4 KB
/// boundary; `rtt` adds the read bound with `tags` requests in flight (all tags by default).
pub fn sweep(
    cfg: &LinkConfig,
    sizes: &[u32],
    ops: &[Op],
    offset: u32,
    eth: Option<Ethernet>,
    rtt: Option<Picos>,
    tags: Option<u32>,
) -> Result<Vec<SizePoint>, ConfigError> {
    sizes
        .iter()
        .map(|&size| {
            let results = ops
                .iter()
                .map(|&op| {
                    Ok(OpResult {
                        op,
                        throughput: stream(cfg, op, size, offset)?,
                        flows: traffic(cfg, op, size, offset).flows,
                    })
                })
                .collect::<Result<Vec<_>, ConfigError>>()?;
            let read_bound = rtt.map(|t| read_bound(cfg, size, offset, t, tags)).transpose()?;
            Ok(SizePoint {
                size,
                results,
                eth_gbps: eth.and_then(|e| e.line_for_transfer(cfg.mode, size)),
                read_bound,
            })
        })
        .collect()
}

impl OpResult {
    /// The event trail behind the number for transfers of `size` bytes: TLPs and DLLPs per
    /// transfer and per direction, as text starting with an empty line.
    pub fn explain(&self, size: u32) -> String {
        let t = &self.throughput;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\n{} of {} B: {:.2} Gb/s, {:.2} M transfers/s, limited by the {} direction",
            self.op.title(),
            size,
            t.payload.0,
            t.units_per_sec / 1e6,
            dir_name(t.bottleneck)
        );
        for f in &self.flows {
            let kind = format!("{:?}", f.kind);
            let _ = writeln!(
                out,
                "  {:<4}  {:<10}  {:>6.2} x {kind:<4} = {:>8.1} B",
                dir_word(f.dir),
                f.what,
                f.tlps,
                f.bytes
            );
        }
        for dir in [Dir::Up, Dir::Down] {
            let l = t.load(dir);
            let _ = writeln!(
                out,
                "  {:<4}  TLP {:.1} B + DLLP {:.1} B per transfer on {:.2} Gb/s: {:.1} % busy",
                dir_word(dir),
                l.tlp_bytes,
                l.dllp_bytes,
                l.capacity.0,
                l.utilisation * 100.0
            );
        }
        out
    }
}

fn dir_word(d: Dir) -> &'static str {
    match d {
        Dir::Up => "up",
        Dir::Down => "down",
    }
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Up => "device-to-host (up)",
        Dir::Down => "host-to-device (down)",
    }
}
