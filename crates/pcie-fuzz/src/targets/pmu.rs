//! Targets for pcie-pmu's parsers.

use crate::Target;

pub fn targets() -> Vec<Target> {
    Vec::new()
}
