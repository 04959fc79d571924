//! A backend from its spec (`sim[:HOST[,DEVICE]]`, `cuda[:N]`, `exec:PROGRAM [ARGS]`) and the
//! options of a run: which options apply to which backend, the checks of each, and the device
//! under test for `run.json`. Errors name the command-line option at fault, as `bench run`
//! shows them.

use pcie_bench::exec::{ExecBackend, ExecOptions, ProgramLog};
use pcie_bench::host::HostIommu;
use pcie_bench::params::{Iommu, Numa};
use pcie_bench::sim_backend::SimBackend;
use pcie_bench::{Backend, Engine};
use pcie_gpu::{CudaBackend, CudaOptions};
use pcie_sysfs::{Bdf, DeviceRecord, KernelIommu};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Longest test and handshake timeout: a week.
pub const MAX_TIMEOUT_S: f64 = 604_800.0;

/// How to open a backend; each option applies to some backends only.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// exec: seconds the program may take to answer the hello.
    pub handshake_timeout_s: f64,
    /// exec: seconds each test may take [default: the test's own].
    pub timeout_s: Option<f64>,
    /// cuda: `sm` or `ce` [default: sm].
    pub engine: Option<String>,
    /// exec: PCI address of the device under test [default: the one the program reports].
    pub device: Option<String>,
    /// sim: the device's outstanding read tags [default: its profile's maximum].
    pub tags: Option<u32>,
    /// sim: simulate every DMA of each bandwidth test, not only up to its steady state.
    pub every_dma: bool,
    /// Sockets of the device, the buffer memory and the warming CPU [default: the simulator's
    /// 0, 0, 0; a real device's own NUMA node for all three, pcie-bench's local case]. The
    /// simulator checks its own; a real device's `dev` must be its node.
    pub numa: Option<Numa>,
    /// `--iommu`: the simulator's setting; for a real device, a statement of the host's mode
    /// that must hold [default: off for the simulator, the host's for a device].
    pub iommu: Option<Iommu>,
    /// exec: copies of the program running tests in parallel.
    pub children: usize,
    /// Where sysfs lives: `/` except in tests.
    pub root: PathBuf,
    /// exec: where the programs' stderr lines go.
    pub program_log: ProgramLog,
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions {
            handshake_timeout_s: 10.0,
            timeout_s: None,
            engine: None,
            device: None,
            tags: None,
            every_dma: false,
            numa: None,
            iommu: None,
            children: 1,
            root: PathBuf::from("/"),
            program_log: ProgramLog::default(),
        }
    }
}

/// A backend ready to run, what the host could not provide it, the device under test, and
/// the sockets and IOMMU mode its tests run under (a real device's: its node's and the host's,
/// and what showed the IOMMU's).
pub struct Opened {
    pub backend: Box<dyn Backend>,
    pub warnings: Vec<String>,
    pub device: Option<DeviceRecord>,
    pub numa: Numa,
    pub iommu: Iommu,
    pub iommu_note: Option<String>,
}

/// A spec or option that does not fit, or a backend that would not start: the message names
/// the option (`--tags: only for sim backends ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError(pub String);

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpenError {}

fn err(message: impl fmt::Display) -> OpenError {
    OpenError(message.to_string())
}

/// Whether `spec` drives one real device (cuda or exec), whose tests run one at a time by
/// default, rather than the simulator.
pub fn is_device(spec: &str) -> bool {
    spec.starts_with("exec:") || spec.starts_with("cuda")
}

/// `s` seconds of `--option` as a duration, refusing what is not a positive number of at most
/// a week.
pub fn seconds(option: &str, s: f64) -> Result<Duration, OpenError> {
    Some(s)
        .filter(|s| *s > 0.0 && *s <= MAX_TIMEOUT_S)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            err(format!(
                "--{option} {s:?}: must be a number of seconds above 0 and at most {MAX_TIMEOUT_S} (a week)"
            ))
        })
}

impl OpenOptions {
    /// Opens the backend `spec` names: the simulator, a GPU, or an external program started
    /// and greeted.
    pub fn open(&self, spec: &str) -> Result<Opened, OpenError> {
        let handshake_timeout = seconds("handshake-timeout", self.handshake_timeout_s)?;
        let test_timeout = self.timeout_s.map(|t| seconds("timeout", t)).transpose()?;
        let cuda = spec.starts_with("cuda");
        if self.tags.is_some() && (cuda || spec.starts_with("exec:")) {
            return Err(err(format!(
                "--tags: only for sim backends (--backend {spec} has no setting for the device's read tags)"
            )));
        }
        if self.every_dma && (cuda || spec.starts_with("exec:")) {
            return Err(err(format!(
                "--every-dma: only for sim backends (--backend {spec} moves every DMA it is asked for)"
            )));
        }
        if self.engine.is_some() && !cuda {
            return Err(err("--engine: only for cuda backends"));
        }
        if !spec.starts_with("exec:") && (self.device.is_some() || self.timeout_s.is_some()) {
            return Err(err("--device and --timeout: only for exec: backends"));
        }
        if cuda {
            return self.open_cuda(spec);
        }
        if !spec.starts_with("exec:") {
            let mut backend = SimBackend::from_spec(spec)
                .map_err(|e| err(format!("--backend {spec}: {e}")))?
                .with_every_dma(self.every_dma);
            if let Some(n) = self.tags {
                backend = backend.with_read_tags(n).map_err(|e| err(format!("--{e}")))?;
            }
            let numa = self.numa.unwrap_or_default();
            backend.check_numa(numa).map_err(|e| err(format!("--{e}")))?;
            return Ok(Opened {
                backend: Box::new(backend),
                warnings: Vec::new(),
                device: None,
                numa,
                iommu: self.iommu.unwrap_or_default(),
                iommu_note: None,
            });
        }
        self.open_exec(spec, handshake_timeout, test_timeout)
    }

    fn open_cuda(&self, spec: &str) -> Result<Opened, OpenError> {
        let engine: Engine = self
            .engine
            .as_deref()
            .unwrap_or("sm")
            .parse()
            .map_err(|e| err(format!("--{e}")))?;
        let options = CudaOptions {
            engine,
            root: self.root.clone(),
            buffer_node: self.numa.map(|n| n.mem.into()),
            cache_node: self.numa.map(|n| n.cpu.into()),
        };
        let backend = CudaBackend::open(spec, options).map_err(|e| err(format!("--backend {spec}: {e}")))?;
        let device = backend.gpu_info().pci.clone();
        let numa = self.device_numa(device.as_ref(), None)?;
        let (iommu, iommu_note) = self.host_iommu(device.as_ref(), backend.buffer_page_bytes())?;
        Ok(Opened {
            warnings: backend.warnings().to_vec(),
            device,
            numa,
            backend: Box::new(backend),
            iommu,
            iommu_note,
        })
    }

    fn open_exec(
        &self,
        spec: &str,
        handshake_timeout: Duration,
        test_timeout: Option<Duration>,
    ) -> Result<Opened, OpenError> {
        let named = match &self.device {
            Some(d) => {
                let bdf: Bdf = d
                    .parse()
                    .map_err(|_| err(format!("--device {d}: must be a PCI address like 0000:03:00.0")))?;
                Some(DeviceRecord::read(&self.root, bdf).map_err(|e| err(format!("--device {d}: {e}")))?)
            }
            None => None,
        };
        // Unless --numa places them, the buffer and the cache steps go on the named device's
        // node, or on node 0 until the program names its device.
        let node = |socket: fn(&Numa) -> u8| {
            let named_node = named.as_ref().and_then(|d| d.numa_node);
            Some(self.numa.map_or(named_node.unwrap_or(0), |n| socket(&n).into()))
        };
        let placed = (self.numa.is_none() && named.is_none()).then_some(0);
        let options = ExecOptions {
            handshake_timeout,
            test_timeout,
            children: self.children,
            buffer_node: node(|n| n.mem),
            cache_node: node(|n| n.cpu),
            root: self.root.clone(),
            program_log: self.program_log.clone(),
        };
        let backend = ExecBackend::start(spec, options).map_err(|e| err(format!("--backend {e}")))?;
        let mut warnings = backend.warnings().to_vec();
        let device = match (named, backend.hello().bdf.as_deref()) {
            (Some(d), _) => Some(d),
            (None, Some(bdf)) => match bdf
                .parse::<Bdf>()
                .map_err(|_| "not a PCI address".to_string())
                .and_then(|b| DeviceRecord::read(&self.root, b).map_err(|e| e.to_string()))
            {
                Ok(d) => Some(d),
                Err(e) => {
                    warnings.push(format!(
                        "the device program reports device {bdf}: {e}; run.json has no link state"
                    ));
                    None
                }
            },
            (None, None) => None,
        };
        // A program that emulates its device moves no real DMA: the options stand, as for the
        // simulator.
        let (numa, (iommu, iommu_note)) = if backend.hello().device.get("emulated") == Some(&true.into()) {
            (self.numa.unwrap_or_default(), (self.iommu.unwrap_or_default(), None))
        } else {
            (
                self.device_numa(device.as_ref(), placed)?,
                self.host_iommu(device.as_ref(), backend.buffer_page_bytes())?,
            )
        };
        Ok(Opened {
            backend: Box::new(backend),
            warnings,
            device,
            numa,
            iommu,
            iommu_note,
        })
    }

    /// The sockets a real device's tests run on: `--numa` when its `dev` is the device's NUMA
    /// node as sysfs gives it (or sysfs gives none), by default that node for all three
    /// (pcie-bench's local case; 0 where sysfs gives none). `placed`: the node the buffer went to
    /// before the device was known (an exec program that names its device in its hello).
    fn device_numa(&self, device: Option<&DeviceRecord>, placed: Option<u32>) -> Result<Numa, OpenError> {
        let node = device.and_then(|d| d.numa_node);
        let bdf = device.map_or("", |d| d.bdf.as_str());
        let local = |n: u32| format!("--numa dev={n},mem={n},cpu={n} (pcie-bench's local case)");
        match (self.numa, node) {
            (Some(n), Some(node)) if node != u32::from(n.dev) => Err(err(format!(
                "--numa dev={}: the device under test ({bdf}) is on NUMA node {node}: run with {}",
                n.dev,
                local(node)
            ))),
            (Some(n), _) => Ok(n),
            (None, node) => {
                let node = node.unwrap_or(0);
                if placed.is_some_and(|p| p != node) {
                    return Err(err(format!(
                        "the device under test ({bdf}) is on NUMA node {node}, and its buffer went to node 0 \
                         before the program named it: run with --device {bdf}, or with {}",
                        local(node)
                    )));
                }
                let n = u8::try_from(node).map_err(|_| {
                    err(format!(
                        "the device under test ({bdf}) is on NUMA node {node}: beyond 255"
                    ))
                })?;
                Ok(Numa { dev: n, mem: n, cpu: n })
            }
        }
    }

    /// The IOMMU mode a real device's tests run under (`--iommu` when the host allows it, else
    /// refused), and, when the host's own was taken, a note saying what showed it.
    fn host_iommu(&self, device: Option<&DeviceRecord>, page_bytes: u64) -> Result<(Iommu, Option<String>), OpenError> {
        let group = device.and_then(|d| d.iommu_group_type.as_deref());
        let host = HostIommu::of(&KernelIommu::read(&self.root), group, page_bytes);
        let mode = host.choose(self.iommu).map_err(|e| err(format!("--{e}")))?;
        let note = (self.iommu.is_none() && mode != Iommu::Off)
            .then(|| format!("IOMMU {} for every test, the host's: {}", mode.name(), host.why));
        Ok((mode, note))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(spec: &str, o: OpenOptions) -> Result<Opened, String> {
        o.open(spec).map_err(|e| e.to_string())
    }

    #[test]
    fn options_apply_to_their_backends_only() {
        let tags = OpenOptions {
            tags: Some(8),
            ..OpenOptions::default()
        };
        let e = open("cuda:0", tags.clone()).err().unwrap();
        assert_eq!(
            e,
            "--tags: only for sim backends (--backend cuda:0 has no setting for the device's read tags)"
        );
        assert!(open("exec:/bin/true", tags).err().unwrap().starts_with("--tags: only"));
        let every = OpenOptions {
            every_dma: true,
            ..OpenOptions::default()
        };
        for spec in ["cuda", "exec:/bin/true"] {
            let e = open(spec, every.clone()).err().unwrap();
            assert_eq!(
                e,
                format!("--every-dma: only for sim backends (--backend {spec} moves every DMA it is asked for)")
            );
        }
        let sim = every.open("sim").unwrap().backend.info().description;
        assert_eq!(sim["bandwidth_dmas"], "every DMA simulated");
        let steady = OpenOptions::default().open("sim").unwrap().backend.info().description;
        assert!(steady["bandwidth_dmas"]
            .as_str()
            .unwrap()
            .starts_with("simulated until the rate is known"));
        let engine = OpenOptions {
            engine: Some("ce".into()),
            ..OpenOptions::default()
        };
        assert_eq!(open("sim", engine).err().unwrap(), "--engine: only for cuda backends");
        for spec in ["sim", "cuda"] {
            let device = OpenOptions {
                device: Some("0000:03:00.0".into()),
                ..OpenOptions::default()
            };
            assert_eq!(
                open(spec, device).err().unwrap(),
                "--device and --timeout: only for exec: backends"
            );
        }
    }

    #[test]
    fn bad_values_name_their_option() {
        let e = open("sim:no-such-host", OpenOptions::default()).err().unwrap();
        assert!(e.starts_with("--backend sim:no-such-host: "), "{e}");
        let engine = OpenOptions {
            engine: Some("dma".into()),
            ..OpenOptions::default()
        };
        let e = open("cuda", engine).err().unwrap();
        assert!(e.starts_with("--engine dma"), "{e}");
        let device = OpenOptions {
            device: Some("03:00".into()),
            ..OpenOptions::default()
        };
        let e = open("exec:/bin/true", device).err().unwrap();
        assert_eq!(e, "--device 03:00: must be a PCI address like 0000:03:00.0");
        let handshake = OpenOptions {
            handshake_timeout_s: 0.0,
            ..OpenOptions::default()
        };
        let e = open("sim", handshake).err().unwrap();
        assert_eq!(
            e,
            "--handshake-timeout 0.0: must be a number of seconds above 0 and at most 604800 (a week)"
        );
    }

    #[test]
    fn seconds_bounds() {
        assert_eq!(seconds("timeout", 1.5).unwrap(), Duration::from_millis(1500));
        assert!(seconds("timeout", MAX_TIMEOUT_S).is_ok());
        for bad in [-1.0, 0.0, 1e-12, MAX_TIMEOUT_S + 1.0, f64::NAN, f64::INFINITY] {
            let e = seconds("timeout", bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--timeout {bad:?}: ")), "{e}");
        }
    }

    #[test]
    fn the_simulator_opens_with_its_read_tags() {
        let o = OpenOptions {
            tags: Some(4),
            ..OpenOptions::default()
        };
        let opened = o.open("sim").unwrap();
        assert!(opened.warnings.is_empty() && opened.device.is_none());
        let too_many = OpenOptions {
            tags: Some(100_000),
            ..OpenOptions::default()
        };
        assert!(open("sim", too_many).err().unwrap().starts_with("--tags"));
    }

    #[test]
    fn numa_places_only_on_sockets_the_host_has() {
        let remote = |numa: &str| OpenOptions {
            numa: Some(numa.parse().unwrap()),
            ..OpenOptions::default()
        };
        assert!(open("sim:e5-2637v3", remote("dev=0,mem=1,cpu=1")).is_ok());
        assert_eq!(
            open("sim:e5-2637v3", remote("mem=2")).err().unwrap(),
            "--numa dev=0,mem=2,cpu=0: the simulated host has 2 sockets: dev, mem and cpu must be 0 or 1"
        );
        assert_eq!(
            open("sim:e3-1226v3", remote("dev=0,mem=1,cpu=0")).err().unwrap(),
            "--numa dev=0,mem=1,cpu=0: the simulated host e3-1226v3 is a single-socket part: dev, mem and cpu \
             must be 0"
        );
        assert!(open("sim:e3-1226v3", remote("dev=0,mem=0,cpu=0")).is_ok());
    }

    #[test]
    fn a_real_device_s_socket_is_its_numa_node() {
        let on = |numa: Option<&str>| OpenOptions {
            numa: numa.map(|n| n.parse().unwrap()),
            ..OpenOptions::default()
        };
        let gpu = DeviceRecord {
            bdf: "0000:c1:00.0".into(),
            numa_node: Some(1),
            ..DeviceRecord::default()
        };
        let numa = |dev, mem, cpu| Numa { dev, mem, cpu };
        // By default the device's own node for all three; a --numa naming it stands.
        assert_eq!(on(None).device_numa(Some(&gpu), None), Ok(numa(1, 1, 1)));
        assert_eq!(
            on(Some("dev=1,mem=0,cpu=0")).device_numa(Some(&gpu), None),
            Ok(numa(1, 0, 0))
        );
        assert_eq!(
            on(Some("dev=0,mem=0,cpu=0"))
                .device_numa(Some(&gpu), None)
                .unwrap_err()
                .0,
            "--numa dev=0: the device under test (0000:c1:00.0) is on NUMA node 1: run with --numa \
             dev=1,mem=1,cpu=1 (pcie-bench's local case)"
        );
        // An exec program naming its device after its buffer went to node 0.
        assert_eq!(
            on(None).device_numa(Some(&gpu), Some(0)).unwrap_err().0,
            "the device under test (0000:c1:00.0) is on NUMA node 1, and its buffer went to node 0 before \
             the program named it: run with --device 0000:c1:00.0, or with --numa dev=1,mem=1,cpu=1 \
             (pcie-bench's local case)"
        );
        // Where sysfs does not say (no node, no record): the option, or node 0.
        let unplaced = DeviceRecord { numa_node: None, ..gpu };
        assert_eq!(on(Some("dev=0")).device_numa(Some(&unplaced), None), Ok(numa(0, 0, 0)));
        assert_eq!(on(Some("dev=3")).device_numa(None, None), Ok(numa(3, 3, 3)));
        assert_eq!(on(None).device_numa(None, Some(0)), Ok(numa(0, 0, 0)));
    }

    #[test]
    fn device_backends() {
        assert!(is_device("cuda") && is_device("cuda:1") && is_device("exec:prog -v"));
        assert!(!is_device("sim") && !is_device("sim:e5-2637v3,nfp6000"));
    }
}
