//! A one-line progress bar with ETA on stderr, drawn only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    enabled: bool,
    started: Instant,
    total_work: f64,
    done_work: f64,
    done: usize,
    total: usize,
    last_draw: Option<Instant>,
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

impl Progress {
    pub fn new(total: usize, total_work: f64) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            started: Instant::now(),
            total_work,
            done_work: 0.0,
            done: 0,
            total,
            last_draw: None,
        }
    }

    /// A test of `work` units finished; `label` says what runs now.
    pub fn advance(&mut self, work: f64, label: &str) {
        self.done += 1;
        self.done_work += work;
        self.draw(label, false);
    }

    fn draw(&mut self, label: &str, force: bool) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if !force && self.last_draw.is_some_and(|t| now - t < Duration::from_millis(100)) {
            return;
        }
        self.last_draw = Some(now);
        let elapsed = now - self.started;
        let frac = if self.total_work > 0.0 {
            (self.done_work / self.total_work).min(1.0)
        } else {
            1.0
        };
        let eta = if frac > 0.0 {
            elapsed.mul_f64((1.0 - frac) / frac)
        } else {
            Duration::ZERO
        };
        let width = 30;
        let filled = (frac * width as f64) as usize;
        let bar: String = "=".repeat(filled) + &" ".repeat(width - filled);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{bar}] {}/{} tests  {} elapsed  ETA {}  {label:<40.40}",
            self.done,
            self.total,
            clock(elapsed),
            clock(eta)
        );
        let _ = err.flush();
    }

    /// Print `line` on stderr from any thread without mixing it into the bar: on a terminal
    /// the bar's line is cleared first, and the bar comes back at its next update.
    pub fn print_above(line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = if err.is_terminal() {
            writeln!(err, "\r\x1b[K{line}")
        } else {
            writeln!(err, "{line}")
        };
    }

    /// Clear the line when done.
    pub fn finish(&mut self) {
        if self.enabled {
            let _ = write!(std::io::stderr().lock(), "\r{:120}\r", "");
        }
    }
}
