//! Why a monitor could not plan, open, read or run: each variant keeps what a front end needs
//! to say which of the user's values was wrong.

use crate::{CounterError, PmuError};
use std::fmt;

#[derive(Debug)]
pub enum MonitorError {
    /// Discovery, an unknown PMU or event, a bad term.
    Pmu(PmuError),
    /// Opening or reading a counter.
    Counter(CounterError),
    /// An event list (`a/b/,{c/d/,e/f/}`) that does not split into events.
    EventList { text: String, message: String },
    /// A `{...}` group whose events resolve to different PMU instances.
    GroupAcrossPmus {
        text: String,
        event: String,
        pmus: Vec<String>,
        first: Vec<String>,
    },
    /// More than [`super::MAX_EVENTS`] events after opening every instance of a base name.
    TooManyEvents,
    /// No PCIe PMU of the system has default payload events.
    NoPayloadEvents,
    /// The command to count behind could not be started.
    Spawn { program: String, error: std::io::Error },
    /// Waiting for that command failed.
    Wait(std::io::Error),
}

impl MonitorError {
    /// True when the error comes from what the user asked for (an exit code 2 in a CLI).
    pub fn is_input(&self) -> bool {
        match self {
            MonitorError::Pmu(e) => e.is_input(),
            MonitorError::Counter(e) => e.is_input(),
            MonitorError::EventList { .. }
            | MonitorError::GroupAcrossPmus { .. }
            | MonitorError::TooManyEvents
            | MonitorError::NoPayloadEvents => true,
            MonitorError::Spawn { .. } | MonitorError::Wait(_) => false,
        }
    }
}

impl fmt::Display for MonitorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MonitorError::Pmu(e) => write!(f, "{e}"),
            MonitorError::Counter(e) => write!(f, "{e}"),
            MonitorError::EventList { text, message } => write!(f, "{text:?}: {message}"),
            MonitorError::GroupAcrossPmus {
                text,
                event,
                pmus,
                first,
            } => write!(
                f,
                "{text:?}: the events of a group must be on the same PMUs: {event} is on {}, the group's first event on {}",
                pmus.join(", "),
                first.join(", ")
            ),
            MonitorError::TooManyEvents => write!(
                f,
                "more than {} events (after opening every instance of a PMU base name); count fewer at once",
                super::MAX_EVENTS
            ),
            MonitorError::NoPayloadEvents => write!(f, "no PCIe PMU with rx_bytes/tx_bytes payload events here"),
            MonitorError::Spawn { program, error } => write!(f, "cannot run {program:?}: {error}"),
            MonitorError::Wait(e) => write!(f, "waiting for the command: {e}"),
        }
    }
}

impl std::error::Error for MonitorError {}

impl From<PmuError> for MonitorError {
    fn from(e: PmuError) -> Self {
        MonitorError::Pmu(e)
    }
}

impl From<CounterError> for MonitorError {
    fn from(e: CounterError) -> Self {
        MonitorError::Counter(e)
    }
}
