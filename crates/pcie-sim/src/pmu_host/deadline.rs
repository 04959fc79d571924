//! The host's block-layer queue for a single-queue disk: Linux's mq-deadline, the default
//! scheduler of a disk with one hardware queue (`elevator_get_default`), which is why such a
//! disk has `nr_requests` = 2 × its queue depth. Requests beyond the device's command slots
//! wait here; when a slot frees, `dispatch` picks the next as mq-deadline does (Linux 5.10,
//! block/mq-deadline.c, `__dd_dispatch_request`): it goes on with the current batch (the next
//! request of the same direction in sector order) for up to `fifo_batch` requests, then
//! prefers reads, giving writes a batch once reads have been preferred over waiting writes
//! `writes_starved` times, and starts a batch from the oldest request of its direction when
//! that one's deadline has passed or the sector order has run out. The tunables are the
//! kernel's defaults (Documentation/block/deadline-iosched.rst).

use crate::time::Ps;

/// Requests dispatched in one direction before the direction is chosen again.
const FIFO_BATCH: u32 = 16;
/// Times reads may be preferred over waiting writes before writes get a batch.
const WRITES_STARVED: u32 = 2;
/// How long a read and a write may wait before their batch starts from them (500 ms, 5 s).
const EXPIRE: [Ps; 2] = [500_000_000_000, 5_000_000_000_000];

/// A request waiting in the scheduler: its I/O, where it starts on the disk and when it
/// arrived (its deadline follows).
#[derive(Debug, Clone, Copy)]
struct Request {
    io: usize,
    sector: u64,
    arrived: Ps,
}

/// mq-deadline's queues and dispatch state for one disk.
#[derive(Debug, Default)]
pub(super) struct Deadline {
    /// Waiting requests per direction (0 read, 1 write), oldest first (the FIFO); sector order
    /// is found by scanning, as the queues hold at most `nr_requests`.
    fifo: [Vec<Request>; 2],
    /// The request after the last dispatched one in sector order, in that one's direction.
    next: Option<(usize, usize)>,
    batching: u32,
    starved: u32,
}

impl Deadline {
    pub(super) fn is_empty(&self) -> bool {
        self.fifo[0].is_empty() && self.fifo[1].is_empty()
    }

    pub(super) fn insert(&mut self, io: usize, write: bool, sector: u64, t: Ps) {
        self.fifo[write as usize].push(Request { io, sector, arrived: t });
    }

    /// The request to send to the device at `t`, if any waits.
    pub(super) fn dispatch(&mut self, t: Ps) -> Option<usize> {
        let batch = self.next.filter(|_| self.batching < FIFO_BATCH);
        let (dir, i) = match batch {
            Some(n) => n,
            None => {
                let dir = if !self.fifo[0].is_empty() {
                    if !self.fifo[1].is_empty() && self.starved >= WRITES_STARVED {
                        1
                    } else {
                        self.starved += u32::from(!self.fifo[1].is_empty());
                        0
                    }
                } else if !self.fifo[1].is_empty() {
                    1
                } else {
                    return None;
                };
                if dir == 1 {
                    self.starved = 0;
                }
                self.batching = 0;
                let expired = self.fifo[dir][0].arrived + EXPIRE[dir] <= t;
                match self.next.filter(|&(d, _)| d == dir && !expired) {
                    Some(n) => n,
                    None => (dir, 0),
                }
            }
        };
        self.batching += 1;
        let r = self.fifo[dir].remove(i);
        // The next in sector order: the lowest sector above this one's (an equal sector
        // inserted later sorts after it, as the kernel's rb-tree keeps them).
        self.next = self.fifo[dir]
            .iter()
            .enumerate()
            .filter(|(j, q)| q.sector > r.sector || (q.sector == r.sector && *j >= i))
            .min_by_key(|(j, q)| (q.sector, *j))
            .map(|(j, _)| (dir, j));
        Some(r.io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(d: &mut Deadline, t: Ps) -> Vec<usize> {
        std::iter::from_fn(|| d.dispatch(t)).collect()
    }

    #[test]
    fn reads_go_first_and_writes_get_a_batch_after_two_read_batches() {
        let mut d = Deadline::default();
        for i in 0..20 {
            d.insert(i, true, i as u64 * 2048, 0);
        }
        for i in 0..40 {
            d.insert(100 + i, false, i as u64 * 2048, 0);
        }
        let runs = drain(&mut d, 1)
            .chunk_by(|a, b| (*a < 100) == (*b < 100))
            .map(|r| (r[0] < 100, r.len()))
            .collect::<Vec<_>>();
        // Two batches of 16 reads (one run), 16 writes, the last 8 reads, the last 4 writes.
        assert_eq!(runs, [(false, 32), (true, 16), (false, 8), (true, 4)]);
    }

    #[test]
    fn a_batch_starts_from_the_oldest_and_goes_on_up_the_disk() {
        let mut d = Deadline::default();
        for (io, sector) in [(0, 30), (1, 10), (2, 20), (3, 40)] {
            d.insert(io, true, sector, 0);
        }
        assert_eq!(drain(&mut d, 1), [0, 3, 1, 2]);
        // After a full batch the next starts where it ended, unless the oldest request has
        // waited beyond its deadline (500 ms for a read): then from the oldest.
        let order = |t: Ps| {
            let mut d = Deadline::default();
            d.insert(0, false, 100, 0);
            d.insert(1, false, 0, 1);
            for io in 2..18 {
                d.insert(io, false, 100 + 10 * io as u64, 2);
            }
            let first: Vec<usize> = (0..16).map(|_| d.dispatch(2).unwrap()).collect();
            assert_eq!(first, [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
            drain(&mut d, t)
        };
        assert_eq!(order(EXPIRE[0]), [17, 1]);
        assert_eq!(order(EXPIRE[0] + 1), [1, 17]);
    }
}
