//! First-come-first-served resources. A resource remembers when it is next free, so a job's
//! start is `max(arrival, free)` and its end `start + busy`: both simulators build their
//! machines from these instead of an event heap (see `testbed::machine`).

use crate::time::Ps;

/// A resource serving one thing at a time, first come first served. Its times add plainly: it
/// serves millions of jobs per test, and each simulator bounds its times so that no sum wraps
/// (the DMA test bed checks a test's transactions against `MAX_TRANSACTIONS` once, the PMU host
/// bounds its runtimes to a day).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Server {
    pub(crate) free: Ps,
}

impl Server {
    /// Occupy the server from `arrival` (or when it frees) for `busy`; returns the start.
    #[inline]
    pub(crate) fn serve(&mut self, arrival: Ps, busy: Ps) -> Ps {
        let start = arrival.max(self.free);
        self.free = start + busy;
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
/// a release time, taken in turn: the one taken next is the one held longest. The release times
/// are kept by take, in a ring of [`TOKEN_SLOTS`]: the token the n-th take gets is the one the
/// (n - count)-th took, whose slot is not yet written over. A slot is a mask of the take's
/// number, so a take is one read and its hold one write, neither bounds-checked nor wrapped.
#[derive(Debug, Clone)]
pub(crate) struct Tokens {
    /// Release times by take, all 0 (free) to begin with: allocated zeroed, of which a test
    /// touches only the slots of its last `count` takes.
    release: Box<[Ps; TOKEN_SLOTS]>,
    count: u64,
    /// Takes so far.
    taken: u64,
}

/// Slots of a [`Tokens`] ring: a power of two, at least the most tokens a profile may give
/// (16,384 read tags).
const TOKEN_SLOTS: usize = 1 << 14;

impl Tokens {
    /// `count` tokens (at least one, at most [`TOKEN_SLOTS`]), all free.
    pub(crate) fn new(count: usize) -> Tokens {
        assert!(count <= TOKEN_SLOTS, "{count} tokens: at most {TOKEN_SLOTS}");
        let release = vec![0; TOKEN_SLOTS]
            .into_boxed_slice()
            .try_into()
            .expect("TOKEN_SLOTS slots");
        Tokens {
            release,
            count: count.max(1) as u64,
            taken: 0,
        }
    }

    /// When the token taken next is free (0 for one never held). Each DMA step that waits for
    /// it then takes it with [`Tokens::hold_until`].
    #[inline]
    pub(crate) fn next_free(&self) -> Ps {
        self.release[self.taken.wrapping_sub(self.count) as usize % TOKEN_SLOTS]
    }

    /// The next token is taken and held until `t`.
    #[inline]
    pub(crate) fn hold_until(&mut self, t: Ps) {
        self.release[self.taken as usize % TOKEN_SLOTS] = t;
        self.taken += 1;
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

    #[test]
    fn tokens_go_round_past_the_ring_as_a_queue_of_releases() {
        // A queue of release times, the oldest taken next: what the ring must give over many
        // more takes than it has slots.
        for count in [1, 22, TOKEN_SLOTS] {
            let mut t = Tokens::new(count);
            let mut queue: std::collections::VecDeque<Ps> = std::iter::repeat_n(0, count).collect();
            for take in 0..3 * TOKEN_SLOTS as u64 {
                assert_eq!(t.next_free(), queue.pop_front().unwrap(), "{count} tokens, take {take}");
                let release = take * 7 % 1000;
                t.hold_until(release);
                queue.push_back(release);
            }
        }
    }
}
