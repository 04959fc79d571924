//! pcie-pmu's integration tests in one binary: each file below used to be a test binary of
//! its own, each linking the same libraries.

#[path = "counting.rs"]
mod counting;
#[path = "families.rs"]
mod families;
