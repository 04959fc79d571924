//! Targets for pcie-sim's parsers.

use crate::Target;

pub fn targets() -> Vec<Target> {
    Vec::new()
}
