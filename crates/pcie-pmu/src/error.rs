//! Errors of discovery, catalogs and event parsing. Each names what was wrong and, where there
//! is a choice, what exists.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PmuError {
    /// The sysfs root directory does not exist.
    NoRoot(PathBuf),
    /// The root exists but has no `sys/bus/event_source/devices` directory.
    NoEventSource(PathBuf),
    /// A sysfs file could not be read or does not parse.
    Sysfs { path: PathBuf, message: String },
    /// No PMU of that name; `known` lists the ones that exist.
    UnknownPmu { name: String, known: Vec<String> },
    /// The PMU has no such event or format term; `known` lists events and terms.
    UnknownEvent {
        pmu: String,
        event: String,
        known: Vec<String>,
    },
    /// The event needs parameters (`param=?` in its events/ file) the user did not give.
    MissingParams {
        pmu: String,
        event: String,
        params: Vec<String>,
    },
    /// The event string itself is malformed, or a value does not fit its field.
    BadSpec { spec: String, message: String },
    /// An embedded or user catalog is invalid.
    Catalog { file: String, message: String },
}

impl PmuError {
    /// True when the error comes from what the user typed or pointed at (exit code 2 in the CLI),
    /// false for a sysfs file that cannot be read (a runtime failure).
    pub fn is_input(&self) -> bool {
        !matches!(self, PmuError::Sysfs { .. } | PmuError::Catalog { .. })
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

impl fmt::Display for PmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmuError::NoRoot(p) => write!(f, "sysfs root {}: no such directory", p.display()),
            PmuError::NoEventSource(p) => write!(
                f,
                "sysfs root {}: no sys/bus/event_source/devices directory (not a Linux sysfs tree, or perf events are not built into this kernel)",
                p.display()
            ),
            PmuError::Sysfs { path, message } => write!(f, "{}: {message}", path.display()),
            PmuError::UnknownPmu { name, known } => {
                write!(f, "unknown PMU {name:?}; PMUs present: {}", list(known))
            }
            PmuError::UnknownEvent { pmu, event, known } => write!(
                f,
                "PMU {pmu} has no event or format term {event:?}; it has: {}",
                list(known)
            ),
            PmuError::MissingParams { pmu, event, params } => {
                let need: Vec<String> = params.iter().map(|p| format!("{p}=N")).collect();
                write!(f, "{pmu}/{event}/: missing {} (required by event {event})", need.join(", "))
            }
            PmuError::BadSpec { spec, message } => write!(f, "event {spec:?}: {message}"),
            PmuError::Catalog { file, message } => write!(f, "{file}: {message}"),
        }
    }
}

impl std::error::Error for PmuError {}
