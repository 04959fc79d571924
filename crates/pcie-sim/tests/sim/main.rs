//! The simulator's integration tests in one binary: each file below used to be a test binary of
//! its own, each linking the same libraries.

#[path = "e3_power_states.rs"]
mod e3_power_states;
#[path = "mechanisms.rs"]
mod mechanisms;
#[path = "netfpga.rs"]
mod netfpga;
#[path = "profile_ranges.rs"]
mod profile_ranges;
#[path = "steady_state.rs"]
mod steady_state;
