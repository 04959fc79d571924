//! Power states of the uncore (root complex, ring, LLC) of a host that manages its power.
//!
//! The idle uncore drops into lower power states after idle times, deeper ones later; a request
//! that finds it in one waits for it to wake. The power controller does not watch continuously:
//! it looks at the idle time once per tick, so a request finds the deepest state whose idle time
//! had passed at the last tick before it arrived. A latency test issues one DMA at a time, so each
//! request follows an idle gap `g` of the test's own turnaround; the tick runs on the controller's
//! own clock, so state `k` (entered after `idle_k`) is found by a share `(g - idle_k) / tick` of
//! the requests (for `g - idle_k` up to a tick). Bandwidth tests keep the uncore busy: their
//! requests find it awake.

use super::profile::Power;
use crate::distribution::{draw_tail, Sampler, Tail};
use crate::rng::Rng;
use crate::time::Ps;

#[derive(Debug, Clone)]
pub(crate) struct PowerStates {
    tick: Ps,
    /// (idle time that enters the state, its exit latency), deepest first.
    states: Vec<(Ps, Sampler)>,
    stall: Tail,
    /// Whether a request since the last read's stall draw found the deepest state.
    deepest: bool,
    /// Since when the uncore has had nothing to do.
    idle_since: Ps,
}

impl PowerStates {
    pub(crate) fn new(p: &Power) -> PowerStates {
        let mut states: Vec<(Ps, Sampler)> = p
            .state
            .iter()
            .map(|s| (crate::time::ps(s.idle_ns), Sampler::triangular(&s.exit)))
            .collect();
        states.sort_by_key(|(idle, _)| std::cmp::Reverse(*idle));
        PowerStates {
            tick: crate::time::ps(p.tick_ns).max(1),
            states,
            stall: p.stall,
            deepest: false,
            idle_since: 0,
        }
    }

    /// A request reaches the uncore at `arrival`: returns when the uncore is awake to take it.
    /// The controller's tick runs on its own clock, unrelated to the device's: the last tick
    /// lies at a random point of the tick before the arrival. (A fixed phase would alias with
    /// the nearly periodic latency loop and let the phase, not the idle time, pick the state.)
    pub(crate) fn wake(&mut self, arrival: Ps, rng: &mut Rng) -> Ps {
        if arrival <= self.idle_since {
            return arrival;
        }
        let last_tick = arrival.saturating_sub(rng.below(self.tick));
        let awake = match last_tick.checked_sub(self.idle_since) {
            Some(idle) => match self.states.iter().position(|(enter, _)| *enter <= idle) {
                Some(k) => {
                    self.deepest |= k == 0;
                    arrival.saturating_add(self.states[k].1.draw(rng))
                }
                None => arrival,
            },
            None => arrival,
        };
        self.busy_until(awake);
        awake
    }

    /// The uncore has work until `t` (a completion leaving, a write processed).
    #[inline]
    pub(crate) fn busy_until(&mut self, t: Ps) {
        self.idle_since = self.idle_since.max(t);
    }

    /// A rare stall of a whole read whose requests woke the uncore from its deepest state: that
    /// exit now and then runs long (a firmware flow). Tied to the state, not to every read, so
    /// that bandwidth tests, which keep the uncore out of it, see none.
    pub(crate) fn stall(&mut self, rng: &mut Rng) -> Ps {
        if std::mem::take(&mut self.deepest) {
            draw_tail(rng, &self.stall)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::Spread;
    use crate::testbed::profile::PowerState;

    fn states() -> PowerStates {
        let exit = |ns| Spread {
            min_ns: ns,
            mode_ns: ns,
            max_ns: ns,
        };
        PowerStates::new(&Power {
            tick_ns: 1000.0,
            state: vec![
                PowerState {
                    name: "deep".into(),
                    idle_ns: 600.0,
                    exit: exit(5000.0),
                },
                PowerState {
                    name: "shallow".into(),
                    idle_ns: 200.0,
                    exit: exit(700.0),
                },
            ],
            stall: Tail {
                prob: 0.0,
                min_ns: 0.0,
                max_ns: 0.0,
            },
        })
    }

    #[test]
    fn a_request_finds_the_deepest_state_its_idle_time_reached_at_the_last_tick() {
        let mut p = states();
        let mut rng = Rng::new(1);
        // Idle since 0; the last tick, at most 1 us before 1.7 us, saw at least 700 ns: deep.
        assert_eq!(p.wake(1_700_000, &mut rng), 6_700_000);
        // Busy until 6.7 us: 100 ns idle is not enough for a state whatever the tick.
        assert_eq!(p.wake(6_800_000, &mut rng), 6_800_000);
        // A request while the uncore is busy finds it awake.
        p.busy_until(20_000_000);
        assert_eq!(p.wake(19_000_000, &mut rng), 19_000_000);
    }

    #[test]
    fn each_state_is_found_by_its_share_of_the_gap_beyond_its_idle_time() {
        // Requests 900 ns after the last work.
        let mut p = states();
        let mut rng = Rng::new(1);
        let (mut deep, mut shallow, mut t) = (0, 0, 0);
        for _ in 0..10_000 {
            let arrival = t + 900_000;
            let awake = p.wake(arrival, &mut rng);
            match awake - arrival {
                5_000_000 => deep += 1,
                700_000 => shallow += 1,
                _ => {}
            }
            t = awake;
            p.busy_until(t);
        }
        // (900 - 600) / 1000 find the deep state, (600 - 200) / 1000 the shallow one.
        assert!((deep as f64 / 1e4 - 0.3).abs() < 0.02, "{deep}");
        assert!((shallow as f64 / 1e4 - 0.4).abs() < 0.02, "{shallow}");
    }
}
