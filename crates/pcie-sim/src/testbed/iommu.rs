//! IOMMU translation: an IO-TLB of a fixed number of page entries, replaced oldest first, in
//! front of a small pool of page walkers.

use std::collections::VecDeque;

#[derive(Debug, Clone, PartialEq)]
pub struct Iotlb {
    page_shift: u32,
    resident: Vec<bool>,
    /// When each resident entry's walk completes: requests that hit an entry still being
    /// walked wait for it (the walk is shared, not repeated, and cannot be used before it ends).
    ready: Vec<u64>,
    order: VecDeque<u32>,
    entries: usize,
}

impl Iotlb {
    /// An empty IO-TLB for a buffer of `buffer_bytes` mapped with pages of `page_bytes`.
    pub fn new(buffer_bytes: u64, page_bytes: u64, entries: usize) -> Iotlb {
        let page_shift = page_bytes.trailing_zeros();
        Iotlb {
            page_shift,
            resident: vec![false; (buffer_bytes >> page_shift).max(1) as usize],
            ready: vec![0; (buffer_bytes >> page_shift).max(1) as usize],
            order: VecDeque::with_capacity(entries),
            entries,
        }
    }

    /// Pages it holds at most.
    pub fn entries(&self) -> usize {
        self.entries
    }

    pub fn page_of(&self, addr: u64) -> u32 {
        (addr >> self.page_shift) as u32
    }

    /// Look a page up at `now`: `Some(time the entry is usable)` on a hit; on a miss the
    /// entry is allocated and the caller records its walk's end with [`Iotlb::walked`].
    pub fn lookup(&mut self, page: u32) -> Option<u64> {
        if self.resident[page as usize] {
            return Some(self.ready[page as usize]);
        }
        if self.order.len() == self.entries {
            if let Some(old) = self.order.pop_front() {
                self.resident[old as usize] = false;
            }
        }
        self.order.push_back(page);
        self.resident[page as usize] = true;
        self.ready[page as usize] = 0;
        None
    }

    /// The walk for `page` ends at `at`.
    pub fn walked(&mut self, page: u32, at: u64) {
        self.ready[page as usize] = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reach_is_entries_times_page_size() {
        let mut t = Iotlb::new(64 << 20, 4096, 64);
        for p in 0..64 {
            assert_eq!(t.lookup(p), None);
            t.walked(p, 100 + p as u64);
        }
        assert!((0..64).all(|p| t.lookup(p) == Some(100 + p as u64)), "64 pages fit");
        assert_eq!(t.lookup(64), None);
        assert_eq!(t.lookup(0), None, "the oldest entry was replaced");
        assert_eq!(t.page_of(8191), 1);
    }
}
