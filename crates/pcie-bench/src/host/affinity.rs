//! Where the host cache steps run: pcie-bench warms and thrashes from a CPU of socket `cpu` of
//! `--numa` (its control program ran there), which decides whether DDIO sees local or remote
//! lines.

use super::buffer::choose_node;
use std::path::Path;

/// CPUs as the kernel lists them: `0-3,8-11`.
pub fn parse_cpulist(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("cpu list {s:?}: must be like 0-3,8-11");
    let mut cpus = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (usize, usize) = (lo.parse().map_err(|_| bad())?, hi.parse().map_err(|_| bad())?);
        if lo > hi {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    Ok(cpus)
}

/// The CPUs of NUMA node `node` under `root`, or why there are none.
pub fn node_cpus(root: &Path, node: u32) -> Result<Vec<usize>, String> {
    let node = choose_node(root, node)?;
    let path = root.join(format!("sys/devices/system/node/node{node}/cpulist"));
    let text = pcie_output::read::read_text(&path, pcie_output::read::Limit::ATTRIBUTE)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match parse_cpulist(&text)? {
        cpus if cpus.is_empty() => Err(format!("NUMA node {node} has no CPUs")),
        cpus => Ok(cpus),
    }
}

/// Runs `f` on the calling thread pinned to `cpus`, then restores the thread's CPU set. If the
/// kernel refuses the set, `f` runs where the thread is.
pub fn pinned<T>(cpus: &[usize], f: impl FnOnce() -> T) -> T {
    // SAFETY: cpu_set_t is plain data; the calls get its true size and check their results.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let saved = libc::sched_getaffinity(0, size, &mut old) == 0;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            libc::CPU_SET(c, &mut set);
        }
        let moved = saved && libc::sched_setaffinity(0, size, &set) == 0;
        let result = f();
        if moved {
            libc::sched_setaffinity(0, size, &old);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::fake_root;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpulist("0-3,8-9,12\n").unwrap(), vec![0, 1, 2, 3, 8, 9, 12]);
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert!(parse_cpulist("3-1").unwrap_err().contains("must be like 0-3,8-11"));
        assert!(parse_cpulist("a-b").is_err());
    }

    #[test]
    fn node_cpus_from_sysfs() {
        let root = fake_root(
            "nodecpus",
            &[
                ("sys/devices/system/node/node0/cpulist", "0-1\n"),
                ("sys/devices/system/node/node1/cpulist", "\n"),
            ],
        );
        assert_eq!(node_cpus(&root, 0).unwrap(), vec![0, 1]);
        assert_eq!(node_cpus(&root, 1).unwrap_err(), "NUMA node 1 has no CPUs");
        assert!(node_cpus(&root, 2)
            .unwrap_err()
            .starts_with("NUMA node 2 does not exist"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn current_cpus() -> Vec<usize> {
        // SAFETY: as in `pinned`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    #[test]
    fn pinning_is_undone_afterwards() {
        let before = current_cpus();
        let first = before[0];
        let inside = pinned(&[first], current_cpus);
        assert_eq!(inside, vec![first]);
        assert_eq!(current_cpus(), before);
    }
}
