//! The NVIDIA GPUs in `check`'s table and CSV: each GPU's link as it sees it, its replays
//! (and rate, against the limit that makes them a finding) and its PCIe payload, from
//! pcie-health's [`GpuHealth`] (read through NVML).

use crate::output::{Cell, Table};
use pcie_health::{GpuHealth, Report};
use std::fmt::Write;

/// A GPU's column: CSV name, heading, value.
type Column = (&'static str, &'static str, fn(&GpuHealth) -> Cell);

fn link(gen: Option<u32>, width: Option<u32>) -> Cell {
    match (gen, width) {
        (Some(g), Some(w)) => Cell::text(format!("Gen{g} x{w}")),
        _ => Cell::Empty,
    }
}

fn count(v: Option<u64>) -> Cell {
    v.map_or(Cell::Empty, |n| Cell::text(n.to_string()))
}

fn rate(v: Option<f64>, decimals: usize) -> Cell {
    v.map_or(Cell::Empty, |x| Cell::num(x, decimals))
}

const GPU_COLUMNS: [Column; 11] = [
    ("gpu_name", "GPU", |g| g.name.as_deref().map_or(Cell::Empty, Cell::text)),
    ("gpu_link", "Link now", |g| link(g.current_gen, g.current_width)),
    ("gpu_max_link", "Link max", |g| link(g.max_gen, g.max_width)),
    ("gpu_replays", "Replays", |g| count(g.replays)),
    ("gpu_replays_per_s", "Replays/s", |g| rate(g.replays_per_s, 3)),
    ("gpu_replay_limit_per_s", "Limit/s", |g| rate(g.replay_limit_per_s, 3)),
    ("gpu_tx_bytes", "TX bytes", |g| count(g.tx_bytes)),
    ("gpu_rx_bytes", "RX bytes", |g| count(g.rx_bytes)),
    ("gpu_tx_gbps", "TX Gb/s", |g| rate(g.tx_gbps, 2)),
    ("gpu_rx_gbps", "RX Gb/s", |g| rate(g.rx_gbps, 2)),
    ("gpu_unread", "Unread", |g| Cell::text(g.unread.join("; "))),
];

/// The GPU section of the table: nothing without GPUs, NVML's failure when it failed.
pub fn human(r: &Report) -> String {
    let mut out = String::new();
    if let Some(why) = &r.nvml {
        let _ = writeln!(out, "\nNVIDIA GPUs not read: {why}");
    }
    if r.gpus.is_empty() {
        return out;
    }
    out.push_str(
        "\nNVIDIA GPUs (NVML: the link as the GPU sees it; replays, with a rate above the limit a finding; \
         PCIe bytes since the driver loaded, TX into host memory):\n",
    );
    let mut heads = vec![("bdf", "Address")];
    heads.extend(GPU_COLUMNS.iter().map(|c| (c.0, c.1)));
    let mut t = Table::new(&heads);
    for g in &r.gpus {
        let mut row = vec![Cell::text(g.bdf.as_str())];
        row.extend(GPU_COLUMNS.iter().map(|c| (c.2)(g)));
        t.push(row);
    }
    out.push_str(&t.to_human());
    out
}

/// The CSV's GPU columns, added only where there are GPUs (so a host without them keeps its
/// columns), and a `gpu` record's cells for them.
pub fn csv_heads(r: &Report) -> Vec<(&'static str, &'static str)> {
    if r.gpus.is_empty() {
        return Vec::new();
    }
    GPU_COLUMNS.iter().map(|c| (c.0, c.0)).collect()
}

pub fn csv_cells(g: &GpuHealth) -> Vec<Cell> {
    GPU_COLUMNS.iter().map(|c| (c.2)(g)).collect()
}
