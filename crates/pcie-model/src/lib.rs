//! An exact analytical model of what a PCIe link can carry: link parameters, TLP/DLLP/flit
//! overheads, streaming DMA bandwidth, a latency (outstanding request) bound and NIC models.
//! Pure functions over plain data; no I/O. Every transfer size is evaluated in constant time
//! (TLPs are counted by shape, not enumerated). [`parse_sizes`] reads the size lists users write
//! (`64,128`, `1..4096`, `64..2048:64`), bounded to [`MAX_SIZES`] points, for any input text.
//! What the `model` commands print is computed here: [`sweep`] (`model bw`, with
//! [`OpResult::explain`], the TLP and DLLP trail behind a number), [`link_table`] (`model link`)
//! and [`nic_sweep`] (`model nic`).
//!
//! Main types: [`LinkParams`] (what a user gives: generation, width, MPS, MRRS, RCB, flit mode,
//! address width, ECRC, tags) checked into a [`LinkConfig`]; [`Op`] (a read, write or mixed
//! DMA stream) evaluated by [`stream`] into a [`Throughput`] (payload Gb/s and each direction's
//! TLP/DLLP load, the bottleneck); [`read_bound`] (what outstanding reads and latency allow).
//!
//! ```
//! use pcie_model::{stream, LinkConfig, LinkParams, Op};
//! // pcie-bench's link: Gen3 x8, MPS 256, MRRS 512.
//! let link = LinkConfig::new(&LinkParams::default()).unwrap();
//! let reads = stream(&link, Op::Rd, 64, 0).unwrap();
//! let writes = stream(&link, Op::Wr, 1024, 0).unwrap();
//! // Small reads pay a request and a completion header per 64 B; large writes come near the
//! // 63.0 Gb/s a Gen3 x8 link carries after 128b/130b encoding.
//! assert!(reads.payload.0 < writes.payload.0 && writes.payload.0 < 63.02);
//! ```

mod config;
mod dllp;
mod error;
mod ethernet;
mod generation;
mod latency;
mod link_table;
mod nic;
mod phy;
mod sizes;
mod split;
mod stream;
mod sweep;
mod throughput;
mod tlp;
mod traffic;
mod units;

pub use config::{CplSplit, FlitMode, LinkConfig, LinkParams, Mode, PAYLOAD_SIZES, TAG_BITS, WIDTHS};
pub use error::ConfigError;
pub use ethernet::{check_frame, Ethernet, ETH_SPEEDS, MAX_FRAME, MIN_FRAME};
pub use generation::{Encoding, Generation};
pub use latency::{read_bound, Limit, ReadBound};
pub use link_table::{link_table, LinkRow};
pub use nic::{crossover, nic_point, nic_sweep, Crossover, NicKind, NicPoint, NicSweep, PacketPaths};
pub use phy::raw;
pub use sizes::{parse_sizes, SizeListError, MAX_SIZES};
pub use split::{completions as split_completions, read_requests as split_read_requests, writes as split_writes};
pub use stream::{check_transfer, stream, traffic as stream_traffic, Op, MAX_TRANSFER};
pub use sweep::{sweep, OpResult, SizePoint};
pub use throughput::{capacity, reverse_dllp_bytes, solve, tlp_layer, DirLoad, Throughput};
pub use tlp::{Tlp, TlpKind};
pub use traffic::{Dir, Flow, Initiator, Traffic};
pub use units::{Bytes, Gbps, Picos};
