//! A suite planned for one backend: its tests in order with their groups, the ones the backend
//! leaves out, each test's relative cost (for an ETA), and the per-base summary of a run.

use super::Suite;
use crate::backend::Backend;
use crate::params::TestParams;
use crate::stats::Measurement;

/// The tests of a suite a backend runs, each with the index of its group, and those it cannot
/// with the backend's reason.
#[derive(Debug, Clone)]
pub struct SuitePlan {
    pub tests: Vec<(usize, TestParams)>,
    pub left_out: Vec<(usize, TestParams, String)>,
}

impl SuitePlan {
    /// Expands every group of `suite` and sorts its tests by whether `backend` runs them.
    pub fn new(suite: &Suite, backend: &dyn Backend) -> SuitePlan {
        let mut plan = SuitePlan {
            tests: Vec::new(),
            left_out: Vec::new(),
        };
        for (g, group) in suite.groups().iter().enumerate() {
            for t in group.expand() {
                match backend.leaves_out(&t) {
                    None => plan.tests.push((g, t)),
                    Some(why) => plan.left_out.push((g, t, why)),
                }
            }
        }
        plan
    }

    /// One line per reason tests were left out, in the order reasons first occur: how many
    /// tests, their kinds (sorted, each once) and the reason.
    pub fn left_out_reasons(&self) -> Vec<String> {
        let mut reasons: Vec<(&str, usize, Vec<String>)> = Vec::new();
        for (_, t, why) in &self.left_out {
            let i = match reasons.iter().position(|(w, ..)| w == why) {
                Some(i) => i,
                None => {
                    reasons.push((why, 0, Vec::new()));
                    reasons.len() - 1
                }
            };
            reasons[i].1 += 1;
            reasons[i].2.push(t.kind.to_string());
        }
        reasons
            .into_iter()
            .map(|(why, n, mut kinds)| {
                kinds.sort();
                kinds.dedup();
                format!("{n} {}: {why}", kinds.join(", "))
            })
            .collect()
    }
}

/// Relative cost of a test, for the ETA.
pub fn work(t: &TestParams) -> f64 {
    t.count as f64 * (4.0 + (t.size as f64 / 64.0).ceil())
}

/// The range of one output base's results: median latencies in ns or bandwidths in Gb/s.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseSummary {
    pub base: String,
    pub tests: usize,
    pub low: f64,
    pub high: f64,
    pub latency: bool,
}

impl BaseSummary {
    /// Adds a finished test of `base` to `summaries`, which lists bases in the order they finish.
    pub fn add(summaries: &mut Vec<BaseSummary>, base: &str, m: &Measurement) {
        let (value, latency) = match m {
            Measurement::Latency(s) => (s.ns.median, true),
            Measurement::Bandwidth(s) => (s.gbps, false),
        };
        match summaries.last_mut() {
            Some(s) if s.base == base => {
                s.tests += 1;
                s.low = s.low.min(value);
                s.high = s.high.max(value);
            }
            _ => summaries.push(BaseSummary {
                base: base.to_string(),
                tests: 1,
                low: value,
                high: value,
                latency,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendError, BackendInfo, Outcome};
    use crate::params::TestKind;

    /// Leaves out writes for one reason and windows under 1 MiB for another.
    struct Picky;

    impl Backend for Picky {
        fn info(&self) -> BackendInfo {
            BackendInfo {
                name: "picky".into(),
                description: serde_json::Value::Null,
                max_transfer: 4096,
            }
        }
        fn leaves_out(&self, t: &TestParams) -> Option<String> {
            if t.kind == TestKind::BwWr {
                Some("no writes".into())
            } else if t.window < 1 << 20 {
                Some("small windows".into())
            } else {
                None
            }
        }
        fn run(&self, t: &TestParams, _seed: u64) -> Result<Outcome, BackendError> {
            Err(BackendError {
                test: t.kind.to_string(),
                message: "not run in this test".into(),
            })
        }
    }

    #[test]
    fn left_out_tests_are_counted_per_reason_with_their_kinds() {
        let suite = Suite::builtin("quick").unwrap();
        let plan = SuitePlan::new(&suite, &Picky);
        let all = suite.test_count();
        assert_eq!(plan.tests.len() + plan.left_out.len(), all);
        assert!(plan.tests.iter().all(|(_, t)| Picky.leaves_out(t).is_none()));
        // The quick suite's first group sweeps 12 sizes of BW_RD, BW_WR and BW_RDWR in 8 KiB:
        // BW_RD's reason comes first.
        let reasons = plan.left_out_reasons();
        let small = plan.left_out.iter().filter(|(.., why)| why == "small windows").count();
        assert_eq!(
            reasons[0],
            format!("{small} BW_RD, BW_RDWR, LAT_RD, LAT_WRRD: small windows")
        );
        assert_eq!(reasons[1], "12 BW_WR: no writes");
        assert_eq!(reasons.len(), 2);
        // The tests kept and left out stay in suite order, each with its group.
        let groups: Vec<usize> = plan.tests.iter().map(|(g, _)| *g).collect();
        assert!(groups.windows(2).all(|w| w[0] <= w[1]), "{groups:?}");
    }
}
