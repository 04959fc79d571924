//! A storage workload on the simulated host, with fio's option names:
//! `port=00:02.0,rw=read,bs=1M,iodepth=64,numjobs=4[,runtime=20s][,size=2G]`.

use super::profile::{DeviceSpec, PmuHostProfile};
use pcie_sysfs::Bdf;
use std::fmt;

/// fio's `rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    Read,
    Write,
    /// Reads and writes, half each (fio's `rwmixread=50`), chosen per I/O.
    ReadWrite,
}

impl Rw {
    pub const NAMES: [&'static str; 3] = ["read", "write", "readwrite"];

    pub fn parse(s: &str) -> Option<Rw> {
        match s {
            "read" => Some(Rw::Read),
            "write" => Some(Rw::Write),
            "readwrite" | "rw" => Some(Rw::ReadWrite),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Rw::NAMES[self as usize]
    }
}

/// One fio-like job set on one root port's storage device.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageJob {
    /// The root port, `dddd:bb:dd.f`.
    pub port: String,
    pub rw: Rw,
    pub bs: u32,
    pub iodepth: u32,
    pub numjobs: u32,
    /// Stop submitting after this many seconds ...
    pub runtime: Option<f64>,
    /// ... or after this many bytes per job (fio's `size`), whichever comes first.
    pub size: Option<u64>,
}

/// A workload that cannot run: the key and value at fault (empty for the whole spec) and what
/// is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl WorkloadError {
    fn spec(reason: String) -> WorkloadError {
        WorkloadError {
            key: String::new(),
            value: String::new(),
            reason,
        }
    }
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}={}: {}", self.key, self.value, self.reason)
        }
    }
}

impl std::error::Error for WorkloadError {}

const MAX_BS: u64 = 16 << 20;
/// Bytes one job may move: 1 TiB, half an hour of the fastest simulated SSD.
const MAX_JOB_SIZE: u64 = 1 << 40;
/// Slowest NIC rate other than idle: 1 Mb/s, a batch of jumbo frames every 5 minutes at most.
const MIN_GBPS: f64 = 0.001;

/// A size with fio's suffixes (k, m, g, t; powers of 1024; an optional trailing `b`/`ib`).
pub fn parse_size(s: &str) -> Option<u64> {
    let l = s.trim().to_ascii_lowercase();
    let l = l.strip_suffix("ib").or_else(|| l.strip_suffix('b')).unwrap_or(&l);
    let (num, mult) = match l.char_indices().last()? {
        (i, 'k') => (&l[..i], 1u64 << 10),
        (i, 'm') => (&l[..i], 1 << 20),
        (i, 'g') => (&l[..i], 1 << 30),
        (i, 't') => (&l[..i], 1 << 40),
        _ => (l, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// A duration with fio's suffixes (`us`, `ms`, `s`, `m`, `h`; plain numbers are seconds).
pub fn parse_duration(s: &str) -> Option<f64> {
    let l = s.trim().to_ascii_lowercase();
    let (num, mult) = [("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
        .iter()
        .find_map(|(suf, m)| l.strip_suffix(suf).map(|n| (n.to_string(), *m)))
        .unwrap_or((l.clone(), 1.0));
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v * mult)
}

/// `00:02.0` or `0000:00:02.0` → `0000:00:02.0`.
pub fn normalise_bdf(s: &str) -> Option<String> {
    let b: Bdf = s.parse().ok()?;
    (b.domain <= 0xffff).then(|| b.to_string())
}

fn bad(key: &str, value: &str, allowed: &str) -> WorkloadError {
    WorkloadError {
        key: key.to_string(),
        value: value.to_string(),
        reason: allowed.to_string(),
    }
}

/// Traffic of a NIC behind a root port: packets of `pkt` bytes at `rx_gbps` from the network
/// to the host and `tx_gbps` from the host to the network.
#[derive(Debug, Clone, PartialEq)]
pub struct NicJob {
    pub port: String,
    pub rx_gbps: f64,
    pub tx_gbps: f64,
    pub pkt: u32,
    pub runtime: Option<f64>,
}

/// A workload on the simulated host: storage I/O, or NIC traffic, by what is behind the port.
#[derive(Debug, Clone, PartialEq)]
pub enum HostWorkload {
    Storage(StorageJob),
    Nic(NicJob),
}

const STORAGE_ONLY: [&str; 5] = ["rw", "bs", "iodepth", "numjobs", "size"];
const NIC_ONLY: [&str; 3] = ["rx", "tx", "pkt"];

/// Longest spec: every key with a long value fits many times over.
const MAX_SPEC_CHARS: usize = 512;

/// What a workload spec looks like, for messages about its shape.
const SYNTAX: &str = "a workload is port=BDF and KEY=VALUE pairs, separated by commas \
     (e.g. port=00:02.0,rw=read,bs=1M or port=30:03.0,rx=40); \
     keys: port, rw, bs, iodepth, numjobs, runtime, size (storage), rx, tx, pkt, runtime (NIC)";

/// `key=value,...` pairs and the normalised `port`.
fn pairs(text: &str) -> Result<(String, Vec<(String, String)>), WorkloadError> {
    let n = text.chars().count();
    if n > MAX_SPEC_CHARS {
        return Err(WorkloadError::spec(format!(
            "--workload: {n} characters: at most {MAX_SPEC_CHARS} ({SYNTAX})"
        )));
    }
    let mut port = None;
    let mut out: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| WorkloadError::spec(format!("--workload {text:?}: {part:?} is not KEY=VALUE; {SYNTAX}")))?;
        let k = k.trim();
        if k == "port" && port.is_some() || out.iter().any(|(o, _)| o == k) {
            return Err(WorkloadError::spec(format!("--workload {text:?}: {k} is given twice")));
        }
        match k {
            "port" => port = Some(check_port(v)?),
            k if k == "runtime" || STORAGE_ONLY.contains(&k) || NIC_ONLY.contains(&k) => {
                out.push((k.to_string(), v.trim().to_string()))
            }
            k => {
                return Err(WorkloadError::spec(format!(
                    "--workload {text:?}: {k:?} is not a key; {SYNTAX}"
                )))
            }
        }
    }
    let port = port.ok_or_else(|| WorkloadError::spec(format!("--workload {text:?}: needs port=BDF; {SYNTAX}")))?;
    Ok((port, out))
}

/// A key of the other kind of workload on `port`: the port lacks that kind of device.
fn wrong_kind(host: &PmuHostProfile, port: &str, key: &str, value: &str, nic: bool) -> WorkloadError {
    let Some(p) = host.ports.iter().find(|p| p.bdf == port) else {
        return no_such_port(host, port);
    };
    let (lacks, kind, with): (&str, &str, Vec<&str>) = if nic {
        ("NIC", "NIC", ports_with(host, |d| d.nic.is_some()))
    } else {
        ("storage device", "storage", ports_with(host, |d| d.storage.is_some()))
    };
    let holds = match host.device_of(p) {
        Some(d) => format!("it holds a {} ({})", d.name, d.description),
        None => "it is empty".to_string(),
    };
    bad(
        key,
        value,
        &format!(
            "port {port} has no {lacks} ({holds}); {kind} ports: {}",
            with.join(", ")
        ),
    )
}

/// Root ports whose device carries the workload kind `has`.
fn ports_with(host: &PmuHostProfile, has: impl Fn(&DeviceSpec) -> bool) -> Vec<&str> {
    host.ports
        .iter()
        .filter(|p| host.device_of(p).is_some_and(&has))
        .map(|p| p.bdf.as_str())
        .collect()
}

/// Where workloads can run, for messages about a port.
fn places(host: &PmuHostProfile) -> String {
    format!(
        "root ports with a storage device: {}; with a NIC: {}",
        ports_with(host, |d| d.storage.is_some()).join(", "),
        ports_with(host, |d| d.nic.is_some()).join(", ")
    )
}

fn no_such_port(host: &PmuHostProfile, port: &str) -> WorkloadError {
    bad(
        "port",
        port,
        &format!("no such root port on {}; {}", host.name, places(host)),
    )
}

impl HostWorkload {
    /// Parse `port=BDF,key=value,...`: storage keys (rw, bs, iodepth, numjobs, runtime, size)
    /// on a storage port, NIC keys (rx, tx in Gb/s, pkt, runtime) on a NIC port.
    pub fn parse(host: &PmuHostProfile, text: &str) -> Result<HostWorkload, WorkloadError> {
        let (port, _) = pairs(text)?;
        let nic = host
            .ports
            .iter()
            .find(|p| p.bdf == port)
            .and_then(|p| host.device_of(p))
            .and_then(|d| d.nic.as_ref());
        match nic {
            Some(n) => NicJob::parse(host, text, port, n.line_gbps).map(HostWorkload::Nic),
            None => StorageJob::parse(host, text).map(HostWorkload::Storage),
        }
    }

    pub fn port(&self) -> &str {
        match self {
            HostWorkload::Storage(j) => &j.port,
            HostWorkload::Nic(j) => &j.port,
        }
    }
}

impl NicJob {
    fn parse(host: &PmuHostProfile, text: &str, port: String, line_gbps: f64) -> Result<NicJob, WorkloadError> {
        let mut job = NicJob {
            port: port.clone(),
            rx_gbps: 0.0,
            tx_gbps: 0.0,
            pkt: 1500,
            runtime: None,
        };
        for (k, v) in pairs(text)?.1 {
            let rate = || {
                match v.parse::<f64>() {
                Ok(g) if g == 0.0 || (MIN_GBPS..=line_gbps).contains(&g) => Ok(g),
                _ => Err(bad(
                    &k,
                    &v,
                    &format!(
                        "must be a rate in Gb/s from 0 to {line_gbps} (the NIC's line rate): 0 (idle) or at least {MIN_GBPS}"
                    ),
                )),
            }
            };
            match k.as_str() {
                "rx" => job.rx_gbps = rate()?,
                "tx" => job.tx_gbps = rate()?,
                "pkt" => {
                    job.pkt = match v.parse::<u32>() {
                        Ok(p) if (64..=9216).contains(&p) => p,
                        _ => return Err(bad("pkt", &v, "must be a packet size from 64 to 9216 bytes")),
                    }
                }
                "runtime" => job.runtime = Some(parse_runtime(&v)?),
                _ => return Err(wrong_kind(host, &port, &k, &v, false)),
            }
        }
        Ok(job)
    }
}

impl StorageJob {
    /// Check a job against the host: the port must exist and have a storage device.
    pub fn new(host: &PmuHostProfile, job: StorageJob) -> Result<StorageJob, WorkloadError> {
        match host.ports.iter().find(|p| p.bdf == job.port) {
            None => Err(no_such_port(host, &job.port)),
            Some(p) if host.device_of(p).is_none_or(|d| d.storage.is_none()) => Err(bad(
                "port",
                &job.port,
                &format!(
                    "{} no storage device behind it; {}",
                    match host.device_of(p) {
                        Some(d) => format!("the root port holds a {} ({}),", d.name, d.description),
                        None => "the root port is empty,".to_string(),
                    },
                    places(host)
                ),
            )),
            Some(_) => Ok(job),
        }
    }

    /// Parse `key=value,...` (keys: port, rw, bs, iodepth, numjobs, runtime, size) and check it.
    pub fn parse(host: &PmuHostProfile, text: &str) -> Result<StorageJob, WorkloadError> {
        let (port, kv) = pairs(text)?;
        let mut job = StorageJob {
            port: port.clone(),
            rw: Rw::Read,
            bs: 1 << 20,
            iodepth: 64,
            numjobs: 1,
            runtime: None,
            size: None,
        };
        for (k, v) in kv {
            match k.as_str() {
                "rw" => job.rw = parse_rw(&v)?,
                "bs" => job.bs = parse_bs(&v)?,
                "iodepth" => job.iodepth = parse_iodepth(&v)?,
                "numjobs" => job.numjobs = parse_numjobs(&v)?,
                "runtime" => job.runtime = Some(parse_runtime(&v)?),
                "size" => job.size = Some(parse_job_size(&v)?),
                _ => return Err(wrong_kind(host, &port, &k, &v, true)),
            }
        }
        StorageJob::new(host, job)
    }
}

/// `rw=`, as fio spells it.
pub fn parse_rw(v: &str) -> Result<Rw, WorkloadError> {
    Rw::parse(v.trim()).ok_or_else(|| bad("rw", v, &format!("must be one of {}", Rw::NAMES.join(", "))))
}

/// `bs=`: a multiple of 512 bytes up to 16M.
pub fn parse_bs(v: &str) -> Result<u32, WorkloadError> {
    match parse_size(v) {
        Some(b) if (512..=MAX_BS).contains(&b) && b.is_multiple_of(512) => Ok(b as u32),
        _ => Err(bad(
            "bs",
            v,
            "must be a multiple of 512 bytes from 512 to 16M (suffixes k, m)",
        )),
    }
}

/// `iodepth=`: I/Os a job keeps in flight, 1 to 4096.
pub fn parse_iodepth(v: &str) -> Result<u32, WorkloadError> {
    parse_count("iodepth", v, 4096)
}

/// `numjobs=`: jobs submitting in parallel, 1 to 256.
pub fn parse_numjobs(v: &str) -> Result<u32, WorkloadError> {
    parse_count("numjobs", v, 256)
}

/// A whole number from 1 to `max`.
fn parse_count(key: &str, v: &str, max: u32) -> Result<u32, WorkloadError> {
    match v.trim().parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(bad(key, v, &format!("must be a whole number from 1 to {max}"))),
    }
}

/// `runtime=`: a duration (`20s`, `500ms`, `2m`, plain seconds) from 1 µs to a day.
pub fn parse_runtime(v: &str) -> Result<f64, WorkloadError> {
    match parse_duration(v) {
        Some(s) if (1e-6..=86400.0).contains(&s) => Ok(s),
        _ => Err(bad(
            "runtime",
            v,
            "must be a duration from 1us to 24h (e.g. 20s, 500ms, 2m)",
        )),
    }
}

/// `size=`: bytes per job, from one block of 512 to 1 TiB.
pub fn parse_job_size(v: &str) -> Result<u64, WorkloadError> {
    match parse_size(v) {
        Some(b) if (512..=MAX_JOB_SIZE).contains(&b) => Ok(b),
        _ => Err(bad("size", v, "must be a size from 512 bytes to 1T (e.g. 2G, 512M)")),
    }
}

/// `port=`: a BDF, with or without its domain.
pub fn check_port(v: &str) -> Result<String, WorkloadError> {
    normalise_bdf(v.trim()).ok_or_else(|| bad("port", v, "must be a PCI address like 00:02.0 or 0000:00:02.0"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_sizes_and_durations() {
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_duration("20s"), Some(20.0));
        assert_eq!(parse_duration("500ms"), Some(0.5));
        assert_eq!(parse_duration("2m"), Some(120.0));
        assert_eq!(parse_duration("0"), None);
        assert_eq!(normalise_bdf("00:02.0").as_deref(), Some("0000:00:02.0"));
    }

    #[test]
    fn jobs_parse_and_bad_ones_name_the_value() {
        let host = PmuHostProfile::load("yitian710-nvme").unwrap();
        let j = StorageJob::parse(&host, "port=00:02.0,rw=write,bs=128k,iodepth=8,numjobs=2,runtime=5s").unwrap();
        assert_eq!(
            (j.port.as_str(), j.rw, j.bs, j.iodepth, j.numjobs, j.runtime),
            ("0000:00:02.0", Rw::Write, 131072, 8, 2, Some(5.0))
        );
        let err = |t: &str| StorageJob::parse(&host, t).unwrap_err().to_string();
        assert!(err("port=00:02.0,rw=randread").starts_with("rw=randread: must be one of read, write, readwrite"));
        assert!(err("port=00:02.0,bs=1000").starts_with("bs=1000: must be a multiple of 512"));
        assert!(err("port=00:02.0,iodepth=0").starts_with("iodepth=0: must be a whole number from 1 to 4096"));
        assert!(err("port=00:02.0,runtime=soon").starts_with("runtime=soon"));
        let e = err("port=00:09.0");
        assert!(
            e.starts_with("port=0000:00:09.0: no such root port") && e.contains("0000:00:02.0"),
            "{e}"
        );
        let e = err("port=0000:00:04.0");
        assert!(
            e.contains("empty") && e.contains("0000:00:02.0") && e.contains("0000:30:03.0"),
            "{e}"
        );
        let nic = |t: &str| HostWorkload::parse(&host, t);
        assert_eq!(
            nic("port=30:03.0,rx=40,tx=10,pkt=9000").unwrap(),
            HostWorkload::Nic(NicJob {
                port: "0000:30:03.0".into(),
                rx_gbps: 40.0,
                tx_gbps: 10.0,
                pkt: 9000,
                runtime: None
            })
        );
        let e = nic("port=30:03.0,rx=400").unwrap_err().to_string();
        assert!(
            e.starts_with(
                "rx=400: must be a rate in Gb/s from 0 to 100 (the NIC's line rate): 0 (idle) or at least 0.001"
            ),
            "{e}"
        );
        let e = nic("port=30:03.0,rw=read").unwrap_err().to_string();
        assert!(
            e.starts_with("rw=read: port 0000:30:03.0 has no storage device (it holds a cx5")
                && e.contains("storage ports: 0000:00:01.0, 0000:00:02.0"),
            "{e}"
        );
        assert!(matches!(nic("port=00:02.0,rw=write"), Ok(HostWorkload::Storage(_))));
        assert!(err("rw=read").contains("needs port=BDF"));
        assert!(err("port=00:02.0,turbo=1").contains("\"turbo\" is not a key"));
    }

    #[test]
    fn a_prefixed_port_is_not_a_key() {
        let host = PmuHostProfile::load("yitian710-nvme").unwrap();
        let e = HostWorkload::parse(&host, "storage:port=00:02.0,rw=read")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"storage:port\" is not a key; a workload is port=BDF and KEY=VALUE pairs")
                && !e.contains("needs port"),
            "{e}"
        );
    }

    #[test]
    fn a_nic_key_on_a_port_without_a_nic_lists_the_nic_ports() {
        let host = PmuHostProfile::load("yitian710-nvme").unwrap();
        let nic_ports = ports_with(&host, |d| d.nic.is_some()).join(", ");
        for (port, key, holds) in [
            ("00:04.0", "rx=40", "it is empty"),
            ("00:02.0", "tx=1", "it holds a sata"),
        ] {
            let e = HostWorkload::parse(&host, &format!("port={port},{key}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("{key}: port 0000:{port} has no NIC ({holds}"))
                    && e.ends_with(&format!("; NIC ports: {nic_ports}")),
                "{e}"
            );
        }
        let e = HostWorkload::parse(&host, "port=0f:00.0,pkt=64")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("port=0000:0f:00.0: no such root port"), "{e}");
    }

    #[test]
    fn hostile_numbers_are_refused_naming_key_and_value() {
        let host = PmuHostProfile::load("yitian710-nvme").unwrap();
        let hostile = [
            "0",
            "-1",
            "1e300",
            "nan",
            "inf",
            "18446744073709551615",
            "1e-300",
            "99999999999T",
        ];
        for (port, keys) in [
            ("00:02.0", &["bs", "iodepth", "numjobs", "runtime", "size"][..]),
            ("30:03.0", &["rx", "tx", "pkt", "runtime"][..]),
        ] {
            for key in keys {
                for v in hostile {
                    let spec = format!("port={port},{key}={v}");
                    match HostWorkload::parse(&host, &spec) {
                        // Idle is a rate.
                        Ok(_) if v == "0" && (*key == "rx" || *key == "tx") => {}
                        Ok(w) => panic!("{spec} accepted: {w:?}"),
                        Err(e) => {
                            let e = e.to_string();
                            assert!(e.starts_with(&format!("{key}={v}: must be")), "{spec}: {e}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_spec_is_at_most_512_characters() {
        let host = PmuHostProfile::load("yitian710-nvme").unwrap();
        let spec = format!("port=00:02.0{}", ",".repeat(600));
        let e = HostWorkload::parse(&host, &spec).unwrap_err().to_string();
        assert!(e.starts_with("--workload: 612 characters: at most 512"), "{e}");
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let host = PmuHostProfile::load("yitian710-nvme").unwrap();
        for spec in ["port=00:02.0,bs=4k,bs=1M", "port=00:02.0,port=00:01.0"] {
            let e = HostWorkload::parse(&host, spec).unwrap_err().to_string();
            assert!(e.contains("is given twice"), "{e}");
        }
    }
}
