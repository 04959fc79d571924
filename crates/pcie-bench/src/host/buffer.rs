//! The host DMA buffer a real device reads and writes: a shareable memory file (memfd), on
//! huge pages when the machine has free ones (fewer IO-TLB entries, as pcie-bench's 2 MB
//! super-page runs), bound to the NUMA node the test places memory on. Anything missing
//! degrades to the plain case with one warning that names what is missing.

use pcie_sysfs::files::list_dir;
use pcie_sysfs::host::{numa_nodes, NUMA_NODES};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

const KIB: u64 = 1024;
const SMALL_PAGE: u64 = 4 * KIB;
const HUGE_2M: u64 = 2 << 20;
const HUGE_1G: u64 = 1 << 30;

/// Mapped, zero-filled memory shared through a file descriptor.
pub struct DmaBuffer {
    fd: OwnedFd,
    ptr: *mut u8,
    len: usize,
    page_bytes: u64,
    numa_node: Option<u32>,
}

// The mapping is owned by this value alone; moving it between threads is sound.
unsafe impl Send for DmaBuffer {}

/// The huge page size to use for `bytes`, or why there is none: the larger size first when
/// the buffer fills at least one such page, from the kernel's free page counts under `root`.
pub fn choose_page(root: &Path, bytes: u64) -> Result<u64, String> {
    let base = root.join("sys/kernel/mm/hugepages");
    let sizes: &[u64] = if bytes >= HUGE_1G {
        &[HUGE_1G, HUGE_2M]
    } else {
        &[HUGE_2M, HUGE_1G]
    };
    let mut missing = Vec::new();
    for &page in sizes {
        let dir = base.join(format!("hugepages-{}kB", page / KIB));
        let count = |name: &str| {
            pcie_output::read::read_text(&dir.join(name), pcie_output::read::Limit::ATTRIBUTE)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
        };
        let needed = bytes.div_ceil(page);
        match (count("nr_hugepages"), count("free_hugepages")) {
            (None, _) => missing.push(format!("{} has no {} pages", base.display(), human(page))),
            (Some(0), _) => missing.push(format!("{}/nr_hugepages is 0", dir.display())),
            (Some(_), Some(free)) if free >= needed => return Ok(page),
            (Some(_), free) => missing.push(format!(
                "{} free {} pages, {needed} needed",
                free.unwrap_or(0),
                human(page)
            )),
        }
    }
    if list_dir(&base).unwrap_or_default().is_empty() {
        return Err(format!(
            "the kernel offers no huge pages ({} is missing)",
            base.display()
        ));
    }
    Err(missing.join("; "))
}

/// The node to bind memory to, or why not: the node must exist under
/// `sys/devices/system/node`.
pub fn choose_node(root: &Path, node: u32) -> Result<u32, String> {
    let nodes = numa_nodes(root).unwrap_or_default();
    if nodes.is_empty() {
        let base = root.join(NUMA_NODES);
        return Err(format!("no NUMA information ({} is missing)", base.display()));
    }
    if !nodes.contains(&node) {
        let one = if nodes.len() == 1 { "one node" } else { "nodes" };
        let names: Vec<String> = nodes.iter().map(|n| format!("node{n}")).collect();
        return Err(format!(
            "NUMA node {node} does not exist (the machine has {one}: {})",
            names.join(", ")
        ));
    }
    Ok(node)
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= HUGE_1G => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b / KIB),
    }
}

impl DmaBuffer {
    /// `bytes` of zeroed memory, on huge pages when `root` says some are free, bound to
    /// `node` when it exists. Returns the buffer and the warnings for what could not be had.
    pub fn allocate(root: &Path, bytes: u64, node: Option<u32>) -> Result<(DmaBuffer, Vec<String>), String> {
        let mut warnings = Vec::new();
        let mut page = SMALL_PAGE;
        let mut mapped = None;
        match choose_page(root, bytes) {
            Ok(huge) => match map(bytes, huge) {
                Ok(m) => (mapped, page) = (Some(m), huge),
                Err(e) => warnings.push(format!(
                    "huge pages: {} pages looked free but could not be mapped ({e}); the DMA buffer uses 4 KiB pages",
                    human(huge)
                )),
            },
            Err(why) => warnings.push(format!(
                "huge pages: {why}; the {} DMA buffer uses 4 KiB pages (more IO-TLB entries when an IOMMU translates)",
                human(bytes)
            )),
        }
        let (fd, ptr, len) = match mapped {
            Some(m) => m,
            None => {
                map(bytes, SMALL_PAGE).map_err(|e| format!("cannot allocate the {} DMA buffer: {e}", human(bytes)))?
            }
        };
        let mut buffer = DmaBuffer {
            fd,
            ptr,
            len,
            page_bytes: page,
            numa_node: None,
        };
        if let Some(node) = node {
            match choose_node(root, node).and_then(|n| buffer.bind(n)) {
                Ok(()) => buffer.numa_node = Some(node),
                Err(why) => warnings.push(format!("NUMA: {why}; the DMA buffer is not bound to a node")),
            }
        }
        // Touch every page now: memory comes from the bound node, and tests do not pay faults.
        buffer.as_mut_slice().fill(0);
        Ok((buffer, warnings))
    }

    /// The device program's side: maps the buffer another process offered at `path`
    /// (`bytes` long, on `page_bytes` pages).
    pub fn open(path: &Path, bytes: u64, page_bytes: u64) -> Result<DmaBuffer, std::io::Error> {
        let file = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
        let fd = OwnedFd::from(file);
        let len = bytes as usize;
        let ptr = map_shared(&fd, len)?;
        Ok(DmaBuffer {
            fd,
            ptr,
            len,
            page_bytes,
            numa_node: None,
        })
    }

    /// Binds the (not yet touched) mapping to `node` with mbind(MPOL_BIND).
    fn bind(&self, node: u32) -> Result<(), String> {
        const MPOL_BIND: libc::c_long = 2;
        let bits = libc::c_ulong::BITS;
        if node >= 1024 {
            return Err(format!("NUMA node {node} is beyond the supported 1024"));
        }
        let mut mask = vec![0 as libc::c_ulong; 1024 / bits as usize];
        mask[(node / bits) as usize] |= 1 << (node % bits);
        // SAFETY: the range is our own mapping; the mask holds 1024 bits as maxnode says.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.ptr,
                self.len,
                MPOL_BIND,
                mask.as_ptr(),
                1024 as libc::c_ulong,
                0,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(format!(
                "mbind to node {node} failed: {}",
                std::io::Error::last_os_error()
            ))
        }
    }

    /// Where another process opens the same memory: `/proc/PID/fd/N`.
    pub fn path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.fd.as_raw_fd())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    pub fn numa_node(&self) -> Option<u32> {
        self.numa_node
    }

    /// Where the kernel placed the buffer's pages: the node of `samples` pages spread evenly
    /// over it (get_mempolicy with MPOL_F_NODE | MPOL_F_ADDR, which faults a page in if it is
    /// not yet), so a binding that did not hold, or none asked, shows as it is.
    pub fn placement(&self, samples: usize) -> PagePlacement {
        let pages = (self.len as u64 / self.page_bytes).max(1) as usize;
        let step = pages.div_ceil(samples.clamp(1, pages));
        let mut placement = PagePlacement::default();
        for page in (0..pages).step_by(step) {
            let addr = self.ptr.wrapping_add(page * self.page_bytes as usize);
            match page_node(addr) {
                Ok(node) => *placement.nodes.entry(node).or_insert(0) += 1,
                Err(e) => {
                    placement.error = Some(format!("get_mempolicy: {e}"));
                    break;
                }
            }
            placement.pages_sampled += 1;
        }
        placement
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is a live read-write mapping owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The NUMA nodes a sample of a buffer's pages are on, as `run.json` records them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PagePlacement {
    pub pages_sampled: usize,
    /// Node → pages of the sample on it.
    pub nodes: std::collections::BTreeMap<u32, usize>,
    /// Why the sample stopped short (a kernel without NUMA support answers ENOSYS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PagePlacement {
    /// The node holding most of the sample.
    pub fn main_node(&self) -> Option<u32> {
        self.nodes.iter().max_by_key(|(_, n)| **n).map(|(node, _)| *node)
    }
}

/// The node of the page at `addr` of our own mapping.
fn page_node(addr: *mut u8) -> Result<u32, std::io::Error> {
    const MPOL_F_NODE: libc::c_ulong = 1;
    const MPOL_F_ADDR: libc::c_ulong = 2;
    let mut node: libc::c_int = -1;
    // SAFETY: `node` is a writable int; no node mask is asked for (NULL, maxnode 0); `addr`
    // lies in a live mapping of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            addr,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    if r == 0 && node >= 0 {
        Ok(node as u32)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A memfd of `bytes` (rounded up to `page`) mapped shared; huge pages when `page` is not 4 KiB.
fn map(bytes: u64, page: u64) -> Result<(OwnedFd, *mut u8, usize), std::io::Error> {
    let len = bytes.next_multiple_of(page) as usize;
    let flags = libc::MFD_CLOEXEC
        | match page {
            HUGE_2M => libc::MFD_HUGETLB | libc::MFD_HUGE_2MB,
            HUGE_1G => libc::MFD_HUGETLB | libc::MFD_HUGE_1GB,
            _ => 0,
        };
    // SAFETY: a plain syscall; the descriptor is checked and then owned.
    let fd = unsafe {
        let raw = libc::memfd_create(c"pcieperf-dma".as_ptr(), flags);
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        OwnedFd::from_raw_fd(raw)
    };
    // SAFETY: resizing a file we own.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let ptr = map_shared(&fd, len)?;
    Ok((fd, ptr, len))
}

/// Maps `len` bytes of `fd` shared, read-write.
fn map_shared(fd: &OwnedFd, len: usize) -> Result<*mut u8, std::io::Error> {
    // SAFETY: a fresh mapping of a descriptor we hold; the result is checked.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ptr.cast())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake_root;

    #[test]
    fn huge_page_choice_names_what_is_missing() {
        let h2 = "sys/kernel/mm/hugepages/hugepages-2048kB";
        let h1 = "sys/kernel/mm/hugepages/hugepages-1048576kB";
        let root = fake_root(
            "pages",
            &[
                (&format!("{h2}/nr_hugepages"), "64\n"),
                (&format!("{h2}/free_hugepages"), "40\n"),
                (&format!("{h1}/nr_hugepages"), "0\n"),
                (&format!("{h1}/free_hugepages"), "0\n"),
            ],
        );
        assert_eq!(choose_page(&root, 64 << 20), Ok(HUGE_2M));
        let e = choose_page(&root, 128 << 20).unwrap_err();
        assert!(
            e.contains("40 free 2 MiB pages, 64 needed") && e.contains("hugepages-1048576kB/nr_hugepages is 0"),
            "{e}"
        );
        std::fs::write(root.join(h1).join("nr_hugepages"), "2").unwrap();
        std::fs::write(root.join(h1).join("free_hugepages"), "2").unwrap();
        assert_eq!(
            choose_page(&root, 128 << 20),
            Ok(HUGE_1G),
            "falls back to the other size"
        );
        assert_eq!(
            choose_page(&root, 2 << 30),
            Ok(HUGE_1G),
            "big buffers prefer 1 GiB pages"
        );
        let e = choose_page(&root.join("none"), 64 << 20).unwrap_err();
        assert!(e.starts_with("the kernel offers no huge pages"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn numa_node_choice() {
        let root = fake_root(
            "nodes",
            &[
                ("sys/devices/system/node/node0/cpulist", "0-1"),
                ("sys/devices/system/node/online", "0"),
            ],
        );
        assert_eq!(choose_node(&root, 0), Ok(0));
        assert_eq!(
            choose_node(&root, 1).unwrap_err(),
            "NUMA node 1 does not exist (the machine has one node: node0)"
        );
        assert!(choose_node(&root.join("none"), 0)
            .unwrap_err()
            .starts_with("no NUMA information"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// On this machine: whatever it lacks (huge pages, a second node) is a warning, not a failure,
    /// and the buffer is shareable through its path.
    #[test]
    fn allocation_degrades_with_warnings_and_shares_memory() {
        let (mut b, warnings) = DmaBuffer::allocate(Path::new("/"), 4 << 20, Some(7)).unwrap();
        assert!(b.len() >= 4 << 20);
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("NUMA: NUMA node 7 does not exist")),
            "{warnings:?}"
        );
        assert_eq!(b.numa_node(), None);
        if b.page_bytes() == SMALL_PAGE {
            assert!(warnings.iter().any(|w| w.starts_with("huge pages: ")), "{warnings:?}");
        }
        b.as_mut_slice()[4096] = 0xa5;
        let other = std::fs::read(b.path()).unwrap();
        assert_eq!((other.len(), other[4096]), (b.len(), 0xa5));
        let mut peer = DmaBuffer::open(Path::new(&b.path()), b.len() as u64, b.page_bytes()).unwrap();
        assert_eq!(peer.as_mut_slice()[4096], 0xa5);
        peer.as_mut_slice()[8191] = 7;
        assert_eq!(b.as_mut_slice()[8191], 7, "both sides see one memory");
    }

    #[test]
    fn placement_samples_the_pages_the_kernel_placed() {
        let (buffer, _) = DmaBuffer::allocate(Path::new("/nonexistent"), 64 * KIB, None).unwrap();
        let p = buffer.placement(4);
        // This machine's kernel answers for every page, or says why it cannot (no NUMA).
        match &p.error {
            None => {
                assert_eq!(p.pages_sampled, 4, "{p:?}");
                assert_eq!(p.nodes.values().sum::<usize>(), 4);
                let online = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
                assert!(online.is_empty() || p.main_node().is_some());
            }
            Some(e) => assert!(e.starts_with("get_mempolicy: "), "{e}"),
        }
        assert_eq!(
            DmaBuffer::allocate(Path::new("/nonexistent"), 4 * KIB, None)
                .unwrap()
                .0
                .placement(16)
                .pages_sampled
                .max(1),
            1
        );
    }
}
