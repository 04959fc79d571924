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
    #[inline]
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

/// A fixed number of tokens (a device's read tags, a root port's posted credits), each held until
/// a release time, taken in turn: the one taken next is the one held longest. A slot per token
/// in a ring, all released at 0 to begin with, so a take is one read and its hold one write.
#[derive(Debug, Clone)]
pub(crate) struct Tokens {
    release: Box<[Ps]>,
    /// The token taken next.
    next: usize,
}

impl Tokens {
    /// `count` tokens (at least one), all free.
    pub(crate) fn new(count: usize) -> Tokens {
        Tokens {
            release: vec![0; count.max(1)].into_boxed_slice(),
            next: 0,
        }
    }

    /// When the token taken next is free (0 for one never held). Each DMA step that waits for
    /// it then takes it with [`Tokens::hold_until`].
    #[inline]
    pub(crate) fn next_free(&self) -> Ps {
        self.release[self.next]
    }

    /// The next token is taken and held until `t`.
    #[inline]
    pub(crate) fn hold_until(&mut self, t: Ps) {
        self.release[self.next] = t;
        self.next += 1;
        if self.next == self.release.len() {
            self.next = 0;
        }
    }
}

/// Identical servers each taken by the next job as soon as it is free (pcie-bench's DMA
/// threads): their free times in order, earliest first, in a ring. A job's end lands among the
/// last few (jobs take similar times), so it is put in place from the back, which costs less
/// than a heap's sift.
#[derive(Debug, Clone)]
pub(crate) struct Earliest {
    ring: Vec<Ps>,
    /// Where the earliest is; the latest is `servers - 1` after it.
    head: usize,
    servers: usize,
}

impl Earliest {
    /// `servers` (at least one) free from time 0.
    pub(crate) fn new(servers: usize) -> Earliest {
        let servers = servers.max(1);
        Earliest {
            ring: vec![0; servers.next_power_of_two()],
            head: 0,
            servers,
        }
    }

    /// The earliest free server takes a job: returns when it is free, and the job's end,
    /// `end(free)`, is when it is free again.
    #[inline]
    pub(crate) fn take(&mut self, end: impl FnOnce(Ps) -> Ps) -> Ps {
        let mask = self.ring.len() - 1;
        let free = self.ring[self.head];
        let done = end(free);
        self.head = (self.head + 1) & mask;
        // Move later free times up one slot until `done` fits.
        let mut at = self.head + self.servers - 1;
        while at > self.head && self.ring[(at - 1) & mask] > done {
            self.ring[at & mask] = self.ring[(at - 1) & mask];
            at -= 1;
        }
        self.ring[at & mask] = done;
        free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_free_server_takes_each_job() {
        let mut e = Earliest::new(3);
        let mut starts = Vec::new();
        for busy in [50, 10, 30, 5, 5, 100, 1] {
            starts.push(e.take(|free| free + busy));
        }
        // Ends: 50, 10, 30; then 10+5, 15+5, 20+100, 30+1.
        assert_eq!(starts, vec![0, 0, 0, 10, 15, 20, 30]);
        let mut one = Earliest::new(1);
        assert_eq!((one.take(|f| f + 7), one.take(|f| f + 7)), (0, 7));
    }

    #[test]
    fn a_token_is_free_at_once_until_all_are_held_then_at_the_oldest_release() {
        let mut t = Tokens::new(3);
        let mut frees = Vec::new();
        for release in [30, 10, 20, 40, 50, 60, 70] {
            frees.push(t.next_free());
            t.hold_until(release);
        }
        // Three free at once; then each take waits for the token held longest (in take order,
        // not the earliest release): 30, 10, 20, 40.
        assert_eq!(frees, vec![0, 0, 0, 30, 10, 20, 40]);
        let mut one = Tokens::new(1);
        assert_eq!(one.next_free(), 0);
        one.hold_until(5);
        assert_eq!(one.next_free(), 5);
    }
}
