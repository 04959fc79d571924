//! The fuzzing loop: mutate, run under `catch_unwind`, time, keep what the target accepts.

use crate::alloc::BoundedAlloc;
use crate::mutate::{mutate, SplitMix64};
use crate::{FuzzTarget, Verdict};
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::time::{Duration, Instant};

/// CPU time this thread has used (user and system). Inputs are timed by it, not by the wall
/// clock: a run on a loaded machine, or one stopped for minutes (SIGSTOP, a suspended VM), took
/// the wall clock's pauses for slow inputs (a 10-million-input run stopped three times here
/// reported 16.5, 156 and 197 s inputs, the lengths of the stops), and which accepted inputs
/// join the corpus ([`CORPUS_TIME`]) then depended on the machine's load, not on the seed.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Inputs the target accepted that are kept for further mutation.
const CORPUS_MAX: usize = 512;
/// Accepted inputs slower than this are tried but not kept: mutants of slow inputs are slow
/// too, and a corpus that drifts to the largest inputs a format allows (a million-point size
/// list, a 64 KiB catalog) spends the run on a few of them instead of on many shapes.
const CORPUS_TIME: Duration = Duration::from_millis(1);
/// Nor are accepted inputs more than this many times the largest seed: they keep their
/// mutants near real sizes (the mutator alone would let them grow to 64 KiB).
const CORPUS_GROWTH: usize = 4;

/// One input that broke a target.
#[derive(Debug, Clone)]
pub struct Failure {
    pub input: Vec<u8>,
    /// The panic message and place, the time taken, or the target's own complaint.
    pub what: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = String::from_utf8_lossy(&self.input);
        match text.char_indices().nth(300) {
            Some((cut, _)) => write!(
                f,
                "{} on input {:?}... ({} bytes)",
                self.what,
                &text[..cut],
                self.input.len()
            ),
            None => write!(f, "{} on input {:?}", self.what, text),
        }
    }
}

/// What a run of one target did.
#[derive(Debug, Clone, Default)]
pub struct FuzzReport {
    pub target: &'static str,
    pub tried: u64,
    pub accepted: u64,
    pub refused: u64,
    pub failures: Vec<Failure>,
    /// The slowest input's CPU time.
    pub slowest: Duration,
    pub elapsed: Duration,
}

/// Distinct failures kept per run (the count goes on).
const FAILURES_KEPT: usize = 20;

thread_local! {
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Panics inside a fuzz run are recorded for the report instead of printed; others print as usual.
fn quiet_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let fuzzing = PANIC.with(|p| {
                let mut p = p.borrow_mut();
                if p.as_deref() == Some("") {
                    *p = Some(info.to_string());
                    true
                } else {
                    false
                }
            });
            if !fuzzing {
                default(info);
            }
        }));
    });
}

/// Run `inputs` inputs through `target`, starting from seed `seed`; an input that takes more than
/// `limit` of CPU time ([`thread_cpu`]) is a failure.
pub fn fuzz(target: &FuzzTarget, inputs: u64, seed: u64, limit: Duration) -> FuzzReport {
    fuzz_with_progress(target, inputs, seed, limit, |_| {})
}

/// Inputs between two calls of a long run's progress callback.
pub const PROGRESS_EVERY: u64 = 1_000_000;

/// [`fuzz`], calling `progress` with the report so far after every [`PROGRESS_EVERY`] inputs,
/// so a long run that is stopped early still says how far it got.
pub fn fuzz_with_progress(
    target: &FuzzTarget,
    inputs: u64,
    seed: u64,
    limit: Duration,
    mut progress: impl FnMut(&FuzzReport),
) -> FuzzReport {
    quiet_panics();
    let mut rng = SplitMix64::new(seed);
    let mut corpus: Vec<Vec<u8>> = target.seeds.clone();
    let keep_len = CORPUS_GROWTH * target.seeds.iter().map(Vec::len).max().unwrap_or(0).max(64);
    let mut report = FuzzReport {
        target: target.name,
        ..FuzzReport::default()
    };
    let start = Instant::now();
    let mut failed = 0u64;
    for i in 0..inputs {
        if i > 0 && i % PROGRESS_EVERY == 0 {
            report.elapsed = start.elapsed();
            progress(&report);
        }
        // The seeds themselves first, then mutants of the corpus.
        let input = match target.seeds.get(i as usize) {
            Some(s) => s.clone(),
            None => {
                let base = rng.below(corpus.len());
                mutate(&corpus[base], &corpus, &target.dictionary, &mut rng)
            }
        };
        BoundedAlloc::set_input(&input);
        PANIC.with(|p| *p.borrow_mut() = Some(String::new()));
        let t0 = thread_cpu();
        let result = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        let took = thread_cpu() - t0;
        let panicked = PANIC.with(|p| p.borrow_mut().take()).filter(|m| !m.is_empty());
        report.tried += 1;
        report.slowest = report.slowest.max(took);
        let what = match result {
            Err(_) => Some(format!("panic: {}", panicked.unwrap_or_default())),
            Ok(_) if took > limit => Some(format!("took {took:?} of CPU (limit {limit:?})")),
            Ok(Verdict::Wrong(why)) => Some(why),
            Ok(Verdict::Accepted) => {
                report.accepted += 1;
                let keep = took <= CORPUS_TIME && input.len() <= keep_len;
                if keep && corpus.len() < CORPUS_MAX {
                    corpus.push(input.clone());
                } else if keep {
                    let at = rng.below(CORPUS_MAX);
                    corpus[at] = input.clone();
                }
                None
            }
            Ok(Verdict::Refused(_)) => {
                report.refused += 1;
                None
            }
        };
        if let Some(what) = what {
            failed += 1;
            if report.failures.len() < FAILURES_KEPT && report.failures.iter().all(|f| f.what != what) {
                report.failures.push(Failure { input, what });
            }
        }
    }
    BoundedAlloc::set_input(&[]);
    report.elapsed = start.elapsed();
    if failed > report.failures.len() as u64 {
        let more = failed - report.failures.len() as u64;
        if let Some(last) = report.failures.last_mut() {
            last.what.push_str(&format!(" (and {more} more failing inputs)"));
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refused;

    fn overflowing(input: &[u8]) -> Verdict {
        match String::from_utf8_lossy(input).trim().parse::<u8>() {
            Ok(n) => {
                if n == 7 {
                    panic!("seven");
                }
                Verdict::Accepted
            }
            Err(_) => Verdict::Refused("not a byte".into()),
        }
    }

    #[test]
    fn a_panicking_target_is_reported_with_its_input_and_message() {
        let t = FuzzTarget::new("overflowing", &["12"], &[], overflowing);
        let r = fuzz(&t, 20_000, 1, Duration::from_secs(5));
        assert_eq!(r.tried, 20_000);
        assert!(r.accepted > 0 && r.refused > 0, "{r:?}");
        let f = r.failures.first().expect("the fuzzer finds 7");
        assert_eq!(String::from_utf8_lossy(&f.input).trim(), "7");
        assert!(f.what.contains("seven"), "{}", f.what);
    }

    #[test]
    fn a_sound_target_has_no_failures() {
        let sound = FuzzTarget::new("sound", &["12"], &[], |i| {
            match String::from_utf8_lossy(i).trim().parse::<u8>() {
                Ok(_) => Verdict::Accepted,
                Err(e) => refused(e.to_string()),
            }
        });
        let r = fuzz(&sound, 5_000, 2, Duration::from_secs(5));
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        assert!(r.accepted > 100, "mutants of a number are often numbers: {r:?}");
    }

    #[test]
    fn an_input_is_slow_by_the_cpu_it_takes_not_by_the_time_it_waits() {
        // "spin" keeps the CPU busy past the limit; "wait" sleeps past it, as an input does whose
        // process was stopped or not scheduled: only the first is a failure.
        let t = FuzzTarget::new("clock", &["spin", "wait"], &[], |i| {
            let until = Instant::now() + Duration::from_millis(60);
            match i {
                b"spin" => while Instant::now() < until {},
                b"wait" => std::thread::sleep(Duration::from_millis(60)),
                _ => {}
            }
            Verdict::Accepted
        });
        let r = fuzz(&t, 2, 4, Duration::from_millis(30));
        assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
        assert_eq!(r.failures[0].input, b"spin");
        assert!(r.failures[0].what.contains("of CPU"), "{}", r.failures[0].what);
    }

    #[test]
    fn an_empty_refusal_is_a_failure() {
        let t = FuzzTarget::new("mute", &["x"], &[], |_| refused(String::new()));
        let r = fuzz(&t, 10, 3, Duration::from_secs(5));
        assert!(r.failures[0].what.contains("empty message"));
    }
}
