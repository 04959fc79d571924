//! The PMU host's events in time order, ties in the order they were scheduled.
//!
//! A calendar queue: the next ~1 ms in buckets of ~1 µs (each in order, taken from the
//! front), later events in a heap until the calendar reaches them. With every port busy the
//! host keeps some 600 events pending (an I/O's next step, a NIC flow's next batch), nearly
//! all within a millisecond, and takes ~6 M a simulated second: a binary heap spent a third of
//! the simulation's CPU on them (a 4-ary heap as much), the calendar a fifth. Narrower buckets
//! (128 ns, 8192 of them) ran slower: the calendar no longer stays in the first-level cache.

use crate::time::Ps;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A bucket spans 2^20 ps (1.05 µs).
const SHIFT: u32 = 20;
/// Buckets in the calendar: it spans 1.07 ms.
const SLOTS: usize = 1024;
const WORDS: usize = SLOTS / 64;

/// Pending events, earliest first. Nothing may be scheduled before the last event taken.
#[derive(Debug, Clone)]
pub(super) struct Events<E> {
    /// Bucket `b` (a time's bits above SHIFT) lives at `b % SLOTS`, for `b` from `current` to
    /// `current + SLOTS - 1`: each sorted by key, the earliest first.
    buckets: Vec<Vec<(u128, E)>>,
    /// Events taken from the front of the current bucket (left there until it is empty).
    taken: usize,
    /// Which buckets hold something.
    filled: [u64; WORDS],
    /// The bucket of the last event taken (0 before the first).
    current: u64,
    /// Events past the calendar's span, all later than any in it.
    later: BinaryHeap<Reverse<(u128, E)>>,
    seq: u64,
}

/// Events are ordered by time, then by when they were scheduled.
fn key(t: Ps, seq: u64) -> u128 {
    (t as u128) << 64 | seq as u128
}

fn time(key: u128) -> Ps {
    (key >> 64) as Ps
}

fn bucket(key: u128) -> u64 {
    time(key) >> SHIFT
}

impl<E: Copy + Ord> Events<E> {
    pub(super) fn new() -> Events<E> {
        Events {
            buckets: (0..SLOTS).map(|_| Vec::new()).collect(),
            taken: 0,
            filled: [0; WORDS],
            current: 0,
            later: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Schedule `e` at `t` (not before the last event taken), after every event already
    /// scheduled at `t`.
    pub(super) fn push(&mut self, t: Ps, e: E) {
        let k = key(t, self.seq);
        self.seq += 1;
        debug_assert!(bucket(k) >= self.current, "event at {t} before the current bucket");
        if bucket(k) >= self.current + SLOTS as u64 {
            self.later.push(Reverse((k, e)));
        } else {
            self.put(k, e);
        }
    }

    fn put(&mut self, k: u128, e: E) {
        let i = (bucket(k) % SLOTS as u64) as usize;
        let b = &mut self.buckets[i];
        // After every earlier key: mostly at the end (events are mostly scheduled in time
        // order), and after those of the current bucket already taken.
        let mut at = b.len();
        while at > 0 && b[at - 1].0 > k {
            at -= 1;
        }
        b.insert(at, (k, e));
        self.filled[i / 64] |= 1 << (i % 64);
    }

    /// The earliest event, if it is due by `t`: taken out, with its time.
    pub(super) fn pop_due(&mut self, t: Ps) -> Option<(Ps, E)> {
        let i = match self.next_filled() {
            Some(i) => i,
            None => {
                // The calendar is empty: it moves on to the first later event.
                let &Reverse((k, _)) = self.later.peek()?;
                if time(k) > t {
                    return None;
                }
                self.move_to(bucket(k));
                (self.current % SLOTS as u64) as usize
            }
        };
        // A bucket other than the current one has none taken yet: the current one is empty
        // whenever another is looked at.
        let b = &mut self.buckets[i];
        let (k, e) = b[self.taken];
        if time(k) > t {
            return None;
        }
        self.taken += 1;
        if self.taken == b.len() {
            b.clear();
            self.taken = 0;
            self.filled[i / 64] &= !(1 << (i % 64));
        }
        self.move_to(bucket(k));
        Some((time(k), e))
    }

    /// The first filled bucket from the current one on, in time order.
    fn next_filled(&self) -> Option<usize> {
        let start = (self.current % SLOTS as u64) as usize;
        // Words from the current bucket's, round the ring, and the current word again for the
        // buckets before the current one in it.
        let (w0, bit) = (start / 64, start % 64);
        let first = self.filled[w0] & (!0u64 << bit);
        if first != 0 {
            return Some(w0 * 64 + first.trailing_zeros() as usize);
        }
        for step in 1..=WORDS {
            let w = (w0 + step) % WORDS;
            let mut word = self.filled[w];
            if w == w0 {
                word &= (1u64 << bit).wrapping_sub(1);
            }
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
        }
        None
    }

    /// The calendar starts at bucket `b` (not before the current one): later events that now
    /// fall within its span join it.
    fn move_to(&mut self, b: u64) {
        if b == self.current {
            return;
        }
        self.current = b;
        let end = b + SLOTS as u64;
        while let Some(&Reverse((k, e))) = self.later.peek().filter(|Reverse((k, _))| bucket(*k) < end) {
            self.later.pop();
            self.put(k, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn events_come_out_by_time_then_in_the_order_scheduled() {
        // Against a sort of (time, order), over pushes interleaved with pops: times from the
        // same bucket (ties common) to far past the calendar's span, and idle gaps longer
        // than it.
        let mut rng = Rng::new(5);
        let mut q = Events::new();
        let mut reference: Vec<(Ps, u64)> = Vec::new();
        let (mut now, mut order) = (0, 0);
        let span = (SLOTS as u64) << SHIFT;
        for round in 0..5000 {
            for _ in 0..rng.below(6) {
                let ahead = match rng.below(4) {
                    0 => rng.below(20),
                    1 => rng.below(1 << SHIFT),
                    2 => rng.below(span),
                    _ => rng.below(5 * span),
                };
                q.push(now + ahead, order);
                reference.push((now + ahead, order));
                order += 1;
            }
            reference.sort_unstable();
            let due = now + rng.below(if round % 100 == 0 { 3 * span } else { span / 50 });
            while let Some((t, e)) = q.pop_due(due) {
                assert_eq!((t, e), reference.remove(0), "round {round}");
                now = t;
            }
            assert!(reference.first().is_none_or(|&(t, _)| t > due), "round {round}");
        }
        assert!(!reference.is_empty() && q.pop_due(u64::MAX).is_some());
    }
}
