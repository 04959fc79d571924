//! Errors the CLI reports, and the exit code each maps to.

use pcie_model::ConfigError;
use std::fmt;

#[derive(Debug)]
pub enum CliError {
    /// Bad usage or input: exit code 2.
    Usage(String),
    /// The command could not finish: exit code 1.
    Runtime(String),
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Runtime(m) => f.write_str(m),
        }
    }
}

/// A rejected model parameter, spelled as the option the user typed.
impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError::Usage(format!("--{} {}: {}", e.param, e.value, e.reason))
    }
}
