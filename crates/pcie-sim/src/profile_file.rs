//! What both simulators' profiles share: loading a built-in profile or a TOML file, the error
//! that names file and key, and the range checks every value passes.

use crate::distribution::{Spread, Tail};
use serde::Deserialize;
use std::fmt;
use std::path::Path;

/// A profile that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileError {
    pub file: String,
    pub message: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

impl std::error::Error for ProfileError {}

pub(crate) trait Checked: Sized + for<'de> Deserialize<'de> {
    fn check(&self) -> Result<(), String>;
}

pub(crate) fn parse<T: Checked>(file: &str, text: &str) -> Result<T, ProfileError> {
    let err = |message: String| ProfileError {
        file: file.to_string(),
        message,
    };
    let p: T = toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
    p.check().map_err(err)?;
    Ok(p)
}

/// Load a built-in profile by name, or a TOML file when `name` contains a `/` or ends in `.toml`.
pub(crate) fn load<T: Checked>(name: &str, builtin: &[(&str, &str)], what: &str) -> Result<T, ProfileError> {
    if name.contains('/') || name.ends_with(".toml") {
        let text =
            pcie_output::read::read_text(Path::new(name), pcie_output::read::Limit::DEFINITION).map_err(|e| {
                ProfileError {
                    file: name.to_string(),
                    message: format!("cannot read: {e}"),
                }
            })?;
        return parse(name, &text);
    }
    match builtin.iter().find(|(n, _)| *n == name) {
        Some((n, text)) => parse(&format!("{n}.toml"), text),
        None => {
            let names: Vec<&str> = builtin.iter().map(|(n, _)| *n).collect();
            Err(ProfileError {
                file: name.to_string(),
                message: format!(
                    "unknown {what} profile; built-in ones are {} (or give a path to a .toml file)",
                    names.join(", ")
                ),
            })
        }
    }
}

/// Longest latency, or time per DMA, a profile may give: 1 ms (10^6 ns). Far above any real
/// host or device (a DMA read that took 1 ms would be a completion timeout), small enough that
/// one transaction's worst case fits the simulator's time base (see [`crate::MAX_TRANSACTIONS`]).
pub(crate) const MAX_NS: f64 = 1e6;
/// MPS and MRRS sizes, bytes.
pub(crate) const SIZES: [u32; 6] = [128, 256, 512, 1024, 2048, 4096];
/// Longest time per read request or TLP: 100 µs.
pub(crate) const MAX_REQUEST_NS: f64 = 1e5;
/// Longest time per 64 B line: 10 µs (6.4 MB/s, a thousand times slower than any real path).
pub(crate) const MAX_LINE_NS: f64 = 1e4;

/// A number as a message shows it: plainly, or in exponent form when it is huge or tiny.
pub(crate) fn show(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e9).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// `key = v` must lie in `[lo, hi]` (`unit` follows the bounds in the message).
pub(crate) fn between(key: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), String> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{key} = {}: must be between {} and {}{unit}",
            show(v),
            show(lo),
            show(hi)
        ))
    }
}

/// `key = v` must be more than 0 and at most `hi`.
pub(crate) fn above_zero(key: &str, v: f64, hi: f64, unit: &str) -> Result<(), String> {
    if v > 0.0 && v <= hi {
        Ok(())
    } else {
        Err(format!(
            "{key} = {}: must be more than 0 and at most {}{unit}",
            show(v),
            show(hi)
        ))
    }
}

/// A whole number `key = v` must lie in `[lo, hi]`.
pub(crate) fn count(key: &str, v: impl Into<u64>, lo: u64, hi: u64) -> Result<(), String> {
    let v = v.into();
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("{key} = {v}: must be between {lo} and {hi}"))
    }
}

pub(crate) fn one_of(key: &str, v: u32, allowed: &[u32]) -> Result<(), String> {
    if allowed.contains(&v) {
        Ok(())
    } else {
        let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
        Err(format!("{key} = {v}: must be one of {}", list.join(", ")))
    }
}

/// Each of a spread's times between 0 and `hi` ns, in order.
pub(crate) fn spread(key: &str, s: &Spread, hi: f64) -> Result<(), String> {
    for (k, v) in [("min_ns", s.min_ns), ("mode_ns", s.mode_ns), ("max_ns", s.max_ns)] {
        between(&format!("{key}.{k}"), v, 0.0, hi, " ns")?;
    }
    if s.min_ns <= s.mode_ns && s.mode_ns <= s.max_ns {
        Ok(())
    } else {
        Err(format!(
            "{key}: need min_ns <= mode_ns <= max_ns, got {} / {} / {}",
            show(s.min_ns),
            show(s.mode_ns),
            show(s.max_ns)
        ))
    }
}

/// A tail's probability between 0 and 1 and its times between 0 and 1 ms, in order.
pub(crate) fn tail(key: &str, t: &Tail) -> Result<(), String> {
    between(&format!("{key}.prob"), t.prob, 0.0, 1.0, "")?;
    between(&format!("{key}.min_ns"), t.min_ns, 0.0, MAX_NS, " ns")?;
    between(&format!("{key}.max_ns"), t.max_ns, 0.0, MAX_NS, " ns")?;
    if t.min_ns <= t.max_ns {
        Ok(())
    } else {
        Err(format!("{key}: need min_ns <= max_ns"))
    }
}

/// `key`, a text, has at most `max` characters.
pub(crate) fn chars(key: &str, s: &str, max: usize) -> Result<(), String> {
    let n = s.chars().count();
    if n > max {
        Err(format!("{key}: {n} characters: at most {max}"))
    } else {
        Ok(())
    }
}

/// A profile's words: `name` at most 64 characters, `description` and each of at most 32
/// `sources` at most 1024, so that a profile's text stays small however it is edited.
pub(crate) fn words(name: &str, description: &str, sources: &[String]) -> Result<(), String> {
    chars("name", name, 64)?;
    chars("description", description, 1024)?;
    if sources.len() > 32 {
        return Err(format!("sources: {} entries: at most 32", sources.len()));
    }
    sources
        .iter()
        .enumerate()
        .try_for_each(|(i, s)| chars(&format!("sources[{i}]"), s, 1024))
}
