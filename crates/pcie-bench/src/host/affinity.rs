//! Where the host cache steps run: pcie-bench warms and thrashes from a CPU of socket `cpu` of
//! `--numa` (its control program ran there), which decides whether DDIO sees local or remote
//! lines.

use super::buffer::choose_node;
use pcie_sysfs::files::read_attr;
use pcie_sysfs::host::parse_cpu_list;
use std::path::Path;

/// The CPUs of NUMA node `node` under `root`, or why there are none.
pub fn node_cpus(root: &Path, node: u32) -> Result<Vec<usize>, String> {
    let node = choose_node(root, node)?;
    let path = root.join(format!("sys/devices/system/node/node{node}/cpulist"));
    let text = read_attr(&path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{}: no such file", path.display()))?;
    let cpus = parse_cpu_list(&text).ok_or_else(|| format!("cpu list {text:?}: must be like 0-3,8-11"))?;
    match cpus.into_iter().map(|c| c as usize).collect::<Vec<_>>() {
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
    fn node_cpus_from_sysfs() {
        let root = fake_root(
            "nodecpus",
            &[
                ("sys/devices/system/node/node0/cpulist", "0-1\n"),
                ("sys/devices/system/node/node1/cpulist", "\n"),
                ("sys/devices/system/node/node3/cpulist", "3-1\n"),
            ],
        );
        assert_eq!(node_cpus(&root, 0).unwrap(), vec![0, 1]);
        assert_eq!(node_cpus(&root, 1).unwrap_err(), "NUMA node 1 has no CPUs");
        assert!(node_cpus(&root, 2)
            .unwrap_err()
            .starts_with("NUMA node 2 does not exist"));
        assert_eq!(
            node_cpus(&root, 3).unwrap_err(),
            "cpu list \"3-1\": must be like 0-3,8-11"
        );
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
