//! The fuzz targets, one module per library whose input they feed.

mod bench;
mod model;
mod pmu;
mod sim;
mod sysfs;

use crate::FuzzTarget;

/// Every target, in a stable order.
pub fn all() -> Vec<FuzzTarget> {
    let mut all = Vec::new();
    all.extend(model::targets());
    all.extend(sim::targets());
    all.extend(bench::targets());
    all.extend(pmu::targets());
    all.extend(sysfs::targets());
    all
}
