//! First-come-first-served resources. A resource remembers when it is next free, so a job's
//! start is `max(arrival, free)` and its end `start + busy`: both simulators build their
//! machines from these instead of an event heap (see `testbed::machine`).

use crate::time::Ps;

/// A resource serving one thing at a time, first come first served.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Server {
    pub(crate) free: Ps,
}

impl Server {
    /// Occupy the server from `arrival` (or when it frees) for `busy`; returns the start.
    pub(crate) fn serve(&mut self, arrival: Ps, busy: Ps) -> Ps {
        let start = arrival.max(self.free);
        self.free = start.saturating_add(busy);
        start
    }
}

/// Several identical servers (page walkers): each job takes the earliest free one.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    pub(crate) free: Vec<Ps>,
}

impl Pool {
    pub(crate) fn serve(&mut self, arrival: Ps, busy: Ps) -> Ps {
        let (i, &f) = self
            .free
            .iter()
            .enumerate()
            .min_by_key(|(_, f)| **f)
            .expect("pool is never empty");
        let start = arrival.max(f);
        self.free[i] = start.saturating_add(busy);
        start
    }
}
