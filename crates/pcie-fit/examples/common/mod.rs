//! What the calibration and fit-check examples share: the E5-2637 v3's two measured runs and
//! their command lines' `--name VALUE` options.

use std::path::{Path, PathBuf};

/// The shared pcie-bench measurements: IOMMU off, and IOMMU on with 4 KB pages.
pub const DIRS: [&str; 2] = [
    "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro",
    "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp",
];

/// The directory holding [`DIRS`] (data/reference/pcie-bench).
pub fn reference_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/reference/pcie-bench")
}

/// The value after `name` on the command line, if given.
pub fn opt(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}
