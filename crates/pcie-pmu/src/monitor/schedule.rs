//! The run loop: intervals, duration, command, cancellation, waiting and timestamping through
//! the source, each closed interval handed to a sink.

use super::counting::Monitor;
use super::row::Row;
use super::MonitorError;
use crate::CounterSource;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What a front end does with each interval the run loop closes.
pub trait Sink {
    /// The front end's error; the loop's own errors convert into it.
    type Error: From<MonitorError>;
    /// An interval's rows; `Ok(false)` ends the run (a closed pipe, a full disk).
    fn interval(&mut self, mon: &Monitor, rows: &[Row]) -> Result<bool, Self::Error>;
    /// Called at every wake-up between intervals; `Ok(false)` ends the run (a key).
    fn wake(&mut self, _mon: &Monitor) -> Result<bool, Self::Error> {
        Ok(true)
    }
    /// How often to wake up at most.
    fn poll(&self) -> Duration {
        Duration::from_millis(100)
    }
}

/// When the run loop reads and when it stops.
#[derive(Debug, Clone, Copy)]
pub struct Schedule<'a> {
    /// Close an interval every this long; `None`: only refresh every second (totals only).
    pub interval: Option<Duration>,
    pub duration: Option<f64>,
    /// Count while this command runs.
    pub command: &'a [String],
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSummary {
    /// Seconds counted, on the source's clock.
    pub secs: f64,
    /// The exit status of the command counted behind, when there was one.
    pub command_status: Option<ExitStatus>,
}

impl RunSummary {
    /// The command's status when it did not succeed.
    pub fn command_failure(&self) -> Option<ExitStatus> {
        self.command_status.filter(|s| !s.success())
    }
}

/// Count until the duration passes, the command exits, `cancel` is set or the sink says stop,
/// handing each closed interval to the sink (the end of the run closes a last, partial one).
pub fn run<S: Sink + ?Sized>(
    src: &mut dyn CounterSource,
    mon: &mut Monitor,
    sched: Schedule,
    cancel: &AtomicBool,
    sink: &mut S,
) -> Result<RunSummary, S::Error> {
    let start = src.elapsed();
    mon.refresh(src)?;
    let mut child = match sched.command.split_first() {
        Some((prog, args)) => {
            Some(
                std::process::Command::new(prog)
                    .args(args)
                    .spawn()
                    .map_err(|error| MonitorError::Spawn {
                        program: prog.clone(),
                        error,
                    })?,
            )
        }
        None => None,
    };
    let deadline = sched.duration.map(|d| start + Duration::from_secs_f64(d));
    let step = sched.interval;
    let mut next_tick = step.map(|s| start + s);
    let mut last_tick = start;
    // Without an interval the counters are still read every second: drivers without a poller
    // update their count only when read, and the multiplexing scale is applied per read interval.
    let refresh = Duration::from_secs(1);
    let mut next_refresh = step.is_none().then_some(start + refresh);
    // Wake up at least this often to notice the command's exit (10 ms), a cancel or a key.
    let poll = if child.is_some() {
        Duration::from_millis(10)
    } else {
        sink.poll()
    };
    let mut status = None;
    loop {
        let now = src.elapsed();
        let wake = [deadline, next_tick, next_refresh, Some(now + poll)]
            .into_iter()
            .flatten()
            .min();
        if let Some(w) = wake.filter(|w| *w > now) {
            src.sleep(w - now).map_err(MonitorError::from)?;
        }
        let now = src.elapsed();
        let mut done = cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) || !sink.wake(mon)?;
        if let Some(ch) = child.as_mut() {
            if let Some(s) = ch.try_wait().map_err(MonitorError::Wait)? {
                status = Some(s);
                done = true;
            }
        }
        if let Some(t) = next_refresh.as_mut().filter(|t| !done && now >= **t) {
            mon.refresh(src)?;
            while *t <= now {
                *t += refresh;
            }
        }
        let tick = next_tick.is_some_and(|t| now >= t);
        if step.is_some() && (tick || (done && now > last_tick)) {
            let rows = mon.sample(src, (now - start).as_secs_f64(), (now - last_tick).as_secs_f64())?;
            if !sink.interval(mon, &rows)? {
                done = true;
            }
            last_tick = now;
            if let (Some(t), Some(s)) = (next_tick.as_mut(), step) {
                while *t <= now {
                    *t += s;
                }
            }
        }
        if done {
            break;
        }
    }
    let command_status = match (child, status) {
        (Some(_), Some(s)) => Some(s),
        // Interrupted: the command got the same signal; wait for it.
        (Some(mut ch), None) => Some(ch.wait().map_err(MonitorError::Wait)?),
        (None, _) => None,
    };
    Ok(RunSummary {
        secs: (src.elapsed() - start).as_secs_f64(),
        command_status,
    })
}
