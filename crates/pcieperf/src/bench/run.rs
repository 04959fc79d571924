//! `pcieperf bench run`: expand a suite (or one test), run it on a backend in parallel, write
//! the run directory as tests finish, and summarise.

use super::open::{is_device, OpenOptions, Opened};
use super::progress::Progress;
use crate::error::CliError;
use crate::output::{check_dir, Cell, Format, Table};
use crate::signals::cancel_on_signals;
use clap::Args;
use pcie_bench::suite::{work, BaseSummary, SuitePlan};
use pcie_bench::{
    parse_bytes, rfc3339, run_tests, Backend, CacheState, Group, HostInfo, Iommu, Numa, Pattern, ProgramLog, RunData,
    RunEvent, RunInfo, RunWriter, Suite, TestKind, TestParams,
};
use pcie_sysfs::DeviceRecord;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Suite to run: quick, paper, gpu (the quick suite for GPUs), or a suite file [default:
    /// quick; gpu with --backend cuda]
    #[arg(long, conflicts_with = "test")]
    suite: Option<String>,
    /// Run only these output groups of the suite (comma-separated base names)
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// What runs the DMAs: sim, sim:HOST or sim:HOST,DEVICE (built-in profiles or files),
    /// cuda or cuda:N (NVIDIA GPU N over its PCIe link), or exec:PROGRAM [ARGS] (an external
    /// program driving a device, docs/backends.md)
    #[arg(long, default_value = "sim")]
    backend: String,
    /// cuda backends: who moves the data, sm (the GPU's threads; every test but LAT_CMD_*) or
    /// ce (the copy engines; bandwidth tests only) [default: sm]
    #[arg(long)]
    engine: Option<String>,
    /// exec backends: seconds each test may take [default: 10 + 10 µs per transaction]
    #[arg(long)]
    timeout: Option<f64>,
    /// exec backends: seconds the program may take to answer the hello
    #[arg(long, default_value_t = 10.0)]
    handshake_timeout: f64,
    /// exec backends: PCI address of the device under test, for its link state in run.json
    /// [default: the address the program reports]
    #[arg(long)]
    device: Option<String>,
    /// sim backends: the device's outstanding read tags for the run, 1 to its maximum (its
    /// profile's, e.g. 32 for netfpga-sume, 22 for nfp6000) [default: the maximum]
    #[arg(long)]
    tags: Option<u32>,
    /// sim backends: simulate every DMA of each bandwidth test; by default a test is simulated
    /// until its rate is known within 0.1 % and the rest is accounted at it (docs/simulator.md)
    #[arg(long)]
    every_dma: bool,
    /// Run directory to create [default: bench-<suite>-<UTC time>, with -2, -3, ... when taken;
    /// none for a single test printed with --format csv or json]
    #[arg(long)]
    out: Option<PathBuf>,
    /// Samples per latency test and DMAs per bandwidth test, for every test
    #[arg(long)]
    samples: Option<u64>,
    /// Seed of the run; each test's seed derives from it and the test's parameters
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sockets of device, buffer memory and warming CPU: dev=0,mem=1,cpu=1 or s0-s1-s1
    /// [default: dev=0,mem=0,cpu=0 for sim backends; a real device's own NUMA node for all three]
    #[arg(long)]
    numa: Option<String>,
    /// IOMMU: off, 2m (super pages) or 4k (4 KB pages) [default: off for sim backends; for a
    /// real device the host's, which the option may state but not change]
    #[arg(long)]
    iommu: Option<String>,
    /// Also write each latency test's CDF (<base>_cdf.csv)
    #[arg(long)]
    cdf: bool,
    /// Also write each latency test's raw samples (<base>_raw.csv), in ns, in issue order
    #[arg(long)]
    raw: bool,
    /// Threads running tests in parallel [default: all cores; 1 for exec backends, which then
    /// start one program per thread]
    #[arg(short = 'j', long)]
    threads: Option<usize>,
    /// One test instead of a suite: LAT_RD, LAT_WRRD, BW_RD, BW_WR, BW_RDWR, LAT_CMD_RD, LAT_CMD_WRRD
    #[arg(long)]
    test: Option<String>,
    /// Transfer size in bytes (single test)
    #[arg(long, default_value_t = 64, requires = "test")]
    size: u32,
    /// Window: bytes of the host buffer touched, e.g. 8k, 1.5M, 64M (single test)
    #[arg(long, default_value = "8k", requires = "test")]
    window: String,
    /// Bytes past a cache-line start on the host (single test)
    #[arg(long, default_value_t = 0, requires = "test")]
    host_offset: u32,
    /// Bytes into the device buffer (single test)
    #[arg(long, default_value_t = 0, requires = "test")]
    device_offset: u32,
    /// Access pattern: seq or rand (single test)
    #[arg(long, default_value = "rand", requires = "test")]
    pattern: String,
    /// Cache state: cold, dthrash, dwarm, hwarm (single test)
    #[arg(long, default_value = "hwarm", requires = "test")]
    cache: String,
    /// Output on stdout
    #[arg(long, value_enum, default_value_t)]
    format: Format,
}

fn usage(e: impl std::fmt::Display) -> CliError {
    CliError::Usage(e.to_string())
}

fn single_test(a: &RunArgs, kind: &str, numa: Numa, iommu: Iommu) -> Result<TestParams, CliError> {
    let kind: TestKind = kind.parse().map_err(|e| usage(format!("--{e}")))?;
    let window = parse_bytes(&a.window).map_err(|e| usage(format!("--window {}: {e}", a.window)))?;
    Ok(TestParams {
        kind,
        size: a.size,
        window,
        host_offset: a.host_offset,
        device_offset: a.device_offset,
        pattern: a.pattern.parse::<Pattern>().map_err(|e| usage(format!("--{e}")))?,
        cache: a.cache.parse::<CacheState>().map_err(|e| usage(format!("--{e}")))?,
        count: a.samples.unwrap_or(kind.default_count()),
        numa,
        iommu,
    })
}

fn suite(a: &RunArgs, backend: &dyn Backend, numa: Numa, iommu: Iommu) -> Result<Suite, CliError> {
    let mut s = match &a.test {
        Some(kind) => {
            let t = single_test(a, kind, numa, iommu)?;
            t.check(backend.info().max_transfer)
                .map_err(|e| usage(format!("--{e}")))?;
            Suite::single(t)
        }
        None => Suite::from_arg(a.suite.as_deref().unwrap_or(backend.default_suite())).map_err(|e| usage(e.message))?,
    };
    if !a.only.is_empty() {
        s = s.only(&a.only).map_err(|e| usage(e.message))?;
    }
    if let (Some(n), None) = (a.samples, &a.test) {
        s = s.with_count(n).map_err(|e| usage(e.message))?;
    }
    Ok(s.with_numa(numa).with_iommu(iommu).with_outputs(a.cdf, a.raw))
}

/// Most `--threads` (for exec backends, each thread starts a program with a 64 MB buffer).
const MAX_THREADS: usize = 256;

/// An option's value parsed where given; its error names the option (`numa ...: ...`).
fn parsed<T: std::str::FromStr>(value: &Option<String>) -> Result<Option<T>, CliError>
where
    T::Err: std::fmt::Display,
{
    value
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| usage(format!("--{e}")))
}

pub fn run(a: &RunArgs) -> Result<String, CliError> {
    if let Some(n) = a.threads.filter(|n| !(1..=MAX_THREADS).contains(n)) {
        return Err(usage(format!("--threads {n}: must be from 1 to {MAX_THREADS}")));
    }
    if let Some(out) = &a.out {
        check_dir("--out", out)?;
    }
    let numa: Option<Numa> = parsed(&a.numa)?;
    let iommu: Option<Iommu> = parsed(&a.iommu)?;
    // One device: tests run one at a time unless asked otherwise (then one program per thread).
    let threads = a.threads.unwrap_or_else(|| {
        if is_device(&a.backend) {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    });
    let progress = Progress::default();
    let Opened {
        backend,
        warnings,
        device,
        numa,
        iommu,
        iommu_note,
    } = OpenOptions {
        handshake_timeout_s: a.handshake_timeout,
        timeout_s: a.timeout,
        engine: a.engine.clone(),
        device: a.device.clone(),
        tags: a.tags,
        every_dma: a.every_dma,
        numa,
        iommu,
        children: threads,
        root: PathBuf::from("/"),
        program_log: {
            let progress = progress.clone();
            ProgramLog(Arc::new(move |line| progress.print_above(line)))
        },
    }
    .open(&a.backend)
    .map_err(usage)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if let Some(note) = &iommu_note {
        eprintln!("note: {note}");
    }
    let backend = backend.as_ref();
    let suite = suite(a, backend, numa, iommu)?;
    let plan = SuitePlan::new(&suite, backend);
    let tests = &plan.tests;
    let left_out = plan.left_out_reasons();
    if tests.is_empty() {
        return Err(usage(format!(
            "--backend {}: runs none of the tests asked for ({})",
            a.backend,
            left_out.join("; ")
        )));
    }
    if !left_out.is_empty() {
        eprintln!(
            "note: --backend {} leaves out {} of {} tests:",
            a.backend,
            plan.left_out.len(),
            plan.left_out.len() + tests.len(),
        );
        for why in &left_out {
            eprintln!("  {why}");
        }
    }
    let info = RunInfo {
        tool: "pcieperf".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command_line: std::env::args().collect(),
        suite: suite.name.clone(),
        seed: a.seed,
        backend: backend.info(),
        link: match backend.link() {
            Some(v) => Some(serde_json::from_value(v).map_err(|e| {
                CliError::Runtime(format!(
                    "{}: the backend's link is not a link configuration: {e}",
                    a.backend
                ))
            })?),
            None => device.as_ref().and_then(DeviceRecord::link_config),
        },
        numa: tests.first().map(|(_, t)| t.numa).unwrap_or_default(),
        iommu: tests.first().map(|(_, t)| t.iommu).unwrap_or_default(),
        host: HostInfo {
            device,
            ..HostInfo::gather()
        },
        start_time: rfc3339(SystemTime::now()),
        end_time: None,
        left_out,
    };
    // A single test printed as CSV or JSON is all on stdout: its files go to a private scratch
    // directory, removed with them when this function returns.
    let scratch = a.out.is_none() && a.test.is_some() && a.format != Format::Table;
    let scratch_dir = scratch
        .then(|| pcie_output::PrivateDir::new("pcieperf-bench"))
        .transpose()
        .map_err(|e| CliError::Runtime(format!("cannot make a scratch directory: {e}")))?;
    let writer = match (&a.out, &scratch_dir) {
        (Some(out), _) => RunWriter::create(out, info).map_err(|e| usage(format!("--out {}: {e}", out.display())))?,
        (None, Some(dir)) => {
            RunWriter::create_new(&dir.path().join("run"), info).map_err(|e| CliError::Runtime(e.to_string()))?
        }
        (None, None) => {
            let stamp = rfc3339(SystemTime::now()).replace(':', "");
            RunWriter::create_new(Path::new(&format!("bench-{}-{stamp}", suite.name)), info)
                .map_err(|e| usage(format!("--out: {e}")))?
        }
    };
    run_into(a, backend, &suite, tests, threads, (writer, scratch), progress)
}

/// Runs the expanded `tests` into `writer`'s directory (a scratch one, removed afterwards, when
/// `scratch`) and formats the output.
fn run_into(
    a: &RunArgs,
    backend: &dyn Backend,
    suite: &Suite,
    tests: &[(usize, TestParams)],
    threads: usize,
    (mut writer, scratch): (RunWriter, bool),
    mut progress: Progress,
) -> Result<String, CliError> {
    let out = writer.dir().to_path_buf();
    let params: Vec<TestParams> = tests.iter().map(|(_, t)| t.clone()).collect();
    // Where finished tests' results stay, for the messages of a run that stops early.
    let kept = (!scratch).then(|| out.display().to_string());

    // A second Ctrl-C ends the program at once; the first lets running tests finish.
    let cancel = cancel_on_signals();
    progress.start(params.len(), params.iter().map(work).sum());
    let mut summaries: Vec<BaseSummary> = Vec::new();
    let mut lines = String::new();
    let mut failure: Option<String> = None;
    let mut finished = 0;
    run_tests(backend, &params, a.seed, threads, &cancel, |event| {
        let RunEvent::Finished(f) = event else { return true };
        let (g, t) = &tests[f.index];
        let group: &Group = &suite.groups()[*g];
        let outcome = match f.outcome {
            Ok(o) => o,
            Err(e) => {
                failure = Some(format!("{}: {e}", group.base));
                return false;
            }
        };
        let m = match writer.record(group, t, outcome) {
            Ok(m) => m,
            Err(e) => {
                failure = Some(e.to_string());
                return false;
            }
        };
        finished += 1;
        BaseSummary::add(&mut summaries, &group.base, &m);
        if a.format == Format::Json {
            let line = serde_json::json!({ "base": group.base, "params": t, "result": m });
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        progress.advance(finished, work(t), format!("{} {} B {}", t.kind, t.size, group.base));
        true
    });
    progress.finish();
    backend.finish();
    writer.set_backend(backend.info());
    writer
        .finish(SystemTime::now())
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    if let Some(e) = failure {
        return Err(CliError::Runtime(format!(
            "{e}{}",
            kept.map(|dir| format!("\nthe {finished} tests that finished before it are in {dir}"))
                .unwrap_or_default()
        )));
    }
    if cancel.load(Ordering::Relaxed) {
        return Err(CliError::Runtime(format!(
            "interrupted after {finished} of {} tests{}",
            params.len(),
            kept.map(|dir| format!("; the finished ones are in {dir}"))
                .unwrap_or_default()
        )));
    }
    // A GPU's run ends with its verdict, with what `check` finds on the GPU's path now.
    let judged = RunData::load(&out)
        .ok()
        .and_then(|run| super::verdict::judge(&run, &super::verdict::live_causes(Path::new("/"), &run)));
    let mut text = match a.format {
        Format::Json => lines,
        Format::Csv => csv_files(&out, &summaries)?,
        Format::Table => summary_table(&summaries, &out),
    };
    // A single test's JSON or CSV stays one object or one table, as scripts read it.
    let single = a.test.is_some() && a.format != Format::Table;
    if let Some(v) = judged.as_ref().filter(|_| !single) {
        match a.format {
            Format::Json => text.push_str(&format!("{}\n", serde_json::json!({ "verdict": v }))),
            Format::Csv => text.push_str(&format!("# verdict\n{}", super::verdict::csv(v))),
            Format::Table => text.push_str(&super::verdict::text(v)),
        }
    }
    Ok(text)
}

/// Every base's CSV file as written, one after the other.
fn csv_files(out: &std::path::Path, summaries: &[BaseSummary]) -> Result<String, CliError> {
    let mut text = String::new();
    for s in summaries {
        let path = out.join(format!("{}.csv", s.base));
        if summaries.len() > 1 {
            text.push_str(&format!("# {}\n", s.base));
        }
        text.push_str(
            &pcie_output::read::read_text(&path, pcie_output::read::Limit::RESULT_TABLE)
                .map_err(|e| CliError::Runtime(format!("{}: {e}", path.display())))?,
        );
    }
    Ok(text)
}

fn summary_table(summaries: &[BaseSummary], out: &std::path::Path) -> String {
    let mut t = Table::new(&[
        ("base", "Output"),
        ("tests", "Tests"),
        ("measure", "Measure"),
        ("low", "Low"),
        ("high", "High"),
    ]);
    for s in summaries {
        let unit = if s.latency {
            "median latency (ns)"
        } else {
            "bandwidth (Gb/s)"
        };
        t.push(vec![
            Cell::text(&s.base),
            Cell::Int(s.tests as u64),
            Cell::text(unit),
            Cell::num(s.low, 2),
            Cell::num(s.high, 2),
        ]);
    }
    format!("{}\nResults: {}\n", t.to_human(), out.display())
}
