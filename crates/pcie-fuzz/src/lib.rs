//! Mutation fuzzing of everything pcieperf reads from a user: suites, profiles, catalogs, sysfs
//! event strings, `-e` lists, workload specs, exec-protocol lines, result CSVs, size lists,
//! config spaces and the link and AER files `check` reads.
//!
//! It runs on the stable toolchain without instrumentation: each [`FuzzTarget`] has a seed corpus of
//! valid inputs and a dictionary of tokens its format knows; [`mutate`] edits seeds the ways broken
//! files and tired typists do (hostile numbers in place of numbers, deleted and repeated spans,
//! spliced inputs, stray bytes), and [`fuzz`] feeds each input to the target under
//! `catch_unwind`. Inputs a target accepts join the corpus, so later inputs go deeper.
//!
//! A failure is a panic, an input that takes more CPU time than the limit, or a target's own
//! [`Verdict::Wrong`] (an accepted input whose result is nonsense: NaN, a wrapped time, a refusal
//! with an empty message). Allocations larger than [`BoundedAlloc`]'s limit abort the process
//! after printing the input that asked for them, so the harness binaries install it as the
//! global allocator.
//!
//! ```no_run
//! let report = pcie_fuzz::fuzz(&pcie_fuzz::targets::all()[0], 100_000, 1, std::time::Duration::from_secs(2));
//! assert!(report.failures.is_empty(), "{:?}", report.failures);
//! ```
//! `cargo run --release -p pcie-fuzz -- --inputs 10000000` runs every target long;
//! `tests/short_run.rs` runs each for 3,000 inputs in the test suite, and for 100,000 with
//! `cargo test -p pcie-fuzz -- --ignored`.

mod alloc;
mod mutate;
mod run;
pub mod targets;

pub use alloc::BoundedAlloc;
pub use mutate::{mutate, SplitMix64, HOSTILE_NUMBERS};
pub use run::{fuzz, fuzz_with_progress, Failure, FuzzReport, PROGRESS_EVERY};

/// What one input did to a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Parsed and checked; the input joins the corpus.
    Accepted,
    /// Refused with this message.
    Refused(String),
    /// Accepted but the result is wrong (a failure, with the reason).
    Wrong(String),
}

/// One parser or validator under test.
pub struct FuzzTarget {
    /// Short name used on the command line and in reports.
    pub name: &'static str,
    /// Valid inputs mutations start from.
    pub seeds: Vec<Vec<u8>>,
    /// Tokens of the format (keys, keywords, separators) spliced into inputs.
    pub dictionary: Vec<&'static str>,
    /// Feeds one input through the parser and any checks behind it.
    pub run: fn(&[u8]) -> Verdict,
}

impl FuzzTarget {
    /// A target whose seeds are text.
    pub fn new(
        name: &'static str,
        seeds: &[&str],
        dictionary: &[&'static str],
        run: fn(&[u8]) -> Verdict,
    ) -> FuzzTarget {
        FuzzTarget {
            name,
            seeds: seeds.iter().map(|s| s.as_bytes().to_vec()).collect(),
            dictionary: dictionary.to_vec(),
            run,
        }
    }
}

/// A refusal must say something; an empty message is a failure of the target.
pub fn refused(message: String) -> Verdict {
    if message.trim().is_empty() {
        Verdict::Wrong("refused with an empty message".into())
    } else {
        Verdict::Refused(message)
    }
}

/// Most targets parse text: the input as UTF-8, invalid bytes replaced.
pub fn text(input: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(input)
}
