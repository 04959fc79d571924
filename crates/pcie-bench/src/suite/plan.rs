//! A suite planned for one backend: its tests in order with their groups, the ones the backend
//! leaves out, each test's relative cost (for an ETA), and the per-base summary of a run.

use super::Suite;
use crate::backend::Backend;
use crate::params::TestParams;
use crate::stats::Measurement;

/// The tests of a suite a backend runs, each with the index of its group, and those it cannot.
#[derive(Debug, Clone)]
pub struct SuitePlan {
    pub tests: Vec<(usize, TestParams)>,
    pub left_out: Vec<(usize, TestParams)>,
}

impl SuitePlan {
    /// Expands every group of `suite` and sorts its tests by whether `backend` supports them.
    pub fn new(suite: &Suite, backend: &dyn Backend) -> SuitePlan {
        let (tests, left_out) = suite
            .groups()
            .iter()
            .enumerate()
            .flat_map(|(g, group)| group.expand().into_iter().map(move |t| (g, t)))
            .partition(|(_, t)| backend.supports(t));
        SuitePlan { tests, left_out }
    }

    /// The kinds of the left-out tests, sorted, each once.
    pub fn left_out_kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self.left_out.iter().map(|(_, t)| t.kind.to_string()).collect();
        kinds.sort();
        kinds.dedup();
        kinds
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
