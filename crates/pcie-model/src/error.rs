//! The one error type of the model: a parameter value that is not allowed, with what is.

use std::fmt;

/// A rejected parameter. `param` is the parameter's name as the command line spells it
/// (without dashes), so the CLI can print `--mps 300: must be one of ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub param: &'static str,
    pub value: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(param: &'static str, value: impl fmt::Display, reason: impl Into<String>) -> Self {
        ConfigError {
            param,
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// The value is not in a fixed list of allowed values.
    pub fn one_of<T: fmt::Display>(param: &'static str, value: impl fmt::Display, allowed: &[T]) -> Self {
        let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
        ConfigError::new(param, value, format!("must be one of {}", list.join(", ")))
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.param, self.value, self.reason)
    }
}

impl std::error::Error for ConfigError {}
