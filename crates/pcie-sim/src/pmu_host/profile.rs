//! The PMU host profile: root ports, the devices behind them, their PCIe PMUs and the host-side
//! costs of a storage workload, as TOML data (`data/profiles/yitian710.toml`). A profile may
//! `inherit` a built-in one and override some of its tables (`yitian710-narrow`).

use super::fault::FaultSpec;
use crate::distribution::Spread;
use crate::profile_file::{above_zero, between, chars, count, one_of, spread, words, ProfileError, MAX_NS, SIZES};
use pcie_sysfs::Bdf;
use serde::Deserialize;

/// How the kernel driver presents each root port's PMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PmuDriver {
    /// Upstream `dwc_rootport_<sbdf>`: lower-case events, payload multiplied by 16 into bytes,
    /// 64-bit counts accumulated by the kernel.
    DwcRootport,
    /// The pre-upstream `pcie_bdf_<bdf>` driver of the seed study: `type=0x1` time events, raw
    /// 16 B units, and the hardware register returned as it is (a narrowed one wraps).
    PcieBdf,
}

/// The DWC RAS-DES counters of every root port.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PmuSpec {
    pub driver: PmuDriver,
    /// Width of the time-based (Group#0/#1) counter: 64, or 32 for the narrowed throughput counter.
    pub throughput_bits: u32,
    /// Width of the lane event counter.
    pub lane_bits: u32,
    /// perf's rotation period when events share a counter (`perf_event_mux_interval_ms`).
    pub mux_interval_ms: f64,
    /// The controller clock Group#0 residency events count.
    pub core_clock_mhz: f64,
    /// CPUs per die: a PMU's `cpumask` is the first CPU of its root port's die.
    pub cpus_per_die: u32,
    /// perf `type` of the first PMU; the others follow.
    pub first_type: u32,
    /// One configuration-space access to a root port's RAS-DES registers. When events take
    /// turns on a counter, each rotation reads the outgoing count and reprograms the counter
    /// through such accesses ([`bank::SWITCH_ACCESSES`](super::bank::SWITCH_ACCESSES)), and the
    /// counter counts nothing meanwhile while perf's running time goes on.
    pub config_access_ns: f64,
}

/// Host-side costs (CPU and memory) of the storage path.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSide {
    /// Largest MPS the root ports support; a link uses the smaller of both sides'.
    pub max_mps: u32,
    /// Read completion boundary of the root ports.
    pub rcb: u32,
    /// One way over the link: PHY and data link layer pipelines plus flight time.
    pub wire_ns: f64,
    /// From a device's read request reaching the root port to its first completion leaving it.
    pub memory_read: Spread,
    /// CPU time a job spends to submit one I/O (fio + block layer + driver), before its doorbell.
    pub submit: Spread,
    /// From the interrupt to the job seeing the I/O complete (handler + fio's reaping).
    pub reap: Spread,
}

/// One root port.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    /// `dddd:bb:dd.f`
    pub bdf: String,
    pub die: u32,
    pub gen: u32,
    pub lanes: u32,
    /// A `[[device]]` name, when something is plugged in.
    pub device: Option<String>,
    /// The device's address (on the port's secondary bus).
    pub device_bdf: Option<String>,
    /// Further functions below the port: other functions of the device, or functions behind
    /// it when the device is a bridge (on a higher bus).
    #[serde(default, rename = "function")]
    pub functions: Vec<FunctionSpec>,
}

/// A PCI function that carries no workload: its address and its `[[device]]` name.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    pub bdf: String,
    pub device: String,
}

/// Background work that stops a drive's media now and then (garbage collection behind
/// writes, read refresh and map loads behind reads): after a random amount of media work,
/// exponential with mean `every_mb` MB, every channel stops for a `pause`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec {
    pub every_mb: f64,
    pub pause: Spread,
}

/// A storage controller's queues, media and the host-memory structures its commands use.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSpec {
    /// Hardware submission queues, and commands each accepts at once (AHCI NCQ: 1 × 32).
    pub queues: u32,
    pub queue_depth: u32,
    /// Requests the host's block layer holds for the device at once (`nr_requests`); an
    /// `io_submit` beyond them sleeps until one completes.
    pub host_requests: u32,
    /// Media bandwidth (MB/s = 10^6 B/s), shared by `channels` parallel units.
    pub read_mbps: f64,
    pub write_mbps: f64,
    pub channels: u32,
    /// Data moves over PCIe in pieces of this size as the media produces or takes them
    /// (a SATA data FIS, a flash page).
    pub chunk_bytes: u32,
    /// Media latency before a read's first data, and after a write's last data.
    pub read_latency: Spread,
    pub write_latency: Spread,
    /// Pauses of the media while it reads and while it writes; none when absent.
    pub read_pause: Option<PauseSpec>,
    pub write_pause: Option<PauseSpec>,
    /// A drive whose channel is its own serial link (SATA): the rate its flash programs
    /// written data behind the link, one command at a time. Commands then wait in the drive's
    /// queue (NCQ) and the link carries their data in the order the drive took them, reads at
    /// `read_mbps` and writes at `write_mbps`, and `write_pause` stops the programming only.
    /// Absent: writes stream into the media units at `write_mbps`.
    pub program_mbps: Option<f64>,
    /// With `program_mbps`: the drive's buffer for written data on its way to the flash, in
    /// bytes. A write's data crosses the link once it fits (the flash draining the buffer as
    /// it arrives); absent, the buffer holds no more than the data a program drains while it
    /// arrives, and a write crosses as the previous program ends.
    pub write_buffer_bytes: Option<u32>,
    /// Host-memory structures the device reads per command (AHCI command header and CFIS;
    /// NVMe submission entry), one read request each.
    pub command_reads: Vec<u32>,
    /// Scatter-gather entries: bytes each, bytes of buffer each covers, entries carried inside
    /// the command (the rest are read from a list in host memory).
    pub sg_entry_bytes: u32,
    pub sg_segment_bytes: u32,
    pub sg_inline: u32,
    /// Register writes the host does to submit a command (AHCI PxCI; NVMe SQ tail doorbell).
    pub doorbell_writes: Vec<u32>,
    /// Memory writes the device does to complete one (AHCI D2H register FIS; NVMe CQE).
    pub completion_writes: Vec<u32>,
    /// MSI/MSI-X message data bytes per completion.
    pub interrupt_bytes: u32,
    /// Register writes and reads the host does to reap a completion (AHCI PxIS clear and
    /// PxSACT read; NVMe CQ head doorbell).
    pub reap_writes: Vec<u32>,
    pub reap_reads: Vec<u32>,
}

/// A NIC's descriptor, completion and interrupt traffic per batch of packets.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicSpec {
    /// Ethernet line rate in Gb/s (bounds `rx=` and `tx=`).
    pub line_gbps: f64,
    /// Packets per doorbell, descriptor read and interrupt.
    pub batch: u32,
    /// Descriptors in each of the receive and send rings: the packets the NIC and the driver
    /// can have on their way over the link (one batch always may). When the link falls behind
    /// by more than a ring of packets, received ones are dropped and sent ones wait in the stack.
    pub ring: u32,
    /// Receive and send descriptors the NIC reads from host memory, one per packet.
    pub rx_descriptor_bytes: u32,
    pub tx_descriptor_bytes: u32,
    /// Completion entry the NIC writes per packet.
    pub completion_bytes: u32,
    /// Doorbell the driver writes per batch, and MSI-X data per batch.
    pub doorbell_bytes: u32,
    pub interrupt_bytes: u32,
}

/// A device that can sit behind a root port.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    pub name: String,
    pub description: String,
    pub vendor: u32,
    pub device: u32,
    pub class: u32,
    /// The kernel driver bound to it; empty for none.
    pub driver: String,
    /// Its link; gen or lanes 0 for a function without one (conventional PCI behind a bridge,
    /// an integrated endpoint).
    pub gen: u32,
    pub lanes: u32,
    pub max_mps: u32,
    pub mrrs: u32,
    /// Present for storage controllers ...
    pub storage: Option<StorageSpec>,
    /// ... and for NICs; a device with neither carries no workload.
    pub nic: Option<NicSpec>,
}

/// A host with per-root-port PCIe PMUs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PmuHostProfile {
    pub name: String,
    pub description: String,
    pub sources: Vec<String>,
    /// A built-in profile this one starts from; its tables are overridden key by key.
    pub inherit: Option<String>,
    pub pmu: PmuSpec,
    pub host: HostSide,
    #[serde(rename = "port")]
    pub ports: Vec<PortSpec>,
    #[serde(rename = "device")]
    pub devices: Vec<DeviceSpec>,
    /// Functions on a root bus outside every root port (root complex integrated endpoints and
    /// event collectors).
    #[serde(default, rename = "rciep")]
    pub rcieps: Vec<FunctionSpec>,
    /// Faults of ports and their devices ([`super::fault`]); none when absent.
    #[serde(default, rename = "fault")]
    pub faults: Vec<FaultSpec>,
}

const BUILTIN: [(&str, &str); 4] = [
    ("yitian710", include_str!("../../../../data/profiles/yitian710.toml")),
    (
        "yitian710-narrow",
        include_str!("../../../../data/profiles/yitian710-narrow.toml"),
    ),
    (
        "yitian710-nvme",
        include_str!("../../../../data/profiles/yitian710-nvme.toml"),
    ),
    (
        "yitian710-degraded",
        include_str!("../../../../data/profiles/yitian710-degraded.toml"),
    ),
];

/// Names of the built-in PMU host profiles.
pub fn builtin_pmu_hosts() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

/// `over`'s keys replace `base`'s; tables merge recursively, arrays are replaced whole.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn table(file: &str, text: &str, depth: u32) -> Result<toml::Table, ProfileError> {
    let err = |message: String| ProfileError {
        file: file.to_string(),
        message,
    };
    let mut t: toml::Table = toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
    let Some(base) = t.remove("inherit") else {
        return Ok(t);
    };
    let base = base
        .as_str()
        .ok_or_else(|| err("inherit: must be a profile name".into()))?;
    let Some((n, text)) = BUILTIN.iter().find(|(n, _)| *n == base) else {
        return Err(err(format!(
            "inherit = {base:?}: must be one of {}",
            builtin_pmu_hosts().join(", ")
        )));
    };
    if depth > 4 {
        return Err(err("inherit: too deep".into()));
    }
    let mut merged = table(&format!("{n}.toml"), text, depth + 1)?;
    merge(&mut merged, t);
    Ok(merged)
}

impl PmuHostProfile {
    /// A built-in profile by name, or a TOML file when `name` contains `/` or ends in `.toml`.
    pub fn load(name: &str) -> Result<PmuHostProfile, ProfileError> {
        let (file, text) = if name.contains('/') || name.ends_with(".toml") {
            let limit = pcie_output::read::Limit::DEFINITION;
            let text = pcie_output::read::read_text(std::path::Path::new(name), limit).map_err(|e| ProfileError {
                file: name.to_string(),
                message: format!("cannot read: {e}"),
            })?;
            (name.to_string(), text)
        } else {
            match BUILTIN.iter().find(|(n, _)| *n == name) {
                Some((n, t)) => (format!("{n}.toml"), t.to_string()),
                None => {
                    return Err(ProfileError {
                        file: name.to_string(),
                        message: format!(
                            "unknown PMU host profile; built-in ones are {} (or give a path to a .toml file)",
                            builtin_pmu_hosts().join(", ")
                        ),
                    })
                }
            }
        };
        Self::parse(&file, &text)
    }

    /// Parse and check a profile's text (`file` names it in errors).
    pub fn parse(file: &str, text: &str) -> Result<PmuHostProfile, ProfileError> {
        let err = |message: String| ProfileError {
            file: file.to_string(),
            message,
        };
        let t = table(file, text, 0)?;
        let p: PmuHostProfile = t
            .try_into()
            .map_err(|e: toml::de::Error| err(e.to_string().trim_end().into()))?;
        p.check().map_err(err)?;
        Ok(p)
    }

    /// The device plugged into `port`, if any.
    pub fn device_of(&self, port: &PortSpec) -> Option<&DeviceSpec> {
        port.device.as_ref().and_then(|d| self.device(d))
    }

    /// The `[[device]]` named `name`.
    pub fn device(&self, name: &str) -> Option<&DeviceSpec> {
        self.devices.iter().find(|x| x.name == name)
    }

    /// The `[[fault]]` of the function at `bdf`, if any.
    pub fn fault(&self, bdf: &str) -> Option<&FaultSpec> {
        self.faults.iter().find(|f| f.bdf == bdf)
    }

    /// The generation and width `port`'s link trained at with its device: the lower of both
    /// ends, or what a `[[fault]]` of the port or the device says; `None` for an empty port.
    pub fn trained(&self, port: &PortSpec) -> Option<(u32, u32)> {
        let d = self.device_of(port)?;
        let faults = [Some(port.bdf.as_str()), port.device_bdf.as_deref()];
        let faults: Vec<&FaultSpec> = faults.into_iter().flatten().filter_map(|b| self.fault(b)).collect();
        let gen = faults.iter().find_map(|f| f.link_gen).unwrap_or(port.gen.min(d.gen));
        let lanes = faults
            .iter()
            .find_map(|f| f.link_lanes)
            .unwrap_or(port.lanes.min(d.lanes));
        Some((gen, lanes))
    }

    /// MPS and MRRS in force in the Device Control of `port`'s device: the smaller MPS of both
    /// ends (as the kernel sets a path) and the device's MRRS, unless a `[[fault]]` sets them.
    pub fn device_control(&self, port: &PortSpec) -> Option<(u32, u32)> {
        let d = self.device_of(port)?;
        let f = port.device_bdf.as_deref().and_then(|b| self.fault(b));
        let mps = f.and_then(|f| f.mps).unwrap_or(self.host.max_mps.min(d.max_mps));
        Some((mps, f.and_then(|f| f.mrrs).unwrap_or(d.mrrs)))
    }

    fn check_faults(&self) -> Result<(), String> {
        if self.faults.len() > 256 {
            return Err(format!("fault: {} [[fault]] tables: at most 256", self.faults.len()));
        }
        for (i, f) in self.faults.iter().enumerate() {
            let key = format!("fault[{i}]");
            if self.faults[..i].iter().any(|g| g.bdf == f.bdf) {
                return Err(format!("{key}.bdf = {:?}: listed twice", f.bdf));
            }
            let port = self.ports.iter().find(|p| p.bdf == f.bdf);
            let below = self.ports.iter().find(|p| p.device_bdf.as_ref() == Some(&f.bdf));
            let (p, max_mps) = match (port, below) {
                (Some(p), _) => (p, self.host.max_mps),
                (None, Some(p)) => (p, self.device_of(p).map_or(128, |d| d.max_mps)),
                (None, None) => {
                    let mut names: Vec<&str> = self.ports.iter().map(|p| p.bdf.as_str()).collect();
                    names.extend(self.ports.iter().filter_map(|p| p.device_bdf.as_deref()));
                    return Err(format!(
                        "{key}.bdf = {:?}: must be a root port or the device on one: {}",
                        f.bdf,
                        names.join(", ")
                    ));
                }
            };
            let link = self.device_of(p).map(|d| (p.gen.min(d.gen), p.lanes.min(d.lanes)));
            if link.is_none() && (f.link_gen.is_some() || f.link_lanes.is_some()) {
                return Err(format!(
                    "{key}: link_gen and link_lanes need a device on port {}: an empty port trains no link",
                    p.bdf
                ));
            }
            f.check(&key, link.unwrap_or((6, 16)), max_mps)?;
        }
        Ok(())
    }

    /// `key = name` names a `[[device]]`; otherwise the message lists them.
    fn check_device_name(&self, key: &str, name: &str) -> Result<(), String> {
        if self.device(name).is_some() {
            return Ok(());
        }
        let names: Vec<&str> = self.devices.iter().map(|d| d.name.as_str()).collect();
        Err(format!("{key} = {name:?}: must be one of {}", names.join(", ")))
    }

    fn check_function(&self, key: &str, f: &FunctionSpec) -> Result<(), String> {
        parse_bdf(&f.bdf).ok_or_else(|| format!("{key}.bdf = {:?}: must be dddd:bb:dd.f", f.bdf))?;
        self.check_device_name(&format!("{key}.device"), &f.device)
    }

    fn check(&self) -> Result<(), String> {
        words(&self.name, &self.description, &self.sources)?;
        let p = &self.pmu;
        one_of("pmu.throughput_bits", p.throughput_bits, &[32, 64])?;
        one_of("pmu.lane_bits", p.lane_bits, &[32, 64])?;
        between("pmu.mux_interval_ms", p.mux_interval_ms, 1.0, 60_000.0, " ms")?;
        between("pmu.core_clock_mhz", p.core_clock_mhz, 1.0, 100_000.0, " MHz")?;
        count("pmu.cpus_per_die", p.cpus_per_die, 1, 4096)?;
        count("pmu.first_type", p.first_type, 0, 65535)?;
        between("pmu.config_access_ns", p.config_access_ns, 0.0, 100_000.0, " ns")?;
        let h = &self.host;
        one_of("host.max_mps", h.max_mps, &SIZES)?;
        one_of("host.rcb", h.rcb, &[64, 128])?;
        between("host.wire_ns", h.wire_ns, 0.0, MAX_NS, " ns")?;
        spread("host.memory_read", &h.memory_read, MAX_NS)?;
        spread("host.submit", &h.submit, MAX_HOST_NS)?;
        spread("host.reap", &h.reap, MAX_HOST_NS)?;
        for (k, n, least) in [("port", self.ports.len(), 1), ("device", self.devices.len(), 0)] {
            if !(least..=256).contains(&n) {
                return Err(format!("{k}: {n} [[{k}]] tables: a host has {least} to 256"));
            }
        }
        for (i, port) in self.ports.iter().enumerate() {
            let key = format!("port[{i}]");
            parse_bdf(&port.bdf).ok_or_else(|| format!("{key}.bdf = {:?}: must be dddd:bb:dd.f", port.bdf))?;
            one_of(&format!("{key}.gen"), port.gen, &[1, 2, 3, 4, 5, 6])?;
            one_of(&format!("{key}.lanes"), port.lanes, &[1, 2, 4, 8, 16])?;
            count(&format!("{key}.die"), port.die, 0, 255)?;
            if self.ports[..i].iter().any(|q| q.bdf == port.bdf) {
                return Err(format!("{key}.bdf = {:?}: listed twice", port.bdf));
            }
            match (&port.device, &port.device_bdf) {
                (None, None) => {}
                (Some(d), Some(b)) => {
                    self.check_device_name(&format!("{key}.device"), d)?;
                    parse_bdf(b).ok_or_else(|| format!("{key}.device_bdf = {b:?}: must be dddd:bb:dd.f"))?;
                }
                _ => return Err(format!("{key}: device and device_bdf go together")),
            }
            if port.functions.len() > 32 {
                return Err(format!(
                    "{key}.function: {} functions: at most 32",
                    port.functions.len()
                ));
            }
            if !port.functions.is_empty() && port.device.is_none() {
                return Err(format!("{key}.function: functions need the port's device"));
            }
            for (j, f) in port.functions.iter().enumerate() {
                self.check_function(&format!("{key}.function[{j}]"), f)?;
            }
        }
        if self.rcieps.len() > 256 {
            return Err(format!("rciep: {} [[rciep]] tables: at most 256", self.rcieps.len()));
        }
        for (i, f) in self.rcieps.iter().enumerate() {
            self.check_function(&format!("rciep[{i}]"), f)?;
        }
        for (i, d) in self.devices.iter().enumerate() {
            chars(&format!("device[{i}].name"), &d.name, 64)?;
            let key = format!("device[{i}] ({})", d.name);
            chars(&format!("{key}.description"), &d.description, 1024)?;
            chars(&format!("{key}.driver"), &d.driver, 64)?;
            count(&format!("{key}.vendor"), d.vendor, 0, 0xffff)?;
            count(&format!("{key}.device"), d.device, 0, 0xffff)?;
            count(&format!("{key}.class"), d.class, 0, 0xff_ffff)?;
            // A port's device trains the port's link; other functions may have none (0).
            let on_port = self.ports.iter().any(|p| p.device.as_ref() == Some(&d.name));
            let (gens, widths): (&[u32], &[u32]) = if on_port {
                (&[1, 2, 3, 4, 5, 6], &[1, 2, 4, 8, 16])
            } else {
                (&[0, 1, 2, 3, 4, 5, 6], &[0, 1, 2, 4, 8, 16])
            };
            one_of(&format!("{key}.gen"), d.gen, gens)?;
            one_of(&format!("{key}.lanes"), d.lanes, widths)?;
            one_of(&format!("{key}.max_mps"), d.max_mps, &SIZES)?;
            one_of(&format!("{key}.mrrs"), d.mrrs, &SIZES)?;
            if let Some(s) = &d.storage {
                check_storage(&key, s)?;
            }
            if let Some(n) = &d.nic {
                check_nic(&key, n)?;
            }
        }
        self.check_faults()
    }
}

/// Longest host CPU time (submit, reap) or media latency a PMU host profile may give: 1 s,
/// beyond any real I/O path, small enough that a day of I/Os stays far inside the simulator's
/// 64-bit picosecond clock.
const MAX_HOST_NS: f64 = 1e9;

fn check_storage(key: &str, s: &StorageSpec) -> Result<(), String> {
    let key = format!("{key}.storage");
    count(&format!("{key}.queues"), s.queues, 1, 65536)?;
    count(&format!("{key}.queue_depth"), s.queue_depth, 1, 65536)?;
    count(&format!("{key}.host_requests"), s.host_requests, 1, 1 << 20)?;
    count(&format!("{key}.channels"), s.channels, 1, 1024)?;
    count(&format!("{key}.sg_entry_bytes"), s.sg_entry_bytes, 1, 4096)?;
    count(&format!("{key}.sg_segment_bytes"), s.sg_segment_bytes, 512, 1 << 30)?;
    count(&format!("{key}.sg_inline"), s.sg_inline, 0, 4096)?;
    if s.chunk_bytes < 512 || s.chunk_bytes > 16 << 20 || !s.chunk_bytes.is_power_of_two() {
        return Err(format!(
            "{key}.chunk_bytes = {}: must be a power of two between 512 and 16777216",
            s.chunk_bytes
        ));
    }
    between(&format!("{key}.read_mbps"), s.read_mbps, 10.0, 1e6, " MB/s")?;
    between(&format!("{key}.write_mbps"), s.write_mbps, 10.0, 1e6, " MB/s")?;
    if let Some(p) = s.program_mbps {
        between(&format!("{key}.program_mbps"), p, 10.0, 1e6, " MB/s")?;
    }
    if let Some(b) = s.write_buffer_bytes {
        count(&format!("{key}.write_buffer_bytes"), b, 0, 1 << 30)?;
    }
    spread(&format!("{key}.read_latency"), &s.read_latency, MAX_HOST_NS)?;
    spread(&format!("{key}.write_latency"), &s.write_latency, MAX_HOST_NS)?;
    for (k, p) in [("read_pause", &s.read_pause), ("write_pause", &s.write_pause)] {
        if let Some(p) = p {
            between(&format!("{key}.{k}.every_mb"), p.every_mb, 1.0, 1e9, " MB")?;
            spread(&format!("{key}.{k}.pause"), &p.pause, MAX_HOST_NS)?;
        }
    }
    let lists = [
        ("command_reads", &s.command_reads),
        ("doorbell_writes", &s.doorbell_writes),
        ("completion_writes", &s.completion_writes),
        ("reap_writes", &s.reap_writes),
        ("reap_reads", &s.reap_reads),
    ];
    for (k, list) in lists {
        if list.len() > 16 {
            return Err(format!("{key}.{k}: {} entries: at most 16", list.len()));
        }
        if let Some(b) = list.iter().find(|&&b| b == 0 || b > 4096 || !b.is_multiple_of(4)) {
            return Err(format!(
                "{key}.{k}: {b} bytes: each must be a multiple of 4 between 4 and 4096"
            ));
        }
    }
    if !s.interrupt_bytes.is_multiple_of(4) || s.interrupt_bytes > 64 {
        return Err(format!(
            "{key}.interrupt_bytes = {}: must be a multiple of 4 between 0 and 64",
            s.interrupt_bytes
        ));
    }
    Ok(())
}

fn check_nic(key: &str, n: &NicSpec) -> Result<(), String> {
    above_zero(&format!("{key}.nic.line_gbps"), n.line_gbps, 1e4, " Gb/s")?;
    if n.batch == 0 || n.batch > 4096 {
        return Err(format!("{key}.nic.batch = {}: must be between 1 and 4096", n.batch));
    }
    if n.ring == 0 || n.ring > 65536 {
        return Err(format!("{key}.nic.ring = {}: must be between 1 and 65536", n.ring));
    }
    for (k, v) in [
        ("rx_descriptor_bytes", n.rx_descriptor_bytes),
        ("tx_descriptor_bytes", n.tx_descriptor_bytes),
        ("completion_bytes", n.completion_bytes),
        ("doorbell_bytes", n.doorbell_bytes),
        ("interrupt_bytes", n.interrupt_bytes),
    ] {
        if v == 0 || v > 4096 || !v.is_multiple_of(4) {
            return Err(format!(
                "{key}.nic.{k} = {v}: must be a multiple of 4 between 4 and 4096"
            ));
        }
    }
    Ok(())
}

/// A profile's PCI address: the full `dddd:bb:dd.f` form (sysfs's directory names), domain
/// 0000 to ffff.
pub fn parse_bdf(s: &str) -> Option<Bdf> {
    let b: Bdf = s.parse().ok()?;
    (s.matches(':').count() == 2 && b.domain <= 0xffff).then_some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_load_and_the_narrow_one_inherits() {
        let y = PmuHostProfile::load("yitian710").unwrap();
        assert_eq!(y.ports.len(), 18);
        assert_eq!(y.ports.iter().filter(|p| p.lanes == 16).count(), 2);
        assert_eq!(y.pmu.throughput_bits, 64);
        let n = PmuHostProfile::load("yitian710-narrow").unwrap();
        assert_eq!(n.pmu.throughput_bits, 32);
        assert_eq!(n.pmu.driver, PmuDriver::PcieBdf);
        assert_eq!(n.ports, y.ports, "the narrow profile keeps the base profile's ports");
    }

    #[test]
    fn bad_profiles_name_file_and_key() {
        let e = PmuHostProfile::load("skylake").unwrap_err().to_string();
        assert!(e.contains("unknown PMU host profile") && e.contains("yitian710"), "{e}");
        let e = PmuHostProfile::parse("x.toml", "inherit = \"nope\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.toml: inherit = \"nope\": must be one of yitian710"),
            "{e}"
        );
        let e = PmuHostProfile::parse("x.toml", "inherit = \"yitian710\"\n[pmu]\nthroughput_bits = 48\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pmu.throughput_bits = 48: must be one of 32, 64"), "{e}");
        let e = PmuHostProfile::parse("x.toml", "inherit = \"yitian710\"\n[pmu]\nturbo = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("turbo"), "{e}");
        let text = BUILTIN[0].1.replace("program_mbps = 305.0", "program_mbps = 5.0");
        let e = PmuHostProfile::parse("y.toml", &text).unwrap_err().to_string();
        assert!(
            e.contains("device[0] (sata).storage.program_mbps = 5: must be") && e.contains("MB/s"),
            "{e}"
        );
    }

    #[test]
    fn an_inheriting_profile_overrides_key_by_key() {
        let p = PmuHostProfile::parse(
            "mine.toml",
            "inherit = \"yitian710\"\nname = \"mine\"\n[pmu]\nmux_interval_ms = 10.0\n",
        )
        .unwrap();
        let base = PmuHostProfile::load("yitian710").unwrap();
        assert_eq!((p.name.as_str(), p.pmu.mux_interval_ms), ("mine", 10.0));
        assert_eq!(p.pmu.driver, base.pmu.driver, "keys not given are inherited");
        assert_eq!((p.ports, p.devices), (base.ports, base.devices));
    }

    #[test]
    fn functions_and_integrated_endpoints_are_checked() {
        let base = "inherit = \"yitian710\"\n";
        let e = |extra: &str| {
            PmuHostProfile::parse("f.toml", &format!("{base}{extra}"))
                .unwrap_err()
                .to_string()
        };
        let err = e("[[rciep]]\nbdf = \"0000:7c:00.0\"\ndevice = \"gpu\"\n");
        assert!(
            err.contains("rciep[0].device = \"gpu\": must be one of sata, cx5"),
            "{err}"
        );
        let err = e("[[rciep]]\nbdf = \"7c:00.0\"\ndevice = \"acc\"\n");
        assert!(
            err.contains("rciep[0].bdf = \"7c:00.0\": must be dddd:bb:dd.f"),
            "{err}"
        );
        // A function of a port needs the port's device, and a port's device needs a link.
        let port = "[[port]]\nbdf = \"0000:00:00.0\"\ndie = 0\ngen = 5\nlanes = 4\n";
        let err = e(&format!(
            "{port}[[port.function]]\nbdf = \"0000:01:00.1\"\ndevice = \"usb\"\n"
        ));
        assert!(
            err.contains("port[0].function: functions need the port's device"),
            "{err}"
        );
        let err = e(&format!("{port}device = \"acc\"\ndevice_bdf = \"0000:01:00.0\"\n"));
        assert!(
            err.contains("device[5] (acc).gen = 0: must be one of 1, 2, 3, 4, 5, 6"),
            "{err}"
        );
        let y = PmuHostProfile::load("yitian710").unwrap();
        assert_eq!(y.rcieps.len(), 4);
        let b0 = y.ports.iter().find(|p| p.bdf == "0000:b0:00.0").unwrap();
        assert_eq!((b0.device.as_deref(), b0.functions.len()), (Some("cx5"), 1));
    }

    #[test]
    fn faults_degrade_the_trained_link_and_the_device_control() {
        let y = PmuHostProfile::load("yitian710").unwrap();
        let d = PmuHostProfile::load("yitian710-degraded").unwrap();
        let port = |p: &PmuHostProfile, bdf: &str| p.ports.iter().find(|q| q.bdf == bdf).cloned().unwrap();
        let (nic, sata) = (port(&d, "0000:b0:00.0"), port(&d, "0000:00:02.0"));
        assert_eq!(y.trained(&nic), Some((3, 16)));
        assert_eq!(y.device_control(&nic), Some((512, 4096)));
        assert_eq!(d.trained(&nic), Some((3, 8)));
        assert_eq!(d.device_control(&nic), Some((128, 4096)));
        assert_eq!(d.trained(&sata), Some((1, 2)));
        assert_eq!(
            d.trained(&port(&d, "0000:00:03.0")),
            None,
            "an empty port trains no link"
        );
        assert_eq!(
            d.fault("0000:03:00.0").and_then(|f| f.aspm),
            Some(super::super::fault::Aspm::L1)
        );
        assert_eq!((d.ports, d.devices), (y.ports, y.devices), "faults change nothing else");
    }

    #[test]
    fn faults_name_a_port_or_its_device_once() {
        let e = |extra: &str| {
            PmuHostProfile::parse("f.toml", &format!("inherit = \"yitian710\"\n{extra}"))
                .unwrap_err()
                .to_string()
        };
        let err = e("[[fault]]\nbdf = \"0000:b1:00.1\"\nmps = 128\n");
        assert!(
            err.starts_with(
                "f.toml: fault[0].bdf = \"0000:b1:00.1\": must be a root port or the device on one: 0000:00:00.0, "
            ),
            "{err}"
        );
        assert!(err.ends_with("0000:04:00.0, 0000:b1:00.0"), "{err}");
        let err = e("[[fault]]\nbdf = \"0000:10:00.0\"\nlink_lanes = 2\n");
        assert!(
            err.contains("fault[0]: link_gen and link_lanes need a device on port 0000:10:00.0"),
            "{err}"
        );
        let twice = "[[fault]]\nbdf = \"0000:04:00.0\"\nmrrs = 128\n";
        let err = e(&format!("{twice}{twice}"));
        assert!(err.contains("fault[1].bdf = \"0000:04:00.0\": listed twice"), "{err}");
        let err = e("[[fault]]\nbdf = \"0000:04:00.0\"\nlink_gen = 3\n");
        assert!(
            err.contains("fault[0].link_gen = 3: must be one of 1, 2 (the link's ends support Gen2 at most)"),
            "{err}"
        );
        let err = e("[[fault]]\nbdf = \"0000:04:00.0\"\nspeed = 3\n");
        assert!(err.contains("unknown field `speed`"), "{err}");
        // A root port's own MPS is bounded by the host's.
        let err = e("[[fault]]\nbdf = \"0000:00:02.0\"\nmps = 1024\n");
        assert!(err.contains("(the function supports 512 B at most)"), "{err}");
    }

    #[test]
    fn bdfs_parse() {
        let b = parse_bdf("0001:30:03.0").unwrap();
        assert_eq!((b.domain, b.bus, b.dev, b.func), (1, 0x30, 3, 0));
        assert_eq!(parse_bdf("10000:30:03.0"), None);
        assert_eq!(parse_bdf("00:02.0"), None);
        assert_eq!(parse_bdf("0000:30:20.0"), None);
    }
}
