//! Targets for pcie-model's parsers.

use crate::Target;

pub fn targets() -> Vec<Target> {
    Vec::new()
}
