//! An allocator that turns an unbounded allocation into a diagnosis instead of a machine brought
//! to its knees: above the limit it prints the input being tried, then lets the allocation fail
//! (which aborts, as an out-of-memory would, but at once and with the culprit on stderr).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Largest single allocation one fuzz input may ask for.
pub const LIMIT: usize = 1 << 30;

static INPUT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static INPUT_LEN: AtomicUsize = AtomicUsize::new(0);

/// The system allocator with a per-allocation limit; install with `#[global_allocator]`.
pub struct BoundedAlloc;

impl BoundedAlloc {
    /// Remember the input under test (the runner calls this; the slice must outlive the run).
    pub(crate) fn set_input(input: &[u8]) {
        INPUT_LEN.store(input.len(), Ordering::SeqCst);
        INPUT.store(input.as_ptr().cast_mut(), Ordering::SeqCst);
    }

    fn report(size: usize) {
        let head = format!("pcie-fuzz: an input asked for {size} bytes in one allocation (limit {LIMIT}); input:\n");
        let ptr = INPUT.load(Ordering::SeqCst);
        let len = INPUT_LEN.load(Ordering::SeqCst);
        // SAFETY: writes from valid buffers to stderr; the input pointer is set from a live slice.
        unsafe {
            libc::write(2, head.as_ptr().cast(), head.len());
            if !ptr.is_null() {
                libc::write(2, ptr.cast(), len);
            }
            libc::write(2, b"\n".as_ptr().cast(), 1);
        }
    }
}

// SAFETY: forwards to the system allocator, refusing (null) only above the limit.
unsafe impl GlobalAlloc for BoundedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            Self::report(layout.size());
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            Self::report(layout.size());
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LIMIT {
            Self::report(new_size);
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}
