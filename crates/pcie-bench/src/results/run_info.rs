//! `run.json`: what ran, on what, when — so a result directory explains itself (pcie-bench
//! kept the same facts in its `sys-*.txt` files).

use crate::backend::BackendInfo;
use crate::params::{Iommu, Numa};
use pcie_model::LinkConfig;
use pcie_sysfs::host::CpuInfo;
use pcie_sysfs::{numa_layout, DeviceRecord, KernelIommu, NumaNode};
use serde::{Deserialize, Serialize, Serializer};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The contents of `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Program name, e.g. `pcieperf`.
    pub tool: String,
    pub version: String,
    /// The command line as typed (program first).
    pub command_line: Vec<String>,
    /// Suite name (`quick`, `paper`, a file's `name`, or `single`).
    pub suite: String,
    pub seed: u64,
    /// Backend name, profile or device description, transfer limit.
    pub backend: BackendInfo,
    /// The link the backend reported (generation, width, MPS, MRRS, ...); `null` when it
    /// reports none. Read back through `LinkConfig`'s checks.
    #[serde(serialize_with = "link_sorted")]
    pub link: Option<LinkConfig>,
    /// Run-wide placement of buffer and CPU, and IOMMU mode.
    pub numa: Numa,
    pub iommu: Iommu,
    pub host: HostInfo,
    /// RFC 3339 UTC.
    pub start_time: String,
    /// Set when the run finished; absent in an interrupted run.
    pub end_time: Option<String>,
    /// The suite's tests the backend did not run, one line per reason (count, kinds, why);
    /// absent when it ran them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// The machine the run was started on. Fields added later default when an older `run.json`
/// lacks them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostInfo {
    pub hostname: String,
    /// Kernel release, e.g. `6.8.0-45-generic`.
    pub kernel: String,
    pub cpu_model: String,
    /// Logical CPUs listed in /proc/cpuinfo (0 when unknown).
    pub cpus: usize,
    /// /proc/cmdline as read.
    pub kernel_cmdline: String,
    /// IOMMU settings from the command line, and the IOMMU units the kernel registered.
    pub iommu: KernelIommu,
    /// NUMA nodes with their CPUs and memory (empty without NUMA information).
    pub numa_nodes: Vec<NumaNode>,
    /// The device under test, for backends driving a real one.
    pub device: Option<DeviceRecord>,
}

/// The link with its keys in alphabetical order, as `run.json` has always written it.
fn link_sorted<S: Serializer>(link: &Option<LinkConfig>, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(link)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

const UNKNOWN: &str = "unknown";

impl HostInfo {
    /// Reads this machine's /proc and /etc; missing files give "unknown".
    pub fn gather() -> HostInfo {
        HostInfo::from_root(Path::new("/"))
    }

    /// Reads `proc/cpuinfo`, `proc/version`, `proc/cmdline`, `etc/hostname` and the NUMA and
    /// IOMMU entries of `sys` under `root` (a directory tree in tests). The device is the
    /// caller's to add.
    pub fn from_root(root: &Path) -> HostInfo {
        let read = |p: &str| {
            pcie_output::read::read_text(&root.join(p), pcie_output::read::Limit::PROC_FILE).unwrap_or_default()
        };
        let cpuinfo = CpuInfo::read(root).ok().flatten().unwrap_or_default();
        let hostname = [read("etc/hostname"), read("proc/sys/kernel/hostname")]
            .into_iter()
            .map(|s| s.trim().to_string())
            .find(|s| !s.is_empty());
        let version = read("proc/version");
        let kernel = match version.strip_prefix("Linux version ") {
            Some(rest) => rest.split_whitespace().next().map(str::to_string),
            None => Some(version.trim().to_string()).filter(|s| !s.is_empty()),
        };
        HostInfo {
            hostname: hostname.unwrap_or_else(|| UNKNOWN.into()),
            kernel: kernel.unwrap_or_else(|| UNKNOWN.into()),
            cpu_model: cpuinfo.name.unwrap_or_else(|| UNKNOWN.into()),
            cpus: cpuinfo.processors,
            kernel_cmdline: read("proc/cmdline").trim().to_string(),
            iommu: KernelIommu::read(root),
            numa_nodes: numa_layout(root),
            device: None,
        }
    }
}

/// `2024-05-01T12:34:56Z`: RFC 3339 in UTC, whole seconds.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64) - i64::from(e.duration().subsec_nanos() > 0),
    };
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 (leap day of a century leap year) 12:34:56
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_827_696)),
            "2000-02-29T12:34:56Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_704_067_199)),
            "2023-12-31T23:59:59Z"
        );
        assert_eq!(rfc3339(UNIX_EPOCH - Duration::from_secs(1)), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn host_info_reads_cmdline_iommu_and_numa() {
        let root = crate::host::fake_root(
            "hostinfo",
            &[
                ("proc/cmdline", "root=/dev/nvme0n1p2 intel_iommu=on iommu=pt\n"),
                ("sys/class/iommu/dmar0/uevent", ""),
                ("sys/devices/system/node/node0/cpulist", "0-3\n"),
                ("sys/devices/system/node/node1/cpulist", "4-7\n"),
            ],
        );
        let h = HostInfo::from_root(&root);
        assert_eq!(h.kernel_cmdline, "root=/dev/nvme0n1p2 intel_iommu=on iommu=pt");
        assert_eq!((h.iommu.enabled, h.iommu.passthrough), (Some(true), Some(true)));
        assert_eq!(h.iommu.units, vec!["dmar0".to_string()]);
        assert_eq!(
            h.numa_nodes.iter().map(|n| n.cpus.as_str()).collect::<Vec<_>>(),
            ["0-3", "4-7"]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn older_run_json_host_info_still_loads() {
        let old = r#"{"hostname":"bench1","kernel":"3.19.0-43-generic","cpu_model":"Xeon","cpus":8}"#;
        let h: HostInfo = serde_json::from_str(old).unwrap();
        assert_eq!((h.cpus, h.kernel_cmdline.as_str(), h.device), (8, "", None));
    }

    #[test]
    fn host_info_from_tree_and_fallbacks() {
        let root = std::env::temp_dir().join(format!("pcie-bench-host-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(
            root.join("proc/cpuinfo"),
            "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU E5-2637 v3 @ 3.50GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU E5-2637 v3 @ 3.50GHz\n",
        )
        .unwrap();
        std::fs::write(
            root.join("proc/version"),
            "Linux version 3.19.0-43-generic (buildd@lgw01) #49\n",
        )
        .unwrap();
        std::fs::write(root.join("etc/hostname"), "bench1\n").unwrap();
        let h = HostInfo::from_root(&root);
        assert_eq!(
            h,
            HostInfo {
                hostname: "bench1".into(),
                kernel: "3.19.0-43-generic".into(),
                cpu_model: "Intel(R) Xeon(R) CPU E5-2637 v3 @ 3.50GHz".into(),
                cpus: 2,
                ..HostInfo::default()
            }
        );
        std::fs::remove_dir_all(&root).unwrap();
        let none = HostInfo::from_root(&root);
        assert!(none.kernel_cmdline.is_empty() && none.numa_nodes.is_empty() && none.device.is_none());
        assert_eq!(
            (none.hostname.as_str(), none.kernel.as_str(), none.cpus),
            ("unknown", "unknown", 0)
        );
    }

    #[test]
    fn link_round_trips_through_run_json() {
        use pcie_model::{Generation, LinkParams};
        let p = LinkParams {
            gen: Generation::Gen4,
            lanes: 16,
            mps: 512,
            ..LinkParams::default()
        };
        let cfg = LinkConfig::new(&p).unwrap();
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(serde_json::from_value::<LinkConfig>(json).ok(), Some(cfg));
        assert!(serde_json::from_value::<LinkConfig>(serde_json::json!({"gen": "Gen3"})).is_err());
    }
}
