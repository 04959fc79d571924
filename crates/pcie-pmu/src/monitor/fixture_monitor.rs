//! Test support: an opened [`Monitor`] on a fixture host, for the tests of what consumes its
//! rows (charts, `pmu record`). Here rather than in `fixture`, which the monitor's own tests use.

use super::{resolve_events, Monitor, Plan};
use crate::fixture::{dwc_host, StepSource, Tree};

/// [`dwc_host`]'s upstream PMU counting Rx and Tx payload on a [`StepSource`]: (the tree,
/// which must outlive the monitor's use of it, the opened monitor, its source).
pub fn dwc_payload_monitor(name: &str) -> (Tree, Monitor, StepSource) {
    let t = dwc_host(name);
    let sys = crate::System::discover(t.path()).unwrap();
    let specs = ["dwc_rootport/rx_pcie_tlp_data_payload/,dwc_rootport/tx_pcie_tlp_data_payload/".into()];
    let plan = Plan::new(&sys, resolve_events(&sys, &specs).unwrap()).unwrap();
    let mut src = StepSource::default();
    let mon = Monitor::open(&mut src, plan).unwrap();
    (t, mon, src)
}
