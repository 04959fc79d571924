//! `check --wake`: is a slow link power saving or a fault? A GPU drops its link to Gen1 when
//! idle and an NVMe drive may too; only load tells. The device is put briefly to work through
//! its own driver (a GPU: copies through the CUDA driver, which the caller supplies, as this
//! crate loads no GPU library; an NVMe drive: direct reads of its namespace, read-only, bounded
//! in time and bytes) while every link of its path is re-read, and the finding says what load
//! did: "trains to Gen5 x16 under load" (power saving) or "stays at Gen1 x16 under load" (a
//! fault, a warning). Other devices have no built-in load: the answer says how to load and
//! watch them.

use crate::cost::rate_name;
use crate::finding::{Kind, Severity};
use crate::report::{FunctionHealth, Report, Wake};
use pcie_sysfs::{Bdf, LinkSpeed, LinkWidth, PciDevice};
use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a device is kept busy.
pub const WAKE_SECONDS: f64 = 1.0;
/// The most an NVMe namespace is read.
pub const NVME_MAX_BYTES: u64 = 1 << 30;
/// One direct read.
const CHUNK: usize = 1 << 20;
/// How often the links are re-read while the device works.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Puts the GPU at a PCI address to work for about the given time through its driver; what
/// it did, in words, or why it could not.
pub type GpuLoad<'a> = &'a (dyn Fn(Bdf, Duration) -> Result<String, String> + Sync);

/// What to wake, for how long, and the GPU load (`None`: none in this build).
pub struct WakeOptions<'a> {
    /// Empty: every device whose link runs below its best at a lower speed.
    pub targets: Vec<Bdf>,
    pub duration: Duration,
    pub gpu: Option<GpuLoad<'a>>,
}

fn min_opt<T: PartialOrd + Copy>(v: impl Iterator<Item = Option<T>>) -> Option<T> {
    v.flatten()
        .fold(None, |m, x| Some(m.map_or(x, |m: T| if x < m { x } else { m })))
}

fn max_opt<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y > x { y } else { x }),
        (x, y) => x.or(y),
    }
}

/// The devices to wake: those named, else every one with a slow link that load could explain.
fn targets(report: &Report, named: &[Bdf]) -> Result<Vec<Bdf>, String> {
    for b in named {
        if !report.functions.iter().any(|f| f.bdf == *b) {
            return Err(format!("{b}: no such PCI function in this tree"));
        }
    }
    if !named.is_empty() {
        return Ok(named.to_vec());
    }
    let mut out: Vec<Bdf> = report
        .findings
        .iter()
        .filter(|f| matches!(f.kind, Kind::LinkPowerSaving | Kind::LinkSpeedDowngraded))
        .map(|f| f.bdf)
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Wakes each target (see the module text), adds the answers to `report.wake` and says on each
/// slow-link finding what load did; `Err` names a target that is not in the tree.
pub fn wake(root: &Path, report: &mut Report, opts: &WakeOptions) -> Result<(), String> {
    for bdf in targets(report, &opts.targets)? {
        let f = report
            .functions
            .iter()
            .find(|f| f.bdf == bdf)
            .expect("a target is a function");
        let w = one(root, f, opts);
        amend(report, &w);
        report.wake.push(w);
    }
    crate::finding::sort_findings(&mut report.findings);
    Ok(())
}

/// How to load a function: by its class and vendor.
fn load_kind(f: &FunctionHealth) -> &'static str {
    let class = f
        .class
        .as_deref()
        .and_then(|c| u32::from_str_radix(c, 16).ok())
        .unwrap_or(0);
    let nvidia = f.id.as_deref().is_some_and(|id| id.starts_with("10de:"));
    if nvidia && matches!(class >> 16, 0x03 | 0x12) {
        "cuda"
    } else if class >> 8 == 0x0108 {
        "nvme"
    } else {
        "none"
    }
}

fn one(root: &Path, f: &FunctionHealth, opts: &WakeOptions) -> Wake {
    let load = load_kind(f);
    let idle = (
        min_opt(f.path.iter().map(|h| h.current_gts)),
        min_opt(f.path.iter().map(|h| h.current_width)),
    );
    let capable = (
        min_opt(f.path.iter().map(|h| h.capable_gts)),
        min_opt(f.path.iter().map(|h| h.capable_width)),
    );
    let mut w = Wake {
        bdf: f.bdf,
        load,
        done: None,
        error: None,
        idle_gts: idle.0,
        idle_width: idle.1,
        loaded_gts: None,
        loaded_width: None,
        capable_gts: capable.0,
        capable_width: capable.1,
        trains: None,
        verdict: String::new(),
    };
    let run: Box<dyn Fn() -> Result<String, String> + Sync> = match load {
        "cuda" => match opts.gpu {
            Some(gpu) => Box::new(move || gpu(f.bdf, opts.duration)),
            None => Box::new(|| Err("this build loads no GPU driver".into())),
        },
        "nvme" => {
            let ns = PciDevice::read(root, f.bdf).map(|d| namespaces(root, d.dir()));
            match ns {
                Ok(ns) if !ns.is_empty() => Box::new(move || read_namespace(&ns[0], opts.duration, NVME_MAX_BYTES)),
                Ok(_) => Box::new(|| {
                    Err("no namespace below it (no nvme/nvmeX/nvmeXnY, or its /dev node is missing)".into())
                }),
                Err(e) => {
                    let e = e.to_string();
                    Box::new(move || Err(e.clone()))
                }
            }
        }
        _ => {
            w.verdict = format!(
                "no built-in load for this device (class {}): run its own workload and watch its links with `pcieperf check -I 200 --duration 10`",
                f.class.as_deref().unwrap_or("unknown")
            );
            return w;
        }
    };
    let hops: Vec<Option<PciDevice>> = f.path.iter().map(|h| PciDevice::read(root, h.bdf).ok()).collect();
    let mut best: Vec<(Option<f64>, Option<u32>)> = vec![(None, None); hops.len()];
    let result = std::thread::scope(|s| {
        let worker = s.spawn(&run);
        loop {
            for (b, dev) in best.iter_mut().zip(&hops) {
                let (g, l) = dev.as_ref().map_or((None, None), reread);
                b.0 = max_opt(b.0, g);
                b.1 = max_opt(b.1, l);
            }
            if worker.is_finished() {
                break;
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
        worker
            .join()
            .unwrap_or_else(|_| Err("the load stopped with a panic".into()))
    });
    match result {
        Ok(done) => {
            w.done = Some(done);
            // A link with no reading keeps what the check read.
            let loaded =
                |k: usize, h: &crate::report::Hop| (best[k].0.or(h.current_gts), best[k].1.or(h.current_width));
            let per_hop: Vec<_> = f.path.iter().enumerate().map(|(k, h)| (loaded(k, h), h)).collect();
            w.loaded_gts = min_opt(per_hop.iter().map(|((g, _), _)| *g));
            w.loaded_width = min_opt(per_hop.iter().map(|((_, l), _)| *l));
            let reaches = per_hop.iter().all(|((g, l), h)| {
                g.zip(h.capable_gts).is_none_or(|(g, c)| g >= c) && l.zip(h.capable_width).is_none_or(|(l, c)| l >= c)
            });
            let now = rate_name(w.loaded_gts, w.loaded_width);
            w.trains = Some(reaches);
            w.verdict = if reaches {
                format!("trains to {now} under load")
            } else if (w.loaded_gts, w.loaded_width) > (w.idle_gts, w.idle_width) {
                format!(
                    "rises only to {now} under load, of {}",
                    rate_name(w.capable_gts, w.capable_width)
                )
            } else {
                format!("stays at {now} under load")
            };
        }
        Err(e) => {
            w.verdict = format!("not loaded ({load}): {e}");
            w.error = Some(e);
        }
    }
    w
}

/// A function's current link speed and width, read again.
fn reread(d: &PciDevice) -> (Option<f64>, Option<u32>) {
    let Ok(files) = d.files() else { return (None, None) };
    let speed = files
        .attr("current_link_speed")
        .ok()
        .flatten()
        .and_then(|t| LinkSpeed::parse(&t).gts());
    let width = files
        .attr("current_link_width")
        .ok()
        .flatten()
        .and_then(|t| LinkWidth::parse(&t).lanes());
    (speed, width)
}

/// The slow-link finding of the woken device, told what load did.
fn amend(report: &mut Report, w: &Wake) {
    let Some(trains) = w.trains else { return };
    let done = w.done.as_deref().unwrap_or("");
    for f in report
        .findings
        .iter_mut()
        .filter(|f| f.bdf == w.bdf && matches!(f.kind, Kind::LinkPowerSaving | Kind::LinkSpeedDowngraded))
    {
        if trains {
            f.kind = Kind::LinkPowerSaving;
            f.severity = Severity::Info;
            f.message.push_str(&format!(
                "; --wake ({done}): it {}: power saving, not a fault",
                w.verdict
            ));
        } else {
            f.kind = Kind::LinkSpeedDowngraded;
            f.severity = Severity::Warning;
            f.message.push_str(&format!(
                "; --wake ({done}): it {}: not power saving, a fault",
                w.verdict
            ));
        }
    }
}

/// The device nodes of the NVMe namespaces below a function's directory
/// (`nvme/nvme0/nvme0n1`, or with native multipath `nvme/nvme0/nvme0c0n1`, whose block
/// device is `nvme0n1`), under `root/dev`.
fn namespaces(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let list = |d: &Path| pcie_sysfs::files::list_dir(d).unwrap_or_default();
    for ctrl in list(&dir.join("nvme")) {
        for name in list(&dir.join("nvme").join(&ctrl)) {
            let Some(rest) = name.strip_prefix("nvme") else {
                continue;
            };
            let Some((head, ns)) = rest.rsplit_once('n') else {
                continue;
            };
            let sub = head.split_once('c').map_or(head, |(s, _)| s);
            let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            if digits(sub) && digits(ns) && head.split_once('c').is_none_or(|(_, c)| digits(c)) {
                let node = root.join("dev").join(format!("nvme{sub}n{ns}"));
                if !out.contains(&node) {
                    out.push(node);
                }
            }
        }
    }
    out.retain(|p| p.exists());
    out
}

/// Reads `node` (a block device, or a regular file standing for one) from its start for about
/// `most`, at most `max_bytes`, in direct 1 MiB reads (O_DIRECT: the device's own DMAs, not
/// the page cache), never writing. A FIFO or any other kind of file is refused before it is
/// opened; a file system that refuses O_DIRECT (tmpfs) is read through the cache, and said so.
pub(crate) fn read_namespace(node: &Path, most: Duration, max_bytes: u64) -> Result<String, String> {
    let what = node.display();
    let kind = std::fs::metadata(node).map_err(|e| format!("{what}: {e}"))?.file_type();
    if !(kind.is_block_device() || kind.is_file()) {
        return Err(format!("{what}: not a block device"));
    }
    let open = |flags| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags | libc::O_NONBLOCK)
            .open(node)
    };
    let (file, direct): (File, bool) = match open(libc::O_DIRECT) {
        Ok(f) => (f, true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(0).map_err(|e| format!("{what}: {e}"))?, false),
        Err(e) => return Err(format!("{what}: {e}")),
    };
    // O_DIRECT wants the buffer aligned to the logical block (4 KiB covers every device).
    let mut buf = vec![0u8; CHUNK + 4096];
    let skip = buf.as_ptr().align_offset(4096);
    let chunk = &mut buf[skip..skip + CHUNK];
    let start = Instant::now();
    let (mut pos, mut total) = (0u64, 0u64);
    while start.elapsed() < most && total < max_bytes {
        let n = file.read_at(chunk, pos).map_err(|e| format!("{what}: {e}"))?;
        if n == 0 {
            if pos == 0 {
                return Err(format!("{what}: empty"));
            }
            pos = 0;
            continue;
        }
        pos += n as u64;
        total += n as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(format!(
        "read {:.2} GiB of {what} in {secs:.2} s ({:.1} Gb/s){}",
        total as f64 / (1u64 << 30) as f64,
        total as f64 * 8.0 / 1e9 / secs.max(1e-9),
        if direct {
            ", direct"
        } else {
            ", through the page cache: its file system refused O_DIRECT"
        }
    ))
}
