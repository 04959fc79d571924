//! IOMMU translation: an IO-TLB of a fixed number of page entries, replaced oldest first, in
//! front of a small pool of page walkers.

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct Iotlb {
    page_shift: u32,
    resident: Vec<bool>,
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
            order: VecDeque::with_capacity(entries),
            entries,
        }
    }

    pub fn page_of(&self, addr: u64) -> u32 {
        (addr >> self.page_shift) as u32
    }

    /// Look a page up; on a miss the entry is filled (after the walk). True on a hit.
    pub fn lookup(&mut self, page: u32) -> bool {
        if self.resident[page as usize] {
            return true;
        }
        if self.order.len() == self.entries {
            if let Some(old) = self.order.pop_front() {
                self.resident[old as usize] = false;
            }
        }
        self.order.push_back(page);
        self.resident[page as usize] = true;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reach_is_entries_times_page_size() {
        let mut t = Iotlb::new(64 << 20, 4096, 64);
        for p in 0..64 {
            assert!(!t.lookup(p));
        }
        assert!((0..64).all(|p| t.lookup(p)), "64 pages fit");
        assert!(!t.lookup(64));
        assert!(!t.lookup(0), "the oldest entry was replaced");
        assert_eq!(t.page_of(8191), 1);
    }
}
