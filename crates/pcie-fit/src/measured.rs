//! The measurements a fit reads: result directories (pcie-bench's or ours), what each was run
//! with (its IOMMU mode), and the checks that they belong together and to the device profile.

use super::keys::{self, FitKey};
use super::FitError;
use pcie_bench::host::cmdline_mode;
use pcie_bench::params::{Iommu, Numa, TestParams};
use pcie_bench::results::{CdfSection, ResultData, RunData};
use pcie_model::Generation;
use pcie_output::read::Limit;
use pcie_sim::DeviceProfile;
use pcie_sysfs::lspci::{self, Capabilities, LspciFunction};
use pcie_sysfs::KernelIommu;
use pcie_sysfs::PortType;
use std::path::Path;

/// One measured result directory.
#[derive(Debug, Clone)]
pub struct MeasuredRun {
    /// How reports name it: the directory's last component.
    pub label: String,
    pub iommu: Iommu,
    /// The CPU the run names (`run.json`, or pcie-bench's `sys-cpuinfo.txt`), if it says.
    pub cpu: Option<String>,
    pub data: RunData,
    /// pcie-bench's `sys-lspci.txt`, where the directory has one that reads.
    pub lspci: Vec<LspciFunction>,
}

/// The path's Max Payload Size a run was measured with (Device Control), and where it was
/// read: the link in `run.json`, or the device's function in pcie-bench's lspci dump.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredMps {
    pub bytes: u32,
    pub source: String,
}

/// One output group (a result table) of one run, as tests to simulate.
#[derive(Debug, Clone)]
pub struct Group {
    /// Index into the runs.
    pub run: usize,
    pub base: String,
    /// One test per measured row, in the file's order.
    pub tests: Vec<TestParams>,
    /// The table itself.
    pub measured: ResultData,
    /// `<base>_cdf`'s sections, one per latency row, where the run has them.
    pub cdf: Option<Vec<CdfSection>>,
}

impl MeasuredRun {
    /// Loads `dir`, refusing one that holds no latency or bandwidth table.
    pub fn load(dir: &Path) -> Result<MeasuredRun, FitError> {
        let input = |m: String| FitError::Input(format!("{}: {m}", dir.display()));
        if !dir.is_dir() {
            return Err(input(
                "not a directory (give a pcie-bench or pcieperf result directory)".into(),
            ));
        }
        let data = RunData::load(dir).map_err(|e| FitError::Input(e.to_string()))?;
        if !data.files.iter().any(|f| !matches!(f.data, ResultData::Cdf(_))) {
            return Err(input(
                "no latency or bandwidth result table (CSV with Med(ns) or Trans/s columns): not a pcie-bench or pcieperf result directory".into(),
            ));
        }
        // Bounded: an endless file is refused naming it and the limit; a missing one is absent.
        let read = |name: &str, limit: Limit| match pcie_output::read::read(&dir.join(name), limit) {
            Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FitError::Input(format!("{}: {e}", dir.join(name).display()))),
        };
        let (iommu, cpu) = match &data.info {
            Some(info) => (info.iommu, Some(info.host.cpu_model.clone())),
            // pcie-bench kept the kernel command line and /proc/cpuinfo beside its tables.
            None => (
                read("sys-kernel-cmdline.txt", Limit::PROC_FILE)?
                    .map_or(Iommu::Off, |c| cmdline_mode(&KernelIommu::parse(&c, vec![]))),
                read("sys-cpuinfo.txt", Limit::PROC_FILE)?.and_then(|c| {
                    c.lines()
                        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "model name"))
                        .map(|(_, v)| v.trim().to_string())
                }),
            ),
        };
        let label = dir
            .file_name()
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
        Ok(MeasuredRun {
            label,
            iommu,
            cpu: cpu.filter(|c| c != "unknown" && !c.is_empty()),
            data,
            lspci: read("sys-lspci.txt", Limit::LSPCI_DUMP)?
                .and_then(|t| lspci::parse(&t).ok())
                .unwrap_or_default(),
        })
    }

    /// The MPS the run's writes and completions were cut to, where the run says: `run.json`'s
    /// link, or in pcie-bench's lspci dump the Device Control of the endpoints at the device
    /// profile's link (the dump names no ids and holds every device of the host; the paper's
    /// hosts had the NFP and the NetFPGA side by side, both Gen3 x8): used where they agree.
    pub fn mps(&self, device: &DeviceProfile) -> Option<MeasuredMps> {
        if let Some(link) = self.data.info.as_ref().and_then(|i| i.link.as_ref()) {
            return Some(MeasuredMps {
                bytes: link.mps,
                source: format!("{}/run.json", self.label),
            });
        }
        let at_link: Vec<(&LspciFunction, u32)> = self
            .lspci
            .iter()
            .filter_map(|f| match &f.capabilities {
                Capabilities::Decoded { express: Some(e), .. }
                    if matches!(e.port_type, PortType::Endpoint | PortType::LegacyEndpoint) =>
                {
                    let l = e.link.as_ref()?;
                    (Generation::from_gt_per_s(l.gts).map(|g| u32::from(g.number())) == Some(device.link.gen)
                        && l.width == device.link.lanes)
                        .then_some((f, e.mps))
                }
                _ => None,
            })
            .collect();
        let mps = at_link.first()?.1;
        at_link.iter().all(|(_, m)| *m == mps).then(|| {
            let bdfs: Vec<String> = at_link.iter().map(|(f, _)| f.bdf.to_string()).collect();
            MeasuredMps {
                bytes: mps,
                source: format!(
                    "{}/sys-lspci.txt (DevCtl of {}, the endpoints at Gen{} x{})",
                    self.label,
                    bdfs.join(", "),
                    device.link.gen,
                    device.link.lanes
                ),
            }
        })
    }

    /// The run's groups as tests of `count` samples or DMAs at most (the measured count where
    /// it is smaller).
    pub fn groups(&self, run: usize, count: u64) -> Vec<Group> {
        // Where `run.json` placed buffer and warming CPU: the simulated sockets are 0 and 1, so
        // a run local to its device's node 1 is simulated local on 0 (a single-socket base has
        // no node 1); pcie-bench recorded none, and ran local.
        let numa = match self.data.info.as_ref().map(|i| i.numa) {
            Some(n) if n.dev != n.mem || n.dev != n.cpu => Numa {
                dev: 0,
                mem: u8::from(n.mem != n.dev),
                cpu: u8::from(n.cpu != n.dev),
            },
            _ => Numa::default(),
        };
        let mut out = Vec::new();
        for f in &self.data.files {
            let keys: Vec<(pcie_bench::results::RowKey, u64)> = match &f.data {
                ResultData::Latency(rows) => rows.iter().map(|r| (r.key, r.samples)).collect(),
                ResultData::Bandwidth(rows) => rows.iter().map(|r| (r.key, r.trans)).collect(),
                ResultData::Cdf(_) => continue,
            };
            let tests = keys
                .iter()
                .map(|(k, n)| TestParams {
                    kind: k.test,
                    size: k.size,
                    window: k.window,
                    host_offset: k.host_offset,
                    device_offset: k.device_offset,
                    pattern: k.pattern,
                    cache: k.cache,
                    count: (*n).clamp(1, count.max(1)),
                    numa,
                    iommu: self.iommu,
                })
                .collect();
            let cdf = match self.data.get(&format!("{}_cdf", f.base)) {
                Some(ResultData::Cdf(s)) if s.len() == keys.len() => Some(s.clone()),
                _ => None,
            };
            out.push(Group {
                run,
                base: f.base.clone(),
                tests,
                measured: f.data.clone(),
                cdf,
            });
        }
        out
    }
}

impl Group {
    /// The group with only the tests `keep` takes, and their rows and CDF sections; `None`
    /// where it takes none.
    pub fn select(&self, keep: impl Fn(&TestParams) -> bool) -> Option<Group> {
        let kept: Vec<usize> = (0..self.tests.len()).filter(|&i| keep(&self.tests[i])).collect();
        let measured = match &self.measured {
            ResultData::Latency(rows) => ResultData::Latency(pick(rows, &kept)),
            ResultData::Bandwidth(rows) => ResultData::Bandwidth(pick(rows, &kept)),
            ResultData::Cdf(_) => return None,
        };
        (!kept.is_empty()).then(|| Group {
            run: self.run,
            base: self.base.clone(),
            tests: pick(&self.tests, &kept),
            measured,
            cdf: self.cdf.as_ref().map(|c| pick(c, &kept)),
        })
    }

    /// The group with only its tests that identify `key` ([`keys::identifies`]), measured
    /// with `iommu`; `None` where none does.
    pub fn identifying(&self, key: &FitKey, iommu: Iommu) -> Option<Group> {
        self.select(|t| keys::identifies(key, &self.base, iommu, t))
    }
}

fn pick<T: Clone>(rows: &[T], kept: &[usize]) -> Vec<T> {
    kept.iter().map(|&i| rows[i].clone()).collect()
}

/// Refuses runs that cannot be fitted together: another CPU, or the same table measured twice
/// under one IOMMU mode.
pub fn check_consistent(runs: &[MeasuredRun]) -> Result<(), FitError> {
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            if let (Some(x), Some(y)) = (&a.cpu, &b.cpu) {
                if x != y {
                    return Err(FitError::Input(format!(
                        "inconsistent runs: {} was measured on \"{x}\", {} on \"{y}\": one host per fit",
                        a.label, b.label
                    )));
                }
            }
            if a.iommu == b.iommu {
                if let Some(f) = a.data.files.iter().find(|f| b.data.get(&f.base).is_some()) {
                    return Err(FitError::Input(format!(
                        "inconsistent runs: {} and {} both hold {} with the IOMMU {}: give one run per IOMMU mode",
                        a.label,
                        b.label,
                        f.base,
                        a.iommu.name()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The MPS the runs were measured with, where any says; runs that say different ones were
/// not measured on one configuration.
pub fn path_mps(runs: &[MeasuredRun], device: &DeviceProfile) -> Result<Option<MeasuredMps>, FitError> {
    let said: Vec<MeasuredMps> = runs.iter().filter_map(|r| r.mps(device)).collect();
    match said.iter().find(|m| m.bytes != said[0].bytes) {
        Some(other) => Err(FitError::Input(format!(
            "inconsistent runs: MPS {} B in {}, {} B in {}: one link configuration per fit",
            said[0].bytes, said[0].source, other.bytes, other.source
        ))),
        None => Ok(said.first().map(|m| MeasuredMps {
            bytes: m.bytes,
            source: said.iter().map(|m| m.source.as_str()).collect::<Vec<_>>().join(", "),
        })),
    }
}

/// Refuses rows no simulation can be fitted to, naming `file:line:column`: a latency figure of
/// 0 ns or less (every relative error against it is not a number), a bandwidth or rate of 0,
/// and a test outside the suite's ranges for `device` (size, window, offsets, count).
pub fn check_rows(run: &MeasuredRun, device: &DeviceProfile) -> Result<(), FitError> {
    let groups = run.groups(0, 1);
    for f in &run.data.files {
        let at = |i: usize, column: &str, m: String| {
            let file = run.data.dir.join(format!("{}.csv", f.base));
            let line = f.lines.get(i).map_or(String::new(), |l| format!(":{l}"));
            FitError::Input(format!("{}{line}:{column}: {m}", file.display()))
        };
        let positive = |i: usize, figures: &[(&str, f64)]| match figures.iter().find(|(_, v)| v.is_nan() || *v <= 0.0) {
            Some((column, v)) => Err(at(
                i,
                column,
                format!("{v}: a measurement of 0 or less cannot be fitted"),
            )),
            None => Ok(()),
        };
        match &f.data {
            ResultData::Latency(rows) => rows.iter().enumerate().try_for_each(|(i, r)| {
                let p99 = r.p99_ns.unwrap_or(r.p95_ns);
                positive(
                    i,
                    &[
                        ("Min(ns)", r.min_ns),
                        ("Med(ns)", r.med_ns),
                        ("Avg(ns)", r.avg_ns),
                        ("TAvg(ns)", r.tavg_ns),
                        ("95%(ns)", r.p95_ns),
                        ("99%(ns)", p99),
                        ("99.9%(ns)", r.p999_ns),
                        ("Max(ns)", r.max_ns),
                    ],
                )
            })?,
            ResultData::Bandwidth(rows) => rows.iter().enumerate().try_for_each(|(i, r)| {
                positive(
                    i,
                    &[
                        ("Time", r.time_ns),
                        ("BW (Gb/s)", r.bw_gbps),
                        ("Trans/s", r.trans_per_sec),
                    ],
                )
            })?,
            ResultData::Cdf(_) => continue,
        }
        let Some(g) = groups.iter().find(|g| g.base == f.base) else {
            continue;
        };
        for (i, t) in g.tests.iter().enumerate() {
            t.check(device.dma.max_transfer).map_err(|e| {
                let column = match e.param {
                    "size" => "SZ",
                    "window" => "WinSZ",
                    "host-offset" => "HO",
                    "device-offset" => "DO",
                    _ => "#samples",
                };
                at(i, column, format!("{}: {}", e.value, e.reason))
            })?;
        }
    }
    Ok(())
}

/// Refuses a device profile the measurements cannot come from: latencies that are not whole
/// ticks of its timestamp counter, transfers beyond its DMA limit, or another link than the
/// one `run.json` records.
pub fn check_device(run: &MeasuredRun, device: &DeviceProfile) -> Result<(), FitError> {
    let mismatch = |why: String| {
        Err(FitError::Input(format!(
            "device profile {} does not match the device measured in {}: {why}",
            device.name, run.label
        )))
    };
    if let Some(link) = run.data.info.as_ref().and_then(|i| i.link.as_ref()) {
        let (gen, lanes) = (u32::from(link.gen.number()), link.lanes);
        if gen != device.link.gen || lanes != device.link.lanes {
            return mismatch(format!(
                "the run's link is Gen{gen} x{lanes}, the profile's Gen{} x{}",
                device.link.gen, device.link.lanes
            ));
        }
    }
    let largest = run.data.files.iter().flat_map(|f| sizes(&f.data)).max().unwrap_or(0);
    if largest > device.dma.max_transfer {
        return mismatch(format!(
            "transfers of {largest} B were measured, the profile's dma.max_transfer is {}",
            device.dma.max_transfer
        ));
    }
    let tick = f64::from(device.clock.tick_cycles) * 1000.0 / device.clock.mhz;
    let mins: Vec<f64> = run
        .data
        .files
        .iter()
        .flat_map(|f| match &f.data {
            ResultData::Latency(rows) => rows.iter().map(|r| r.min_ns).collect(),
            _ => vec![],
        })
        .collect();
    // A device with a fine counter (about 1 ns or less) can read any value.
    if tick > 1.5 && !mins.is_empty() {
        let off_tick = |v: &f64| {
            let t = v / tick;
            (t - t.round()).abs() > 0.05
        };
        let off = mins.iter().filter(|v| off_tick(v)).count();
        if off * 10 > mins.len() {
            return mismatch(format!(
                "{off} of {} latency minima are not whole ticks of its counter ({tick:.2} ns: clock.mhz {}, tick_cycles {})",
                mins.len(),
                device.clock.mhz,
                device.clock.tick_cycles
            ));
        }
    }
    Ok(())
}

fn sizes(data: &ResultData) -> Vec<u32> {
    match data {
        ResultData::Latency(rows) => rows.iter().map(|r| r.key.size).collect(),
        ResultData::Bandwidth(rows) => rows.iter().map(|r| r.key.size).collect(),
        ResultData::Cdf(_) => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcie_bench::params::TestKind;

    #[test]
    fn the_mps_comes_from_the_endpoints_at_the_device_link_where_they_agree() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro");
        let nfp = DeviceProfile::load("nfp6000").unwrap();
        let run = MeasuredRun::load(&dir).unwrap();
        let m = run.mps(&nfp).unwrap();
        assert_eq!(m.bytes, 256);
        assert!(m
            .source
            .ends_with("(DevCtl of 0000:02:00.0, 0000:03:00.0, the endpoints at Gen3 x8)"));
        // A device at another link has no function in the dump.
        let mut x4 = nfp.clone();
        x4.link.lanes = 4;
        assert_eq!(run.mps(&x4), None);
        // The NetFPGA beside the NFP at 128 B: which one was measured is not said.
        let text = std::fs::read_to_string(dir.join("sys-lspci.txt")).unwrap();
        let at = text.find("03:00.0 ").unwrap();
        let netfpga_at_128 = format!(
            "{}{}",
            &text[..at],
            text[at..].replacen(
                "MaxPayload 256 bytes, MaxReadReq",
                "MaxPayload 128 bytes, MaxReadReq",
                1
            )
        );
        let mut other = run.clone();
        other.lspci = lspci::parse(&netfpga_at_128).unwrap();
        assert_eq!(other.mps(&nfp), None);
        // Two runs of one host at different MPS are refused.
        let mut only_netfpga = run.clone();
        only_netfpga.label = "b".into();
        only_netfpga.lspci = other
            .lspci
            .into_iter()
            .filter(|f| f.bdf.to_string() != "0000:02:00.0")
            .collect();
        let e = path_mps(&[run.clone(), only_netfpga], &nfp).unwrap_err();
        assert!(
            e.to_string().starts_with("inconsistent runs: MPS 256 B in nfp6000")
                && e.to_string()
                    .contains("128 B in b/sys-lspci.txt (DevCtl of 0000:03:00.0,"),
            "{e}"
        );
        assert_eq!(path_mps(&[run], &nfp).unwrap().map(|m| m.bytes), Some(256));
    }

    #[test]
    fn a_selection_keeps_its_rows_and_cdf_sections() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../data/reference/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro");
        let groups = MeasuredRun::load(&dir).unwrap().groups(0, 1000);
        let group = |base: &str| groups.iter().find(|g| g.base == base).unwrap();
        let details = group("lat_dma_details");
        let reads = details.select(|t| t.kind == TestKind::LatRd).unwrap();
        assert!(reads.tests.iter().all(|t| t.kind == TestKind::LatRd));
        assert_eq!(reads.tests.len() * 2, details.tests.len(), "LAT_RD and LAT_WRRD alike");
        let (ResultData::Latency(all), ResultData::Latency(kept)) = (&details.measured, &reads.measured) else {
            panic!("latency tables");
        };
        let (all_cdf, kept_cdf) = (details.cdf.as_ref().unwrap(), reads.cdf.as_ref().unwrap());
        for (t, (row, section)) in reads.tests.iter().zip(kept.iter().zip(kept_cdf)) {
            let i = all.iter().position(|r| r.key == row.key).unwrap();
            assert_eq!(
                (t.size, t.window, t.cache),
                (row.key.size, row.key.window, row.key.cache)
            );
            assert_eq!(section, &all_cdf[i], "the section stays with its row");
        }
        // A bandwidth table's rows follow its tests too.
        let sweep = group("bw_dma_sz_sweep");
        let big = sweep.select(|t| t.size >= 1024).unwrap();
        let ResultData::Bandwidth(rows) = &big.measured else {
            panic!("a bandwidth table");
        };
        assert_eq!(rows.len(), big.tests.len());
        assert!(rows
            .iter()
            .zip(&big.tests)
            .all(|(r, t)| r.key.size == t.size && t.size >= 1024));
        assert!(big.tests.len() < sweep.tests.len());
        assert!(group("lat_cmd_sweep_wrrd_rnd_08")
            .select(|t| t.kind == TestKind::LatCmdRd)
            .is_none());
    }
}
