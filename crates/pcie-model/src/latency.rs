//! The latency bound on reads (Little's law): with `n` requests outstanding and a round trip of
//! `t`, at most `n / t` requests complete per second, whatever the link could carry.

use crate::config::LinkConfig;
use crate::error::ConfigError;
use crate::split;
use crate::stream::{stream, Op};
use crate::units::{Gbps, Picos};
use serde::Serialize;

/// What limits a read stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    Link,
    Latency,
}

/// A read stream's two ceilings and the one that applies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadBound {
    /// Read requests (tags) one transfer needs.
    pub requests_per_transfer: u32,
    /// Requests allowed in flight.
    pub outstanding: u32,
    pub link: Gbps,
    pub latency: Gbps,
    /// The lower of the two.
    pub bound: Gbps,
    pub limit: Limit,
    /// Requests that must be in flight for the link to be the limit.
    pub outstanding_needed: f64,
}

/// Bound a stream of `size`-byte reads at `offset` with round trip `rtt` per request and
/// `outstanding` requests in flight (default: every tag the link's tag size allows).
pub fn read_bound(
    cfg: &LinkConfig,
    size: u32,
    offset: u32,
    rtt: Picos,
    outstanding: Option<u32>,
) -> Result<ReadBound, ConfigError> {
    if rtt.0 == 0 {
        return Err(ConfigError::new("latency", 0, "must be greater than 0 ns"));
    }
    let outstanding = match outstanding {
        Some(n) if (1..=cfg.max_tags()).contains(&n) => n,
        Some(n) => {
            return Err(ConfigError::new(
                "tags",
                n,
                format!("must be between 1 and {} ({}-bit tags)", cfg.max_tags(), cfg.tag_bits),
            ))
        }
        None => cfg.max_tags(),
    };
    let link = stream(cfg, Op::Rd, size, offset)?.payload;
    let requests = split::read_request_runs(cfg, offset as u64, size)
        .map(|r| r.count)
        .sum::<u64>() as u32;
    let bytes_per_request = size as f64 / requests as f64;
    let latency = Gbps::from_bytes_per_sec(outstanding as f64 / rtt.as_secs() * bytes_per_request);
    let (bound, limit) = if latency.0 < link.0 {
        (latency, Limit::Latency)
    } else {
        (link, Limit::Link)
    };
    let requests_per_sec = link.bytes_per_sec() / bytes_per_request;
    Ok(ReadBound {
        requests_per_transfer: requests,
        outstanding,
        link,
        latency,
        bound,
        limit,
        outstanding_needed: requests_per_sec * rtt.as_secs(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkParams;

    #[test]
    fn littles_law() {
        let cfg = LinkConfig::new(&LinkParams::default()).unwrap();
        // 32 tags, 64 B reads, 600 ns: 32 / 600 ns * 64 B = 27.3 Gb/s, below the link.
        let b = read_bound(&cfg, 64, 0, Picos::from_nanos(600.0), Some(32)).unwrap();
        assert!((b.latency.0 - 32.0 * 64.0 * 8.0 / 600.0).abs() < 1e-9);
        assert_eq!(b.limit, Limit::Latency);
        assert_eq!(b.bound, b.latency);
        assert!(b.outstanding_needed > 32.0);
        // With all 256 8-bit tags the link is the limit.
        let b = read_bound(&cfg, 64, 0, Picos::from_nanos(600.0), None).unwrap();
        assert_eq!((b.outstanding, b.limit), (256, Limit::Link));
        assert!(b.outstanding_needed < 256.0);
    }

    #[test]
    fn large_reads_need_one_tag_per_request() {
        let cfg = LinkConfig::new(&LinkParams::default()).unwrap();
        let b = read_bound(&cfg, 2048, 0, Picos::from_nanos(1000.0), Some(8)).unwrap();
        assert_eq!(b.requests_per_transfer, 4);
        assert!((b.latency.0 - 8.0 * 512.0 * 8.0 / 1000.0).abs() < 1e-9);
    }

    #[test]
    fn refuses_zero_latency_and_tags() {
        let cfg = LinkConfig::new(&LinkParams::default()).unwrap();
        assert_eq!(read_bound(&cfg, 64, 0, Picos(0), None).unwrap_err().param, "latency");
        assert_eq!(read_bound(&cfg, 64, 0, Picos(1), Some(0)).unwrap_err().param, "tags");
        assert!(read_bound(&cfg, 64, 0, Picos(1), Some(256)).is_ok());
        assert_eq!(
            read_bound(&cfg, 64, 0, Picos(1), Some(257)).unwrap_err().to_string(),
            "tags 257: must be between 1 and 256 (8-bit tags)"
        );
    }
}
