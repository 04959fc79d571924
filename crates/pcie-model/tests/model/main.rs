//! The model's integration tests in one binary: each file below used to be a test binary of
//! its own, each linking the same libraries.

#[path = "closed_form.rs"]
mod closed_form;
#[path = "measured.rs"]
mod measured;
#[path = "properties.rs"]
mod properties;
#[path = "vectors.rs"]
mod vectors;
