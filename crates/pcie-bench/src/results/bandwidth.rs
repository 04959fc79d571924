//! Bandwidth tables: pcie-bench's 13 columns, with the bandwidth column labelled with its true
//! unit (pcie-bench's "BW (GB/s)" holds Gb/s too).

use super::csv::{self, CsvTable};
use super::key::{self, KeyColumns, RowKey};
use super::ResultsError;
use crate::params::TestParams;
use crate::stats::BandwidthStats;
use serde::Serialize;

pub(super) fn header() -> String {
    format!("{},Time(cyc),Time,Bytes,Trans,BW (Gb/s),Trans/s", key::HEADER)
}

/// One CSV line, with its line end.
pub(super) fn format_row(p: &TestParams, s: &BandwidthStats) -> String {
    let figures = [
        s.time_cycles.to_string(),
        s.time_ns.to_string(),
        s.bytes.to_string(),
        s.transactions.to_string(),
        s.gbps.to_string(),
        s.trans_per_sec.to_string(),
    ];
    csv::line(RowKey::from(p).fields().iter().chain(&figures))
}

/// One bandwidth result. For BW_RDWR, bytes and transactions are per direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthRow {
    #[serde(flatten)]
    pub key: RowKey,
    pub time_ns: f64,
    pub bytes: u64,
    pub trans: u64,
    pub bw_gbps: f64,
    pub trans_per_sec: f64,
}

pub(super) fn parse(t: &CsvTable) -> Result<Vec<BandwidthRow>, ResultsError> {
    let keys = KeyColumns::locate(t)?;
    let time = t.column(&["Time", "Time(ns)"])?;
    let bytes = t.column(&["Bytes"])?;
    let trans = t.column(&["Trans"])?;
    let bw = t.column(&["BW (Gb/s)", "BW (GB/s)"])?;
    let rate = t.column(&["Trans/s"])?;
    t.rows
        .iter()
        .map(|r| {
            let k = keys.read(t, r)?;
            Ok(BandwidthRow {
                key: k,
                time_ns: t.float(r, &time)?,
                bytes: t.uint(r, &bytes)?,
                trans: t.uint(r, &trans)?,
                bw_gbps: t.float(r, &bw)?,
                trans_per_sec: t.float(r, &rate)?,
            })
        })
        .collect()
}
