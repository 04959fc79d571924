//! Host and device profiles: every parameter the simulator uses, as TOML data with its source.
//! Built-in profiles are embedded; a path loads a user's file. Loading validates every value
//! and names the file and key of anything wrong. Profiles also serialize (serde), so a
//! program can write one back as TOML, as `pcieperf sim fit` does.

use crate::distribution::{Spread, Tail};
use crate::profile_file::{
    above_zero, between, chars, count, load, one_of, parse, spread, tail, words, Checked, ProfileError, MAX_LINE_NS,
    MAX_NS, MAX_REQUEST_NS,
};
use serde::{Deserialize, Serialize};

/// The root port's side of the link.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostLink {
    pub max_mps: u32,
    pub rcb: u32,
    /// One way: SerDes, PHY and data link layer pipelines plus flight time.
    pub wire_ns: f64,
}

/// The root complex's request pipeline.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RootComplex {
    /// Traversal of a read request from the port to the coherent fabric and of its data back.
    pub fixed_ns: f64,
    /// Occupancy of the read pipeline per request (bounds read requests per second).
    pub request_ns: f64,
    /// Occupancy per 64 B line read (bounds read lines per second).
    pub line_ns: f64,
    /// Occupancy per 64 B line written (bounds posted write bandwidth).
    pub write_line_ns: f64,
    /// Posted requests the port buffers before it stops returning credits.
    pub posted_credits: u32,
    /// The period of the root port's UpdateFC timer: while no completion is leaving downstream
    /// it returns the posted credits it freed at the timer's ticks, in one UpdateFC, and while
    /// completions leave it returns each at once. Absent: every credit at once.
    #[serde(default)]
    pub fc_update_ns: Option<f64>,
    /// From a posted write's arrival until a later read of the same line sees it.
    pub write_commit_ns: f64,
    /// After its address is translated, a posted write needs ownership of its lines, granted
    /// after the line's memory latency (LLC or DRAM, the distributions' modes) plus this; the
    /// write is visible no earlier than that. Absent: ownership is not modelled apart from
    /// `write_commit_ns`.
    #[serde(default)]
    pub write_own_ns: Option<f64>,
    /// A write's ownership requests leave one line after another, this far apart.
    #[serde(default)]
    pub write_own_line_ns: f64,
    /// A write covering only part of a line that is in no cache must first read the line from
    /// memory to merge its bytes: its ownership takes this much longer (with `write_own_ns`).
    #[serde(default)]
    pub write_merge_ns: f64,
    /// Of `write_own_ns`, the snoop of the cores' caches, which a write that does not snoop
    /// (No Snoop, honoured) skips.
    #[serde(default)]
    pub write_snoop_ns: f64,
    /// The memory latency of ownership of a line the LLC holds, a core's or a DDIO one (in
    /// place of `memory.llc_hit`'s mode, where absent): the LLC's grant, not a read's data.
    #[serde(default)]
    pub write_own_llc_ns: Option<f64>,
}

/// Caches and memory.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub llc_bytes: u64,
    /// Share of the LLC DDIO may allocate device writes into ...
    pub ddio_share: f64,
    /// ... and what an allocation (evicting an older IO line) adds to a write's processing.
    pub ddio_allocate_ns: f64,
    /// A read that hits a line a core wrote (host-warmed).
    pub llc_hit: Spread,
    /// A read served by local DRAM.
    pub dram: Spread,
    pub dram_tail: Tail,
    /// A read of a line DDIO allocated for a device write.
    pub io_line: Spread,
    /// Extra per access to memory on another socket.
    pub remote_ns: f64,
    /// Extra per line for the remote socket's slower read pipeline.
    pub remote_line_ns: f64,
}

/// Cores: reading a line a core holds modified snoops the core, which may be asleep.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    pub wake: Tail,
}

/// IOMMU address translation.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IommuProfile {
    pub iotlb_entries: u32,
    /// A page walk on an IO-TLB miss ...
    pub walk_ns: f64,
    /// ... of which its page-table reads occupy the root complex's fabric path this long.
    pub walk_busy_ns: f64,
    /// Walks in flight at once.
    pub walkers: u32,
    /// A request that arrives while its page is being walked is parked and, once the walk
    /// ends, translated again: one such request after another, this long each.
    pub replay_ns: f64,
    /// Snoop control (VT-d): a translated request snoops the cores' caches even when it
    /// carries No Snoop.
    #[serde(default)]
    pub snoop_control: bool,
}

/// One low-power state of the uncore (root complex and the ring behind it).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PowerState {
    pub name: String,
    /// The power controller puts the idle uncore in this state once it has been idle this long ...
    pub idle_ns: f64,
    /// ... and a request that finds it there waits this long for it to wake.
    pub exit: Spread,
}

/// Power management of the uncore: states entered after idle times, left on the next request.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Power {
    /// The power controller looks at the idle time once per tick, so a request finds the
    /// deepest state whose idle time had passed at the last tick before it.
    pub tick_ns: f64,
    pub state: Vec<PowerState>,
    /// A rare stall of a read that woke the uncore from its deepest state (a firmware flow), on
    /// top of the exit.
    pub stall: Tail,
}

/// A host: CPU, root complex, memory, IOMMU.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    pub name: String,
    pub description: String,
    pub sources: Vec<String>,
    pub link: HostLink,
    pub root_complex: RootComplex,
    pub memory: Memory,
    pub cpu: Cpu,
    pub iommu: IommuProfile,
    /// Absent: the uncore never leaves its running state.
    #[serde(default)]
    pub power: Option<Power>,
    /// Sockets a system of this part can have: 2 (absent) for a dual-socket part, where `--numa`
    /// puts device, buffer and warming CPU on either socket; 1 for a single-socket part (Xeon E3),
    /// which has no socket link to cross.
    #[serde(default = "two_sockets")]
    pub sockets: u32,
}

fn two_sockets() -> u32 {
    2
}

/// The device's side of the link.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceLink {
    pub gen: u32,
    pub lanes: u32,
    pub max_mps: u32,
    /// As the driver sets it.
    pub mrrs: u32,
}

/// The DMA engines: one moving data from the host (reads), one to the host (writes), sharing
/// the device's internal bus.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Dma {
    /// Threads issuing DMAs in bandwidth tests, one DMA outstanding each.
    pub workers: u32,
    pub max_transfer: u32,
    /// Read requests the device may have in flight (its tag space).
    pub read_tags: u32,
    /// From a thread's command until the engine takes the DMA.
    pub issue_ns: f64,
    /// Read engine occupancy: per DMA, per read request, per 64 B line; lines of requests of a
    /// full MRRS stream through at `read_full_line_ns`.
    pub read_dma_ns: f64,
    pub read_request_ns: f64,
    pub read_line_ns: f64,
    pub read_full_line_ns: f64,
    /// Write engine occupancy: per DMA, per TLP, per 64 B line, and at least `write_min_ns`
    /// per DMA (the small-write rate limit).
    pub write_dma_ns: f64,
    pub write_tlp_ns: f64,
    pub write_line_ns: f64,
    pub write_min_ns: f64,
    /// Internal bus shared by both engines, per DMA and per 64 B line.
    pub bus_dma_ns: f64,
    pub bus_line_ns: f64,
    /// One DMA's data moves between the PCIe block and device memory line by line: read data
    /// in, write data out. The write engine gathers a whole DMA's data (`write_gather_ns` plus
    /// `write_move_line_ns` per line) before its TLPs leave back to back.
    pub move_line_ns: f64,
    pub write_gather_ns: f64,
    pub write_move_line_ns: f64,
    /// From the last data until the thread sees the DMA done.
    pub complete_ns: f64,
    /// A bandwidth thread's own work between DMAs (claiming the next index).
    pub worker_ns: f64,
    /// Latency loop overhead per sample outside the timed section (address lookup, journal).
    pub loop_ns: f64,
    /// Device offsets that are not a multiple of this take the engines' slow path, which adds
    /// this much engine occupancy per DMA.
    pub fast_align: u32,
    pub read_slow_ns: f64,
    pub write_slow_ns: f64,
    /// Timing noise of the engine per DMA.
    pub jitter: Spread,
}

/// The direct command path (device-initiated PCIe reads/writes through a BAR window).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Cmd {
    pub issue_ns: f64,
    pub complete_ns: f64,
    pub loop_ns: f64,
    /// A write-then-read's write: what its issue adds before it leaves.
    #[serde(default)]
    pub write_ns: f64,
    /// The path's requests carry PCIe's No Snoop attribute: a host that honours it serves a
    /// line a core holds from memory.
    #[serde(default)]
    pub no_snoop: bool,
    /// A read's data reaches the thread one 32-bit word after another: this much per word.
    #[serde(default)]
    pub word_ns: f64,
    /// The path reaches host memory through a BAR window of this many bytes (0: all of it).
    #[serde(default)]
    pub window_bytes: u64,
    /// Moving the window to a command's address: the part before the timed section ...
    #[serde(default)]
    pub window_move_ns: f64,
    /// ... and the part the command itself waits.
    #[serde(default)]
    pub window_wait_ns: f64,
    /// A write's ownership of a whole line it finds in memory is granted this much later than a
    /// DMA write's.
    #[serde(default)]
    pub write_own_memory_ns: f64,
}

/// The device's timestamp counter.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Clock {
    pub mhz: f64,
    /// The counter ticks once per this many cycles.
    pub tick_cycles: u32,
}

/// A DMA-capable device.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    pub name: String,
    pub description: String,
    pub sources: Vec<String>,
    pub link: DeviceLink,
    pub clock: Clock,
    pub dma: Dma,
    pub cmd: Cmd,
}

const HOSTS: [(&str, &str); 4] = [
    ("e5-2637v3", include_str!("../../../../data/profiles/e5-2637v3.toml")),
    ("e3-1226v3", include_str!("../../../../data/profiles/e3-1226v3.toml")),
    (
        "gen4-server",
        include_str!("../../../../data/profiles/gen4-server.toml"),
    ),
    (
        "gen5-server",
        include_str!("../../../../data/profiles/gen5-server.toml"),
    ),
];
const DEVICES: [(&str, &str); 2] = [
    ("nfp6000", include_str!("../../../../data/profiles/nfp6000.toml")),
    (
        "netfpga-sume",
        include_str!("../../../../data/profiles/netfpga-sume.toml"),
    ),
];

/// Names of the built-in host profiles.
pub fn builtin_hosts() -> Vec<&'static str> {
    HOSTS.iter().map(|(n, _)| *n).collect()
}

/// Names of the built-in device profiles.
pub fn builtin_devices() -> Vec<&'static str> {
    DEVICES.iter().map(|(n, _)| *n).collect()
}

impl HostProfile {
    pub fn load(name: &str) -> Result<HostProfile, ProfileError> {
        load(name, &HOSTS, "host")
    }

    /// Parse and check a profile's text (`file` names it in errors).
    pub fn parse(file: &str, text: &str) -> Result<HostProfile, ProfileError> {
        parse(file, text)
    }
}

impl DeviceProfile {
    pub fn load(name: &str) -> Result<DeviceProfile, ProfileError> {
        load(name, &DEVICES, "device")
    }

    /// Parse and check a profile's text (`file` names it in errors).
    pub fn parse(file: &str, text: &str) -> Result<DeviceProfile, ProfileError> {
        parse(file, text)
    }
}

/// Power states: at most 8, each named, entered after 0 to 1 ms idle and left in 0 to 1 ms; the
/// controller's tick more than 0 and at most 1 ms.
fn power(p: &Power) -> Result<(), String> {
    above_zero("power.tick_ns", p.tick_ns, MAX_NS, " ns")?;
    count("power.state (entries)", p.state.len() as u64, 1, 8)?;
    for (i, s) in p.state.iter().enumerate() {
        let key = format!("power.state[{i}]");
        chars(&format!("{key}.name"), &s.name, 64)?;
        between(&format!("{key}.idle_ns"), s.idle_ns, 0.0, MAX_NS, " ns")?;
        spread(&format!("{key}.exit"), &s.exit, MAX_NS)?;
    }
    tail("power.stall", &p.stall)
}

/// The MPS and MRRS values PCIe allows.
const SIZES: [u32; 6] = [128, 256, 512, 1024, 2048, 4096];

/// The longest UpdateFC period: PCIe Base spec r5.0 section 2.6.1.2 has a receiver schedule an
/// UpdateFC for each credit type at least once every 30 µs (-0 %/+50 %).
const MAX_FC_UPDATE_NS: f64 = 45_000.0;

/// Times of a profile by key, with their largest allowed value; all may be 0.
fn times(list: &[(&str, f64, f64)]) -> Result<(), String> {
    list.iter().try_for_each(|&(k, v, hi)| between(k, v, 0.0, hi, " ns"))
}

impl Checked for HostProfile {
    fn check(&self) -> Result<(), String> {
        words(&self.name, &self.description, &self.sources)?;
        one_of("link.max_mps", self.link.max_mps, &SIZES)?;
        one_of("link.rcb", self.link.rcb, &[64, 128])?;
        let (rc, m, io) = (&self.root_complex, &self.memory, &self.iommu);
        above_zero("root_complex.request_ns", rc.request_ns, MAX_REQUEST_NS, " ns")?;
        above_zero("root_complex.line_ns", rc.line_ns, MAX_LINE_NS, " ns")?;
        above_zero("root_complex.write_line_ns", rc.write_line_ns, MAX_LINE_NS, " ns")?;
        above_zero("iommu.walk_ns", io.walk_ns, MAX_NS, " ns")?;
        times(&[
            ("link.wire_ns", self.link.wire_ns, MAX_NS),
            ("root_complex.fixed_ns", rc.fixed_ns, MAX_NS),
            ("root_complex.write_commit_ns", rc.write_commit_ns, MAX_NS),
            ("root_complex.write_own_ns", rc.write_own_ns.unwrap_or(0.0), MAX_NS),
            ("root_complex.write_own_line_ns", rc.write_own_line_ns, MAX_LINE_NS),
            ("root_complex.write_merge_ns", rc.write_merge_ns, MAX_NS),
            ("root_complex.write_snoop_ns", rc.write_snoop_ns, MAX_NS),
            (
                "root_complex.write_own_llc_ns",
                rc.write_own_llc_ns.unwrap_or(0.0),
                MAX_NS,
            ),
            ("memory.ddio_allocate_ns", m.ddio_allocate_ns, MAX_LINE_NS),
            ("memory.remote_ns", m.remote_ns, MAX_NS),
            ("memory.remote_line_ns", m.remote_line_ns, MAX_LINE_NS),
            ("iommu.walk_busy_ns", io.walk_busy_ns, MAX_NS),
            ("iommu.replay_ns", io.replay_ns, MAX_REQUEST_NS),
        ])?;
        count("root_complex.posted_credits", rc.posted_credits, 1, 4096)?;
        rc.fc_update_ns.map_or(Ok(()), |t| {
            between("root_complex.fc_update_ns", t, 1.0, MAX_FC_UPDATE_NS, " ns")
        })?;
        count("memory.llc_bytes", m.llc_bytes, 64 << 10, 1 << 40)?;
        between("memory.ddio_share", m.ddio_share, 0.0, 1.0, "")?;
        spread("memory.llc_hit", &m.llc_hit, MAX_NS)?;
        spread("memory.dram", &m.dram, MAX_NS)?;
        spread("memory.io_line", &m.io_line, MAX_NS)?;
        tail("memory.dram_tail", &m.dram_tail)?;
        tail("cpu.wake", &self.cpu.wake)?;
        count("iommu.iotlb_entries", io.iotlb_entries, 1, 1 << 16)?;
        count("iommu.walkers", io.walkers, 1, 256)?;
        count("sockets", self.sockets, 1, 2)?;
        self.power.as_ref().map_or(Ok(()), power)
    }
}

impl Checked for DeviceProfile {
    fn check(&self) -> Result<(), String> {
        words(&self.name, &self.description, &self.sources)?;
        one_of("link.gen", self.link.gen, &[1, 2, 3, 4, 5, 6, 7])?;
        one_of("link.lanes", self.link.lanes, &[1, 2, 4, 8, 16, 32])?;
        one_of("link.max_mps", self.link.max_mps, &SIZES)?;
        one_of("link.mrrs", self.link.mrrs, &SIZES)?;
        between("clock.mhz", self.clock.mhz, 1.0, 100_000.0, " MHz")?;
        count("clock.tick_cycles", self.clock.tick_cycles, 1, 1024)?;
        let d = &self.dma;
        count("dma.workers", d.workers, 1, 4096)?;
        one_of("dma.max_transfer", d.max_transfer, &[1024, 2048, 4096])?;
        count("dma.read_tags", d.read_tags, 1, 16384)?;
        count("cmd.window_bytes", self.cmd.window_bytes, 0, 1 << 40)?;
        one_of("dma.fast_align", d.fast_align, &[1, 2, 4, 8, 16, 32, 64])?;
        times(&[
            ("dma.issue_ns", d.issue_ns, MAX_NS),
            ("dma.read_dma_ns", d.read_dma_ns, MAX_NS),
            ("dma.read_request_ns", d.read_request_ns, MAX_REQUEST_NS),
            ("dma.read_line_ns", d.read_line_ns, MAX_LINE_NS),
            ("dma.read_full_line_ns", d.read_full_line_ns, MAX_LINE_NS),
            ("dma.write_dma_ns", d.write_dma_ns, MAX_NS),
            ("dma.write_tlp_ns", d.write_tlp_ns, MAX_REQUEST_NS),
            ("dma.write_line_ns", d.write_line_ns, MAX_LINE_NS),
            ("dma.write_min_ns", d.write_min_ns, MAX_NS),
            ("dma.bus_dma_ns", d.bus_dma_ns, MAX_NS),
            ("dma.bus_line_ns", d.bus_line_ns, MAX_LINE_NS),
            ("dma.move_line_ns", d.move_line_ns, MAX_LINE_NS),
            ("dma.write_gather_ns", d.write_gather_ns, MAX_NS),
            ("dma.write_move_line_ns", d.write_move_line_ns, MAX_LINE_NS),
            ("dma.complete_ns", d.complete_ns, MAX_NS),
            ("dma.worker_ns", d.worker_ns, MAX_NS),
            ("dma.loop_ns", d.loop_ns, MAX_NS),
            ("dma.read_slow_ns", d.read_slow_ns, MAX_NS),
            ("dma.write_slow_ns", d.write_slow_ns, MAX_NS),
            ("cmd.issue_ns", self.cmd.issue_ns, MAX_NS),
            ("cmd.complete_ns", self.cmd.complete_ns, MAX_NS),
            ("cmd.loop_ns", self.cmd.loop_ns, MAX_NS),
            ("cmd.write_ns", self.cmd.write_ns, MAX_NS),
            ("cmd.word_ns", self.cmd.word_ns, MAX_LINE_NS),
            ("cmd.window_move_ns", self.cmd.window_move_ns, MAX_NS),
            ("cmd.window_wait_ns", self.cmd.window_wait_ns, MAX_NS),
            ("cmd.write_own_memory_ns", self.cmd.write_own_memory_ns, MAX_NS),
        ])?;
        spread("dma.jitter", &d.jitter, MAX_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_load() {
        for h in builtin_hosts() {
            HostProfile::load(h).unwrap();
        }
        for d in builtin_devices() {
            DeviceProfile::load(d).unwrap();
        }
    }

    #[test]
    fn unknown_profile_lists_the_builtin_ones() {
        let e = HostProfile::load("pentium").unwrap_err().to_string();
        assert!(e.contains("unknown host profile") && e.contains("e5-2637v3"), "{e}");
    }

    #[test]
    fn bad_values_name_file_and_key() {
        let text = include_str!("../../../../data/profiles/nfp6000.toml").replace("mrrs = 512", "mrrs = 500");
        let e = parse::<DeviceProfile>("mine.toml", &text).unwrap_err().to_string();
        assert!(e.starts_with("mine.toml: link.mrrs = 500: must be one of"), "{e}");
        let text = include_str!("../../../../data/profiles/e5-2637v3.toml").replace("[cpu]", "[cpu]\nturbo = true");
        let e = parse::<HostProfile>("h.toml", &text).unwrap_err().to_string();
        assert!(e.contains("turbo"), "{e}");
    }

    #[test]
    fn words_are_bounded_so_a_profile_stays_small() {
        let text = include_str!("../../../../data/profiles/e5-2637v3.toml");
        let long = text.replace("name = \"e5-2637v3\"", &format!("name = \"{}\"", "x".repeat(65)));
        let e = parse::<HostProfile>("h.toml", &long).unwrap_err().to_string();
        assert_eq!(e, "h.toml: name: 65 characters: at most 64");
        let many = text.replace("sources = [", &format!("sources = [{}", "\"s\", ".repeat(32)));
        let e = parse::<HostProfile>("h.toml", &many).unwrap_err().to_string();
        assert_eq!(e, "h.toml: sources: 36 entries: at most 32");
    }
}
