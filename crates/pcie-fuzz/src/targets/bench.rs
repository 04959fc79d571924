//! Targets for pcie-bench's parsers: byte sizes, suites, exec-protocol lines, result CSVs,
//! whole run directories and pciebench-netfpga's `.dat` directories.

use crate::{refused, text, FuzzTarget, Verdict};
use pcie_bench::exec::protocol::{parse_hello, parse_result, CYCLE_PS_RANGE};
use pcie_bench::{
    check_count, BandwidthStats, Outcome, ResultData, ResultFile, RunData, SortedLatencies, Suite, TestKind,
    TestParams, MAX_SUITE_TESTS,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// `8k`, `1.5M`, `64M`: windows on the command line and in suites.
fn bytes(input: &[u8]) -> Verdict {
    let s = text(input);
    match pcie_bench::parse_bytes(&s) {
        Ok(_) => Verdict::Accepted,
        Err(e) => refused(e.to_string()),
    }
}

/// Suite TOML through the public loader (which checks every distinct test of every group);
/// an accepted suite must be within the test and count limits.
fn suite(input: &[u8]) -> Verdict {
    let s = match Suite::parse(&text(input), "fuzz.toml") {
        Ok(s) => s,
        Err(e) => return refused(e.message),
    };
    // The loader expanded and checked every test; what is left to check is cheap.
    let count = s.test_count();
    if count > MAX_SUITE_TESTS {
        return Verdict::Wrong(format!("accepted a suite of {count} tests"));
    }
    if let Some(g) = s.groups().iter().find(|g| {
        g.tests.is_empty() || g.tests.iter().any(|t| check_count(*t, g.count).is_err()) || g.test_count() == 0
    }) {
        return Verdict::Wrong(format!(
            "accepted group {} with {:?}, count {}",
            g.base, g.tests, g.count
        ));
    }
    Verdict::Accepted
}

/// The tests the exec-line target answers: a latency test of 3 samples, a bandwidth test of
/// 10 DMAs of 64 B.
fn exec_tests() -> [TestParams; 2] {
    let t = |kind: TestKind, count: u64| TestParams {
        kind,
        size: 64,
        window: 8192,
        host_offset: 0,
        device_offset: 0,
        pattern: pcie_bench::Pattern::Rand,
        cache: pcie_bench::CacheState::HWarm,
        count,
        numa: pcie_bench::Numa::default(),
        iommu: pcie_bench::Iommu::Off,
    };
    [t(TestKind::LatRd, 3), t(TestKind::BwRd, 10)]
}

/// A reply line: a hello when it mentions one, else the reply to test id 7 (the latency test,
/// then the bandwidth test). Accepted results must give sane statistics.
fn exec_line(input: &[u8]) -> Verdict {
    let line = text(input);
    if line.contains("hello") {
        return match parse_hello(&line) {
            Ok(h) if h.max_transfer == 0 || !CYCLE_PS_RANGE.contains(&h.cycle_ps) => {
                Verdict::Wrong(format!("hello accepted with {h:?}"))
            }
            Ok(_) => Verdict::Accepted,
            Err(e) => refused(e.to_string()),
        };
    }
    let [latency, bandwidth] = exec_tests();
    // The bandwidth test only hears what the latency test refused.
    let (t, result) = match parse_result(&line, 7, &latency, 1000.0) {
        Err(_) if line.contains("bandwidth") => (&bandwidth, parse_result(&line, 7, &bandwidth, 1000.0)),
        r => (&latency, r),
    };
    match result {
        Ok(Outcome::Latency(l)) => {
            if l.cycles.len() as u64 != t.count || !CYCLE_PS_RANGE.contains(&l.cycle_ps) {
                return Verdict::Wrong(format!("latency reply accepted for {} samples: {l:?}", t.count));
            }
            let Some(stats) = SortedLatencies::new(&l).map(|s| s.stats()) else {
                return Verdict::Wrong("latency reply accepted without samples".into());
            };
            let n = &stats.ns;
            let figures = [n.tavg, n.avg, n.median, n.min, n.max, n.p95, n.p99, n.p999];
            if figures.iter().any(|v| !v.is_finite() || *v < 0.0) {
                return Verdict::Wrong(format!("latency statistics {n:?}"));
            }
            Verdict::Accepted
        }
        Ok(Outcome::Bandwidth(b)) => {
            let sane = BandwidthStats::new(&b)
                .is_some_and(|s| s.gbps.is_finite() && s.trans_per_sec.is_finite() && s.transactions <= t.count);
            if sane {
                Verdict::Accepted
            } else {
                Verdict::Wrong(format!("bandwidth reply accepted: {b:?}"))
            }
        }
        Err(e) => refused(e.to_string()),
    }
}

/// What is wrong with the figures of a loaded result file, if anything: every figure finite,
/// non-negative.
fn nonsense(f: &ResultFile) -> Option<String> {
    let bad = |v: f64| !v.is_finite() || v < 0.0;
    match &f.data {
        ResultData::Latency(rows) => rows
            .iter()
            .find(|r| {
                [r.tavg_ns, r.avg_ns, r.med_ns, r.min_ns, r.max_ns, r.p95_ns, r.p999_ns]
                    .into_iter()
                    .chain(r.p99_ns)
                    .any(bad)
                    || r.samples == 0
                    || r.outliers > r.samples
            })
            .map(|r| format!("latency row {r:?}")),
        ResultData::Bandwidth(rows) => rows
            .iter()
            .find(|r| bad(r.time_ns) || bad(r.bw_gbps) || bad(r.trans_per_sec))
            .map(|r| format!("bandwidth row {r:?}")),
        ResultData::Cdf(sections) => sections
            .iter()
            .flat_map(|s| &s.points)
            .find(|(ns, cdf)| bad(*ns) || bad(*cdf) || *cdf > 1.0)
            .map(|p| format!("CDF point {p:?}")),
    }
}

/// One result CSV through the reader's text entry.
fn result_csv(input: &[u8]) -> Verdict {
    match ResultFile::parse(Path::new("fuzz.csv"), &text(input)) {
        Ok(Some(f)) => nonsense(&f).map_or(Verdict::Accepted, Verdict::Wrong),
        Ok(None) => Verdict::Accepted,
        Err(e) => refused(e.to_string()),
    }
}

/// Separates the files of a directory input: each part is a file's name, a newline and its
/// text (a run-dir input's first part is `run.json`'s text, unnamed).
const FILE_MARK: &str = "\n=== ";

/// How a directory target's input becomes files.
struct Layout {
    /// The file the input's first part is, unnamed; `None` when it names itself like the rest.
    first: Option<&'static str>,
    /// What every named file's name starts and ends with (other names are not written).
    prefix: &'static str,
    suffix: &'static str,
}

/// The input's files written into a fresh temporary directory, `read` with the directory and
/// the files written (name, text), and the directory removed.
fn in_dir(input: &[u8], layout: &Layout, read: impl FnOnce(&Path, &[(&str, &str)]) -> Verdict) -> Verdict {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // The root and process id looked up once: a directory target spends its time in system calls.
    static STEM: OnceLock<String> = OnceLock::new();
    let stem = STEM.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let root = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        format!("{}/pcie-fuzz-dir-{}-", root.display(), std::process::id())
    });
    let dir = PathBuf::from(format!("{stem}{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    if std::fs::create_dir(&dir).is_err() {
        return Verdict::Wrong(format!("cannot create {}", dir.display()));
    }
    let input = text(input);
    let mut written = Vec::new();
    let verdict = match write_files(&dir, &input, layout, &mut written) {
        Err(e) => refused(e),
        Ok(()) => read(&dir, &written),
    };
    // The names written, one by one (each once): cheaper than remove_dir_all's directory walk.
    written.sort_unstable();
    written.dedup_by_key(|(name, _)| *name);
    for (name, _) in &written {
        let _ = std::fs::remove_file(dir.join(name));
    }
    if std::fs::remove_dir(&dir).is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    verdict
}

/// Writes the files of a directory input into `dir`, adding each to `written`.
fn write_files<'a>(
    dir: &Path,
    input: &'a str,
    layout: &Layout,
    written: &mut Vec<(&'a str, &'a str)>,
) -> Result<(), String> {
    let mut parts = input.split(FILE_MARK);
    let mut write = |name: &'a str, text: &'a str| {
        written.push((name, text));
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    if let Some(first) = layout.first {
        write(first, parts.next().unwrap_or_default())?;
    }
    for part in parts {
        let (name, body) = part.split_once('\n').unwrap_or((part, ""));
        let ok = name.len() <= 64
            && Some(name) != layout.first
            && !name.starts_with('.')
            && name.len() > layout.prefix.len() + layout.suffix.len()
            && name.starts_with(layout.prefix)
            && name.ends_with(layout.suffix)
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !ok {
            return Err(format!("file name {name:?}: not written"));
        }
        write(name, body)?;
    }
    Ok(())
}

/// A whole run directory read back with the run-directory reader.
fn run_dir(input: &[u8]) -> Verdict {
    let layout = Layout {
        first: Some("run.json"),
        prefix: "",
        suffix: "",
    };
    in_dir(input, &layout, |dir, _| match RunData::load(dir) {
        Ok(run) => run
            .files
            .iter()
            .find_map(nonsense)
            .map_or(Verdict::Accepted, Verdict::Wrong),
        Err(e) => refused(e.to_string()),
    })
}

/// A pciebench-netfpga directory of `.dat` files read back with the run-directory reader.
/// Its rows must be sane (a directory without rows counts as refused); a refusal must name
/// one of the files, and a line of it unless the file is refused whole (only a latency file
/// for device writes, `real_time_lat_R_*`, is).
fn netfpga_dat(input: &[u8]) -> Verdict {
    let layout = Layout {
        first: None,
        prefix: "real_time_",
        suffix: ".dat",
    };
    in_dir(input, &layout, |dir, files| match RunData::load(dir) {
        // Not kept: a mutated epoch or direction hides a file from the reader, and mutants of
        // a directory it ignores whole would fill the corpus while testing nothing.
        Ok(run) if run.files.is_empty() => refused("no rows: no file the reader recognises has a data line".into()),
        Ok(run) => run
            .files
            .iter()
            .find_map(nonsense)
            .map_or(Verdict::Accepted, Verdict::Wrong),
        Err(e) => {
            // The last file of a name: it overwrote any before it.
            let file = files.iter().rev().find(|(name, _)| e.path == dir.join(name));
            match (file, e.line) {
                (None, _) => Verdict::Wrong(format!("refusal names no file of the directory: {e}")),
                (Some((_, text)), Some(line)) if line == 0 || line > text.lines().count() => Verdict::Wrong(format!(
                    "refusal names line {line} of a file of {} lines: {e}",
                    text.lines().count()
                )),
                (Some((name, _)), None) if !name.starts_with("real_time_lat_R_") => {
                    Verdict::Wrong(format!("refusal names no line: {e}"))
                }
                _ => refused(e.to_string()),
            }
        }
    })
}

const HELLO: &str =
    r#"{"type":"hello","protocol":1,"device":"emulated","max_transfer":4096,"cycle_ps":1000,"bdf":"0000:03:00.0"}"#;
const LATENCY_REPLY: &str =
    r#"{"type":"latency","id":7,"samples":[452,461,449],"total_cycles":1500,"cycle_ps":833.33}"#;
const BANDWIDTH_REPLY: &str =
    r#"{"type":"bandwidth","id":7,"bytes":640,"transactions":10,"time_cycles":141,"cycle_ps":1000}"#;
const ERROR_REPLY: &str = r#"{"type":"error","id":7,"message":"DMA engine timed out"}"#;

/// pcie-bench's files (data/reference/pcie-bench), cut to a few rows, and one of ours.
const LAT_CSV: &str = "Test,PAT,Cache,HO,DO,WinSZ,SZ,TAvg,Avg,Med,Min,Max,95%,99.9%,TAvg(ns),Avg(ns),Med(ns),Min(ns),Max(ns),95%(ns),99.9%(ns),#outliers,#samples
LAT_DMA_RD,Seq,HWarm,0,0,8192,64,947,716.0765151977539,720.0,656,11392,736.0,752.0,789.1666666666666,596.7304293314616,600.0,546.6666666666666,9493.333333333334,613.3333333333334,626.6666666666666,12,2097152
LAT_DMA_RD,Seq,HWarm,1,0,8192,64,964,734.1711273193359,736.0,688,11072,752.0,768.0,803.3333333333334,611.8092727661133,613.3333333333334,573.3333333333334,9226.666666666666,626.6666666666666,640.0,6,2097152
";
const BW_CSV: &str = "Test,PAT,Cache,HO,DO,WinSZ,SZ,Time(cyc),Time,Bytes,Trans,BW (GB/s),Trans/s
BW_DMA_RD,Rand,HWarm,0,0,8192,16,168644400,140537000.0,134217728,8388608,7.640278531632239,59689676.02837687
BW_DMA_RD,Rand,HWarm,0,0,8192,32,171088656,142573880.0,268435456,8388608,15.062251570904852,58836920.198847085
";
const CDF_CSV: &str = "cycles,ns,cdf
752,626.6666666666666,0
752,626.6666666666666,0.051061272621154785
768,640.0,0.7409037351608276
784,653.3333333333334,1
";
const OUR_LAT_CSV: &str = "Test,PAT,Cache,HO,DO,WinSZ,SZ,TAvg,Avg,Med,Min,Max,95%,99%,99.9%,TAvg(ns),Avg(ns),Med(ns),Min(ns),Max(ns),95%(ns),99%(ns),99.9%(ns),#outliers,#samples
LAT_DMA_RD,Seq,HWarm,0,0,8192,8,995.6608,707.6608,704,672,10928,720,736,736,829.7173333333334,589.7173333333334,586.6666666666667,560,9106.666666666668,600,613.3333333333334,613.3333333333334,1,20000
";
const RAW_CSV: &str = "test,cache,window,size,index,ns\nLAT_DMA_RD,HWarm,8192,64,0,600\n";
const RUN_JSON: &str = r#"{"tool":"pcieperf","version":"0.1.0","command_line":["pcieperf","bench","run"],"suite":"quick","seed":0,
"backend":{"name":"sim:e5-2637v3,nfp6000","description":{},"max_transfer":4096},"link":{"addr_bits":64,"cpl_split":"mps","ecrc":false,"flit":false,"gen":"Gen3","lanes":8,"mode":"spec","mps":256,"mrrs":512,"rcb":64,"tag_bits":8,"tlp_align":16},
"numa":{"dev":0,"mem":0,"cpu":0},"iommu":"Off","host":{"hostname":"h","cpus":4},"start_time":"2026-11-25T12:00:00Z","end_time":null}"#;

/// The built-in suites cut into one-group suites without comments and descriptions: TOML takes
/// about a microsecond a byte to parse in a debug build (whole suites: milliseconds), and every
/// group's keys are still in the seeds.
fn suite_seeds() -> Vec<String> {
    let strip = |t: &str| -> String {
        t.lines()
            .filter(|l| {
                let l = l.trim_start();
                !l.starts_with('#') && !l.starts_with("description") && !l.is_empty()
            })
            .map(|l| format!("{}\n", l.split(" #").next().unwrap_or(l)))
            .collect()
    };
    let mut seeds = Vec::new();
    for suite in [
        include_str!("../../../../data/suites/quick.toml"),
        include_str!("../../../../data/suites/paper.toml"),
    ] {
        let mut parts = suite.split("[[group]]");
        let head = strip(parts.next().unwrap_or_default());
        seeds.extend(parts.map(|g| format!("{head}[[group]]\n{}", strip(g))));
    }
    seeds
}

/// pciebench-netfpga's files: the reader's fixtures (illustrative values near the simulator's
/// `netfpga-sume` profile).
const DAT_FILES: [(&str, &str); 5] = [
    (
        "real_time_bw_R_1530000000.dat",
        include_str!("../../../pcie-bench/tests/fixtures/netfpga/real_time_bw_R_1530000000.dat"),
    ),
    (
        "real_time_bw_W_1530000000.dat",
        include_str!("../../../pcie-bench/tests/fixtures/netfpga/real_time_bw_W_1530000000.dat"),
    ),
    (
        "real_time_bw_RW_1530000000.dat",
        include_str!("../../../pcie-bench/tests/fixtures/netfpga/real_time_bw_RW_1530000000.dat"),
    ),
    (
        "real_time_lat_W_1530000000.dat",
        include_str!("../../../pcie-bench/tests/fixtures/netfpga/real_time_lat_W_1530000000.dat"),
    ),
    (
        "real_time_lat_RW_1530000000.dat",
        include_str!("../../../pcie-bench/tests/fixtures/netfpga/real_time_lat_RW_1530000000.dat"),
    ),
];

/// Each `.dat` fixture a directory of its own, and a bandwidth and a latency file together
/// (mutants repeat and splice files into more; a seed of all five slowed inputs by a third
/// without finding more).
fn dat_seeds() -> Vec<String> {
    let named: Vec<String> = DAT_FILES.iter().map(|(name, text)| format!("{name}\n{text}")).collect();
    let pair = format!("{}{FILE_MARK}{}", named[0], named[3]);
    named.into_iter().chain([pair]).collect()
}

pub fn targets() -> Vec<FuzzTarget> {
    let run_dirs = [
        format!("{RUN_JSON}{FILE_MARK}lat_dma_off_rd.csv\n{LAT_CSV}"),
        format!("{RUN_JSON}{FILE_MARK}bw_dma_sz_sweep.csv\n{BW_CSV}{FILE_MARK}lat_dma_details_cdf.csv\n{CDF_CSV}"),
        format!("{RUN_JSON}{FILE_MARK}lat_dma_sizes.csv\n{OUR_LAT_CSV}{FILE_MARK}lat_dma_sizes_raw.csv\n{RAW_CSV}"),
    ];
    let mut run_dir_target = FuzzTarget::new(
        "run-dir",
        &[],
        &[
            FILE_MARK,
            "run.json",
            ".csv",
            "_cdf",
            "_raw",
            "\"seed\":",
            "\"numa\":",
            "null",
            ",",
            "\n",
            "NaN",
            "inf",
        ],
        run_dir,
    );
    run_dir_target.seeds = run_dirs.iter().map(|s| s.as_bytes().to_vec()).collect();
    vec![
        FuzzTarget::new(
            "bytes",
            &["8k", "64M", "1.5M", "4096", "2G", "512"],
            &["k", "K", "M", "G", "T", "KiB", "MB", ".", " "],
            bytes,
        ),
        FuzzTarget::new(
            "suite",
            &suite_seeds().iter().map(String::as_str).collect::<Vec<_>>(),
            &[
                "[[group]]",
                "base = ",
                "tests = ",
                "sizes = ",
                "windows = ",
                "caches = ",
                "pattern = ",
                "host_offsets = ",
                "device_offsets = ",
                "offsets = ",
                "order = ",
                "count = ",
                "cdf = true",
                "raw = true",
                "latency_count = ",
                "bandwidth_count = ",
                "\"host-then-device\"",
                "\"LAT_CMD_RD\"",
                "\"BW_RDWR\"",
                "\"dthrash\"",
                "\"64M\"",
                "[",
                "]",
                ", ",
                "\n",
            ],
            suite,
        ),
        FuzzTarget::new(
            "exec-line",
            &[HELLO, LATENCY_REPLY, BANDWIDTH_REPLY, ERROR_REPLY],
            &[
                "\"type\":",
                "\"hello\"",
                "\"latency\"",
                "\"bandwidth\"",
                "\"error\"",
                "\"id\":7",
                "\"samples\":",
                "\"total_cycles\":",
                "\"cycle_ps\":",
                "\"bytes\":",
                "\"transactions\":",
                "\"time_cycles\":",
                "\"protocol\":1",
                "\"max_transfer\":",
                "null",
                "[",
                "]",
                ",",
            ],
            exec_line,
        ),
        FuzzTarget::new(
            "result-csv",
            &[LAT_CSV, BW_CSV, CDF_CSV, OUR_LAT_CSV, RAW_CSV],
            &[
                ",",
                "\n",
                "\r\n",
                "Med(ns)",
                "Trans/s",
                "cdf",
                "#samples",
                "#outliers",
                "LAT_DMA_RD",
                "BW_DMA_WR",
                "HWarm",
                "Seq",
                "NaN",
                "inf",
                "-0",
            ],
            result_csv,
        ),
        run_dir_target,
        FuzzTarget::new(
            "netfpga-dat",
            &dat_seeds().iter().map(String::as_str).collect::<Vec<_>>(),
            &[
                FILE_MARK,
                "real_time_",
                "bw_",
                "lat_",
                "R_",
                "W_",
                "RW_",
                ".dat",
                "0 0 0 0",
                "pattern,descriptor,size,value",
                "FIX",
                "SEQ",
                "RAN",
                " ",
                ",",
                "\t",
                "\n",
                "\r\n",
            ],
            netfpga_dat,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netfpga_dat_seeds_are_accepted() {
        for seed in dat_seeds() {
            assert_eq!(netfpga_dat(seed.as_bytes()), Verdict::Accepted, "{seed}");
        }
    }

    /// What the netfpga-dat target refuses, and how: lines by file and line, a file for
    /// device-write latencies whole, directories the reader gets no rows from, names the
    /// reader would not take for `.dat` files.
    #[test]
    fn netfpga_dat_refusals() {
        for (input, says) in [
            // Accepted, with a row of inf ns, until the reader read from 1 kb/s.
            (
                "real_time_bw_W_1.dat\nFIX 0 2048 1e-300\n",
                "/real_time_bw_W_1.dat:1: 1e-300: ",
            ),
            (
                "real_time_lat_W_1.dat\n0 0 0 0\n=== real_time_lat_R_1.dat\nFIX 0 64 500\n",
                "/real_time_lat_R_1.dat: pciebench-netfpga has no latency test for R",
            ),
            ("real_time_bw_X_1.dat\nFIX 0 64 50\n", "no rows"),
            ("real_time_bw_W_1.dat\n0 0 0 0\n", "no rows"),
            ("run.json\n{}", "file name \"run.json\": not written"),
        ] {
            match netfpga_dat(input.as_bytes()) {
                Verdict::Refused(m) => assert!(m.contains(says), "{input:?}: {m}"),
                v => panic!("{input:?}: {v:?}"),
            }
        }
    }
}
