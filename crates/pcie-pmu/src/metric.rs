//! Normalised metric names as a type: catalogs map events onto them, the monitor sums payload
//! by them, and listings and exports spell them as the strings of [`PmuMetric::as_str`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What an event measures. Direction is the root port's: `rx` = device to host (upstream),
/// `tx` = host to device. Summing every event of one metric gives the PMU's total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PmuMetric {
    RxBytes,
    TxBytes,
    TotalBytes,
    TotalTlps,
    RxCcixBytes,
    TxCcixBytes,
    RxRequestBytes,
    TxRequestBytes,
    RxTlps,
    TxTlps,
    RxDllps,
    TxDllps,
    Errors,
    LtssmResidency,
    Cycles,
    RxLatency,
    TxLatency,
    Outstanding,
}

impl PmuMetric {
    /// Every metric, in catalog documentation order.
    pub const ALL: [PmuMetric; 18] = [
        PmuMetric::RxBytes,
        PmuMetric::TxBytes,
        PmuMetric::TotalBytes,
        PmuMetric::TotalTlps,
        PmuMetric::RxCcixBytes,
        PmuMetric::TxCcixBytes,
        PmuMetric::RxRequestBytes,
        PmuMetric::TxRequestBytes,
        PmuMetric::RxTlps,
        PmuMetric::TxTlps,
        PmuMetric::RxDllps,
        PmuMetric::TxDllps,
        PmuMetric::Errors,
        PmuMetric::LtssmResidency,
        PmuMetric::Cycles,
        PmuMetric::RxLatency,
        PmuMetric::TxLatency,
        PmuMetric::Outstanding,
    ];

    /// The name catalogs, listings and exports use (`rx_bytes`).
    pub fn as_str(self) -> &'static str {
        match self {
            PmuMetric::RxBytes => "rx_bytes",
            PmuMetric::TxBytes => "tx_bytes",
            PmuMetric::TotalBytes => "total_bytes",
            PmuMetric::TotalTlps => "total_tlps",
            PmuMetric::RxCcixBytes => "rx_ccix_bytes",
            PmuMetric::TxCcixBytes => "tx_ccix_bytes",
            PmuMetric::RxRequestBytes => "rx_request_bytes",
            PmuMetric::TxRequestBytes => "tx_request_bytes",
            PmuMetric::RxTlps => "rx_tlps",
            PmuMetric::TxTlps => "tx_tlps",
            PmuMetric::RxDllps => "rx_dllps",
            PmuMetric::TxDllps => "tx_dllps",
            PmuMetric::Errors => "errors",
            PmuMetric::LtssmResidency => "ltssm_residency",
            PmuMetric::Cycles => "cycles",
            PmuMetric::RxLatency => "rx_latency",
            PmuMetric::TxLatency => "tx_latency",
            PmuMetric::Outstanding => "outstanding",
        }
    }

    /// Payload moved device to host (`rx_bytes`) or host to device (`tx_bytes`).
    pub fn is_payload(self) -> bool {
        matches!(self, PmuMetric::RxBytes | PmuMetric::TxBytes)
    }
}

/// A name that is not a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPmuMetric(pub String);

impl fmt::Display for UnknownPmuMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = PmuMetric::ALL.iter().map(|m| m.as_str()).collect();
        write!(f, "{:?} is not one of {}", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownPmuMetric {}

impl FromStr for PmuMetric {
    type Err = UnknownPmuMetric;
    fn from_str(s: &str) -> Result<PmuMetric, UnknownPmuMetric> {
        PmuMetric::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownPmuMetric(s.to_string()))
    }
}

impl fmt::Display for PmuMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for PmuMetric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PmuMetric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PmuMetric, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for m in PmuMetric::ALL {
            assert_eq!(m.as_str().parse::<PmuMetric>(), Ok(m));
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
            assert_eq!(serde_json::from_str::<PmuMetric>(&format!("\"{m}\"")).unwrap(), m);
        }
        let e = "rx".parse::<PmuMetric>().unwrap_err().to_string();
        assert!(
            e.starts_with("\"rx\" is not one of rx_bytes, tx_bytes, total_bytes"),
            "{e}"
        );
        assert!(PmuMetric::RxBytes.is_payload() && !PmuMetric::Errors.is_payload());
    }
}
