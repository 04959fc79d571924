//! The bench run's progress bar on stderr (indicatif: drawn only when stderr is a terminal,
//! rate-smoothed ETA): tests done of all, the test that just finished, and lines from device
//! programs printed above it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// One bar for the whole run; clones share it (the exec backend's log threads hold one).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    tests: usize,
}

impl Default for Progress {
    /// A bar that draws nothing until [`Progress::start`].
    fn default() -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
            tests: 0,
        }
    }
}

impl Progress {
    /// Shows the bar for `tests` tests of `total_work` units (tests differ in length: the ETA
    /// follows work, the counts follow tests).
    pub fn start(&mut self, tests: usize, total_work: f64) {
        self.tests = tests;
        self.bar.set_length(total_work as u64);
        self.bar.set_style(
            ProgressStyle::with_template(
                "[{bar:30}] {prefix} tests  {elapsed_precise} elapsed  ETA {eta_precise}  {wide_msg}",
            )
            .expect("the template is valid")
            .progress_chars("=> "),
        );
        self.bar.set_prefix(format!("0/{tests}"));
        self.bar.set_draw_target(ProgressDrawTarget::stderr());
    }

    /// A test of `work` units finished, the `done`th; `label` names it.
    pub fn advance(&self, done: usize, work: f64, label: String) {
        self.bar.set_prefix(format!("{done}/{}", self.tests));
        self.bar.set_message(label);
        self.bar.inc(work as u64);
    }

    /// Prints `line` on stderr from any thread without mixing it into the bar.
    pub fn print_above(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Clears the bar when done.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
