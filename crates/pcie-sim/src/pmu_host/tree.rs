//! The simulated host's sysfs tree, as root sees a real one: one DWC PMU per root port; every
//! PCI function with its ids, class, driver, link speed and width at both ends of each link,
//! NUMA node and local CPUs, power state, a 4 KiB config space (PCI Express capability with
//! MPS/MRRS, tags, link capabilities, control and status; AER extended capability) and AER
//! counter files; the NUMA nodes and the kernel's ASPM policy.
//!
//! The profile's `[[fault]]`s show here as a real host shows them: a link that trained low in the
//! speed and width files and Link Status, MPS/MRRS in Device Control, ASPM in Link Control, and
//! correctable errors counted in `aer_dev_correctable` and the root port's
//! `aer_rootport_total_err_cor`, which [`SimTree::refresh`] rewrites as simulated time goes on,
//! with each device's block or network traffic counters (what its port's workloads moved).

use super::fault::{FaultSpec, CORRECTABLE_KINDS};
use super::profile::{parse_bdf, DeviceSpec, PmuDriver, PmuHostProfile, PortSpec};
use super::sysfs_writer::{dwc_pmu, DwcVariant, SysfsWriter};
use super::PmuHost;
use pcie_model::Generation;
use pcie_sysfs::{Aspm, ConfigBuilder, LinkSetup, PortType};
use std::io;

/// The kernel's uncorrectable error names, in `aer_dev_nonfatal`/`aer_dev_fatal`'s order (Linux
/// `drivers/pci/pcie/aer.c`, `aer_uncorrectable_error_string`).
const UNCORRECTABLE_KINDS: [&str; 19] = [
    "Undefined",
    "DLP",
    "SDES",
    "TLP",
    "FCP",
    "CmpltTO",
    "CmpltAbrt",
    "UnxCmplt",
    "RxOF",
    "MalfTLP",
    "ECRC",
    "UnsupReq",
    "ACSViol",
    "UncorrIntErr",
    "BlockedTLP",
    "AtomicOpBlocked",
    "TLPBlockedErr",
    "PoisonTLPBlocked",
    "DMWrReqBlocked",
];

/// The ASPM policy file's text: the kernel's four policies, `default` in force.
const ASPM_POLICY: &str = "[default] performance powersave powersupersave";

/// How long the simulated host has been up when the simulation starts: AER counters count
/// since boot, so a faulty function shows an hour of errors from the start (a count to check
/// with `check`'s totals) and grows from there (a rate).
const UP_BEFORE_NS: u64 = 3600 * 1_000_000_000;

/// The Root Port's ids on the Yitian 710 (DesignWare, Alibaba's vendor id).
const ROOT_PORT_IDS: (u16, u16) = (0x1ded, 0x8000);

/// A function whose correctable errors grow: where its files are and its fault.
struct Growing {
    bdf: String,
    /// The root port above it (or itself), whose totals count its errors too.
    port: String,
    fault: FaultSpec,
}

/// A port's device as the kernel's block or network class shows it: the directory of its
/// counters (below the device's function) and whether it is a network interface.
struct ClassDevice {
    port: usize,
    dir: String,
    net: bool,
}

impl ClassDevice {
    /// Below the device function of port `port`, as its driver's class names it: an NVMe
    /// namespace (`nvme/nvme0/nvme0n1`), a SATA disk behind an AHCI controller
    /// (`ata1/host0/target0:0:0/0:0:0:0/block/sda`) or an Ethernet interface (`net/eth0`);
    /// linked from `sys/block` or `sys/class/net`. `k` numbers devices of a kind.
    fn write(w: &SysfsWriter, port: usize, func: &str, dev: &DeviceSpec, k: usize) -> io::Result<Option<ClassDevice>> {
        let (below, link, net) = if dev.nic.is_some() {
            (format!("net/eth{k}"), format!("sys/class/net/eth{k}"), true)
        } else if dev.storage.is_none() {
            return Ok(None);
        } else if dev.class >> 8 == 0x0108 {
            let name = format!("nvme{k}n1");
            (format!("nvme/nvme{k}/{name}"), format!("sys/block/{name}"), false)
        } else {
            let disk = format!("sd{}", char::from(b'a' + (k % 26) as u8));
            (
                format!("ata{}/host{k}/target{k}:0:0/{k}:0:0:0/block/{disk}", k + 1),
                format!("sys/block/{disk}"),
                false,
            )
        };
        let dir = format!("{func}/{below}");
        let up = "../".repeat(link.matches('/').count());
        w.symlink(&link, &format!("{up}{dir}"))?;
        let d = ClassDevice { port, dir, net };
        d.count(w, (0, 0), false)?;
        Ok(Some(d))
    }

    /// Writes the counters for `bytes` moved to and from the host (fio's and the NIC's counts:
    /// block reads and received bytes first), replacing the files after the first writing.
    fn count(&self, w: &SysfsWriter, (up, down): (u64, u64), replace: bool) -> io::Result<()> {
        let put = |rel: String, text: String| {
            if replace {
                w.replace(&rel, &text)
            } else {
                w.raw(&rel, &text)
            }
        };
        if self.net {
            put(format!("{}/statistics/rx_bytes", self.dir), format!("{up}\n"))?;
            put(format!("{}/statistics/tx_bytes", self.dir), format!("{down}\n"))
        } else {
            // The kernel's 17 fields; sectors (512 B) read and written are the 3rd and 7th.
            let stat = format!("0 0 {} 0 0 0 {} 0 0 0 0 0 0 0 0 0 0\n", up / 512, down / 512);
            put(format!("{}/stat", self.dir), stat)
        }
    }
}

/// The simulated host's tree (removed with it) and the AER counters and the devices' traffic
/// counters that grow in it.
pub struct SimTree {
    writer: SysfsWriter,
    growing: Vec<Growing>,
    devices: Vec<ClassDevice>,
}

impl SimTree {
    /// Write `host`'s tree into a temporary directory, with AER counters at time 0.
    pub fn write(host: &PmuHost) -> io::Result<SimTree> {
        let p = host.profile();
        let w = SysfsWriter::temporary(&format!("sim-{}", p.name))?;
        let variant = match p.pmu.driver {
            PmuDriver::DwcRootport => DwcVariant::Upstream,
            PmuDriver::PcieBdf => DwcVariant::V1,
        };
        // Yitian 710 cores are Arm Neoverse N2 (implementer 0x41, part 0xd49).
        w.raw(
            "proc/cpuinfo",
            "processor\t: 0\nBogoMIPS\t: 100.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd49\n\n",
        )?;
        w.attr("sys/module/pcie_aspm/parameters/policy", ASPM_POLICY)?;
        let mut dies: Vec<u32> = p.ports.iter().map(|q| q.die).collect();
        dies.sort_unstable();
        dies.dedup();
        for die in dies {
            w.attr(&format!("sys/devices/system/node/node{die}/cpulist"), &cpus(p, die))?;
        }
        for (i, port) in p.ports.iter().enumerate() {
            write_port(&w, p, host.link(i).is_some(), port)?;
            let name = pmu_name(p.pmu.driver, &port.bdf).expect("profile ports have valid BDFs");
            let cpu = (port.die * p.pmu.cpus_per_die).to_string();
            dwc_pmu(&w, &name, p.pmu.first_type + i as u32, &cpu, variant)?;
            w.pmu_attr(
                &name,
                "perf_event_mux_interval_ms",
                &format!("{}", p.pmu.mux_interval_ms),
            )?;
        }
        write_rcieps(&w, p)?;
        let growing = p
            .faults
            .iter()
            .filter(|f| f.aer_correctable_per_s.is_some_and(|r| r > 0.0))
            .filter_map(|f| {
                let port = p
                    .ports
                    .iter()
                    .find(|q| q.bdf == f.bdf || q.device_bdf.as_ref() == Some(&f.bdf))?;
                Some(Growing {
                    bdf: f.bdf.clone(),
                    port: port.bdf.clone(),
                    fault: f.clone(),
                })
            })
            .collect();
        let mut devices = Vec::new();
        let (mut nics, mut disks, mut nvmes) = (0, 0, 0);
        for (i, port) in p.ports.iter().enumerate() {
            let (Some(dev), Some(bdf)) = (p.device_of(port), &port.device_bdf) else {
                continue;
            };
            let k = if dev.nic.is_some() {
                &mut nics
            } else if dev.class >> 8 == 0x0108 {
                &mut nvmes
            } else {
                &mut disks
            };
            let func = function_dir(&w, bdf)?;
            if let Some(d) = ClassDevice::write(&w, i, &func, dev, *k)? {
                devices.push(d);
                *k += 1;
            }
        }
        let mut tree = SimTree {
            writer: w,
            growing,
            devices,
        };
        tree.refresh(0, |_| (0, 0))?;
        Ok(tree)
    }

    /// The tree's root, laid out like `/`.
    pub fn path(&self) -> &std::path::Path {
        self.writer.path()
    }

    /// Rewrite the AER counters that grow to their counts at `now_ns` of simulated time, and
    /// each device's traffic counters to what the workloads on its port moved (`port_bytes`:
    /// to and from the host). Each file is replaced whole (written beside it, then renamed),
    /// so a reader never sees half.
    pub fn refresh(&mut self, now_ns: u64, port_bytes: impl Fn(usize) -> (u64, u64)) -> io::Result<()> {
        for d in &self.devices {
            d.count(&self.writer, port_bytes(d.port), true)?;
        }
        let now_ns = now_ns.saturating_add(UP_BEFORE_NS);
        for g in &self.growing {
            let mut counts = [0u64; CORRECTABLE_KINDS.len()];
            counts[g.fault.correctable_kind()] = g.fault.correctable_by(now_ns);
            write_aer(
                &self.writer,
                &g.bdf,
                "aer_dev_correctable",
                &CORRECTABLE_KINDS,
                &counts,
                "COR",
            )?;
        }
        let mut ports: Vec<&str> = self.growing.iter().map(|g| g.port.as_str()).collect();
        ports.dedup();
        for port in ports {
            let below: u64 = self
                .growing
                .iter()
                .filter(|g| g.port == port)
                .map(|g| g.fault.correctable_by(now_ns))
                .sum();
            self.writer.replace(
                &format!("sys/bus/pci/devices/{port}/aer_rootport_total_err_cor"),
                &format!("{below}\n"),
            )?;
        }
        Ok(())
    }
}

/// A function's real directory in the tree, relative to its root (`sys/devices/pci.../BDF`).
fn function_dir(w: &SysfsWriter, bdf: &str) -> io::Result<String> {
    let b = bdf.parse().map_err(io::Error::other)?;
    let dev = pcie_sysfs::PciDevice::read(w.path(), b).map_err(io::Error::other)?;
    let rel = dev.dir().strip_prefix(w.path()).map_err(io::Error::other)?;
    Ok(rel.to_string_lossy().into_owned())
}

/// The CPUs of `die`, as a cpulist (`0-63`).
fn cpus(p: &PmuHostProfile, die: u32) -> String {
    let n = p.pmu.cpus_per_die;
    format!("{}-{}", die * n, die * n + n - 1)
}

/// sysfs `current_link_speed` text and GT/s of a generation number (1 to 6, as profiles check).
fn generation(gen: u32) -> Generation {
    Generation::ALL[gen.clamp(1, 6) as usize - 1]
}

/// A link's (generation, width).
type Rate = (u32, u32);

/// What one function shows, beyond where it sits.
struct Function<'a> {
    ids: (u16, u16),
    class: u32,
    driver: Option<&'a str>,
    /// `None`: conventional PCI (no PCI Express capability, no link, no AER).
    port_type: Option<PortType>,
    /// Its link's maximum (generation, width) and the trained one (`None`: no link up).
    link: Option<(Rate, Option<Rate>)>,
    mps: (u32, u32),
    mrrs: u32,
    fault: Option<&'a FaultSpec>,
    die: u32,
    root_port: bool,
}

/// An AER counter file as the kernel prints it: `Name count` per type, then `TOTAL_ERR_<total>`.
fn write_aer(w: &SysfsWriter, bdf: &str, file: &str, kinds: &[&str], counts: &[u64], total: &str) -> io::Result<()> {
    let mut text = String::new();
    for (k, n) in kinds.iter().zip(counts) {
        text.push_str(&format!("{k} {n}\n"));
    }
    text.push_str(&format!("TOTAL_ERR_{total} {}\n", counts.iter().sum::<u64>()));
    w.replace(&format!("sys/bus/pci/devices/{bdf}/{file}"), &text)
}

fn write_function(w: &SysfsWriter, p: &PmuHostProfile, chain: &[&str], bdf: &str, f: &Function) -> io::Result<()> {
    let ids = [
        format!("{:#06x}", f.ids.0),
        format!("{:#06x}", f.ids.1),
        format!("{:#08x}", f.class),
    ];
    let (numa, local) = (f.die.to_string(), cpus(p, f.die));
    let widths: Vec<String> = f.link.map_or(Vec::new(), |((_, lanes), trained)| {
        vec![lanes.to_string(), trained.map_or(0, |t| t.1).to_string()]
    });
    let mut attrs = vec![
        ("vendor", ids[0].as_str()),
        ("device", ids[1].as_str()),
        ("class", ids[2].as_str()),
        ("numa_node", numa.as_str()),
        ("local_cpulist", local.as_str()),
        ("power_state", "D0"),
        ("power/runtime_status", "active"),
    ];
    // ASPM takes effect only where both ends of a link enable it (the kernel sets both): a
    // root port enables what the fault of the device below it asks for.
    let below = || {
        let port = p.ports.iter().find(|q| q.bdf == bdf)?;
        p.fault(port.device_bdf.as_deref()?)?.aspm
    };
    let aspm = f
        .fault
        .and_then(|x| x.aspm)
        .or_else(|| f.root_port.then(below).flatten())
        .map(|a| a.states())
        .unwrap_or((false, false));
    let link = f.link.map(|((gen, lanes), trained)| {
        let (cur_gts, cur_width) = trained.map_or((0.0, 0), |(g, l)| (generation(g).gt_per_s(), l));
        LinkSetup {
            max_gts: generation(gen).gt_per_s(),
            max_width: lanes,
            gts: cur_gts,
            width: cur_width,
            aspm_supported: Aspm { l0s: true, l1: true },
            aspm_enabled: Aspm {
                l0s: aspm.0,
                l1: aspm.1,
            },
        }
    });
    if let Some(((gen, _), trained)) = f.link {
        attrs.extend([
            (
                "current_link_speed",
                trained.map_or("Unknown", |t| generation(t.0).sysfs_speed()),
            ),
            ("max_link_speed", generation(gen).sysfs_speed()),
            ("current_link_width", widths[1].as_str()),
            ("max_link_width", widths[0].as_str()),
        ]);
    }
    w.pci(chain, bdf, &attrs, f.driver)?;
    let config = match f.port_type {
        None => ConfigBuilder::conventional(f.ids.0, f.ids.1, f.class),
        Some(t) => {
            let mps = f.fault.and_then(|x| x.mps).unwrap_or(f.mps.1);
            let mrrs = f.fault.and_then(|x| x.mrrs).unwrap_or(f.mrrs);
            let b = ConfigBuilder::new(f.ids.0, f.ids.1, f.class, t)
                .mps(f.mps.0, mps)
                .mrrs(mrrs)
                .aer();
            match link {
                Some(l) => b.link(l),
                None => b,
            }
        }
    };
    pcie_sysfs::tree::write_config(w.path(), bdf, &config.build())?;
    if f.port_type.is_none() {
        return Ok(());
    }
    let none = [0u64; UNCORRECTABLE_KINDS.len()];
    write_aer(
        w,
        bdf,
        "aer_dev_correctable",
        &CORRECTABLE_KINDS,
        &none[..CORRECTABLE_KINDS.len()],
        "COR",
    )?;
    write_aer(w, bdf, "aer_dev_nonfatal", &UNCORRECTABLE_KINDS, &none, "NONFATAL")?;
    write_aer(w, bdf, "aer_dev_fatal", &UNCORRECTABLE_KINDS, &none, "FATAL")?;
    if f.root_port {
        for kind in ["cor", "nonfatal", "fatal"] {
            w.attr(&format!("sys/bus/pci/devices/{bdf}/aer_rootport_total_err_{kind}"), "0")?;
        }
    }
    Ok(())
}

/// The port type a device shows below a root port: a bridge is a PCI Express to PCI bridge
/// (type 7), anything else an endpoint.
fn device_type(d: &DeviceSpec) -> PortType {
    if d.class >> 8 == 0x0604 {
        PortType::Other(7)
    } else {
        PortType::Endpoint
    }
}

fn device<'a>(d: &'a DeviceSpec, fault: Option<&'a FaultSpec>, die: u32) -> Function<'a> {
    Function {
        ids: (d.vendor as u16, d.device as u16),
        class: d.class,
        driver: (!d.driver.is_empty()).then_some(d.driver.as_str()),
        port_type: Some(device_type(d)),
        link: None,
        mps: (d.max_mps, d.max_mps),
        mrrs: d.mrrs,
        fault,
        die,
        root_port: false,
    }
}

fn write_port(w: &SysfsWriter, p: &PmuHostProfile, up: bool, port: &PortSpec) -> io::Result<()> {
    let trained = p.trained(port).filter(|_| up);
    let below: Vec<&str> = port
        .device_bdf
        .iter()
        .map(String::as_str)
        .chain(port.functions.iter().map(|f| f.bdf.as_str()))
        .collect();
    let buses: Vec<u8> = below.iter().filter_map(|b| parse_bdf(b)).map(|b| b.bus).collect();
    let path_mps = p
        .device_of(port)
        .map_or(p.host.max_mps, |d| d.max_mps.min(p.host.max_mps));
    let rp = Function {
        ids: ROOT_PORT_IDS,
        class: 0x060400,
        driver: Some("pcieport"),
        port_type: Some(PortType::RootPort),
        link: Some(((port.gen, port.lanes), trained)),
        mps: (p.host.max_mps, path_mps),
        mrrs: 512,
        fault: p.fault(&port.bdf),
        die: port.die,
        root_port: true,
    };
    write_function(w, p, &[], &port.bdf, &rp)?;
    if let (Some(lo), Some(hi)) = (buses.iter().min(), buses.iter().max()) {
        w.attr(
            &format!("sys/bus/pci/devices/{}/secondary_bus_number", port.bdf),
            &lo.to_string(),
        )?;
        w.attr(
            &format!("sys/bus/pci/devices/{}/subordinate_bus_number", port.bdf),
            &hi.to_string(),
        )?;
    }
    let (Some(dev), Some(dev_bdf)) = (p.device_of(port), &port.device_bdf) else {
        return Ok(());
    };
    let (mps, mrrs) = p.device_control(port).unwrap_or((dev.max_mps, dev.mrrs));
    let mut f = device(dev, p.fault(dev_bdf), port.die);
    (f.mps, f.mrrs, f.link) = ((dev.max_mps, mps), mrrs, Some(((dev.gen, dev.lanes), trained)));
    write_function(w, p, &[&port.bdf], dev_bdf, &f)?;
    let dev_bus = parse_bdf(dev_bdf).map(|b| b.bus);
    for g in &port.functions {
        let Some(d) = p.device(&g.device) else { continue };
        // Behind the device when it is a bridge and the function sits on a further bus.
        let behind = dev.class >> 8 == 0x0604 && parse_bdf(&g.bdf).map(|b| b.bus) != dev_bus;
        let chain: Vec<&str> = if behind {
            vec![&port.bdf, dev_bdf]
        } else {
            vec![&port.bdf]
        };
        let mut f = device(d, None, port.die);
        if d.gen == 0 || d.lanes == 0 {
            // Conventional PCI behind the bridge.
            f.port_type = None;
        } else if !behind {
            // Another function of the device shares its link; a fault names one function.
            f.mps.1 = d.max_mps.min(p.host.max_mps);
            f.link = Some(((d.gen, d.lanes), trained));
        } else {
            f.link = Some(((d.gen, d.lanes), Some((d.gen, d.lanes))));
        }
        write_function(w, p, &chain, &g.bdf, &f)?;
    }
    Ok(())
}

/// Functions on a root bus outside every root port, on the die of the root ports below them:
/// integrated endpoints (type 9) and event collectors (class 0807xx, type 10), with no link.
fn write_rcieps(w: &SysfsWriter, p: &PmuHostProfile) -> io::Result<()> {
    for r in &p.rcieps {
        let (Some(d), Some(bus)) = (p.device(&r.device), parse_bdf(&r.bdf).map(|b| b.bus)) else {
            continue;
        };
        let die = p
            .ports
            .iter()
            .filter(|q| parse_bdf(&q.bdf).is_some_and(|b| b.bus <= bus))
            .max_by_key(|q| parse_bdf(&q.bdf).map(|b| b.bus))
            .map_or(0, |q| q.die);
        let mut f = device(d, p.fault(&r.bdf), die);
        f.port_type = Some(if d.class >> 8 == 0x0807 {
            PortType::EventCollector
        } else {
            PortType::IntegratedEndpoint
        });
        write_function(w, p, &[], &r.bdf, &f)?;
    }
    Ok(())
}

/// The perf PMU name the driver gives a root port: `dwc_rootport_<sbdf>` upstream,
/// `pcie_bdf_<seg,bus,dev,fn bytes>` for the pre-upstream driver.
pub fn pmu_name(driver: PmuDriver, bdf: &str) -> Option<String> {
    let b = parse_bdf(bdf)?;
    let (d, bus, dev, f) = (b.domain as u64, b.bus as u64, b.dev as u64, b.func as u64);
    Some(match driver {
        PmuDriver::DwcRootport => format!("dwc_rootport_{:x}", d << 16 | bus << 8 | dev << 3 | f),
        PmuDriver::PcieBdf => format!("pcie_bdf_{:x}", d << 24 | bus << 16 | dev << 8 | f),
    })
}
