//! pcie-bench's integration tests in one binary: each file below used to be a test binary of
//! its own, each linking the same libraries.

#[path = "hostile_input.rs"]
mod hostile_input;
#[path = "netfpga_dat.rs"]
mod netfpga_dat;
#[path = "paper_suite.rs"]
mod paper_suite;
#[path = "reference_data.rs"]
mod reference_data;
#[path = "run_dir.rs"]
mod run_dir;
#[path = "suites.rs"]
mod suites;
