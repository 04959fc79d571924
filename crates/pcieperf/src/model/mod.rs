//! `pcieperf model ...`: what a link can carry.

mod bw;
mod link;
mod link_args;
mod nic;

use crate::error::CliError;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ModelCmd {
    /// Effective bandwidth of streaming DMA reads, writes and read/write vs transfer size
    Bw(Box<bw::BwArgs>),
    /// Raw and TLP-layer bandwidth of every generation and width
    Link(link::LinkTableArgs),
    /// NIC throughput vs Ethernet line rate over frame sizes
    Nic(Box<nic::NicArgs>),
}

pub fn run(cmd: &ModelCmd) -> Result<String, CliError> {
    match cmd {
        ModelCmd::Bw(a) => bw::run(a),
        ModelCmd::Link(a) => link::run(a),
        ModelCmd::Nic(a) => nic::run(a),
    }
}
