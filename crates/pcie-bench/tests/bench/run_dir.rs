//! Our writer and the shared reader: round trip, files complete after every test, determinism.

use pcie_bench::{
    read_raw, BackendInfo, BandwidthTotals, HostInfo, Iommu, LatencySamples, Measurement, Numa, Outcome, ResultData,
    RunData, RunInfo, RunWriter, SortedLatencies, Suite, TestParams,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("run_dir").join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn info() -> RunInfo {
    RunInfo {
        tool: "pcieperf".into(),
        version: "0.1.0".into(),
        command_line: vec!["pcieperf".into(), "bench".into(), "run".into()],
        suite: "quick".into(),
        seed: 7,
        backend: BackendInfo {
            name: "sim".into(),
            description: serde_json::json!({"host": "e5-2637v3", "device": "nfp6000"}),
            max_transfer: 4096,
        },
        link: pcie_model::LinkConfig::new(&pcie_model::LinkParams::default()).ok(),
        numa: Numa::default(),
        iommu: Iommu::Off,
        host: HostInfo {
            hostname: "h".into(),
            kernel: "6.1.0".into(),
            cpu_model: "cpu".into(),
            cpus: 4,
            ..HostInfo::default()
        },
        start_time: pcie_bench::rfc3339(UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
        end_time: None,
        left_out: Vec::new(),
    }
}

/// Deterministic latency samples around `base` cycles with a tail.
fn samples(base: u32, n: usize) -> LatencySamples {
    let mut x: u32 = base;
    let cycles = (0..n)
        .map(|i| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            base + (x >> 16) % 40 + if i % 997 == 0 { 5000 } else { 0 }
        })
        .collect::<Vec<_>>();
    let total_cycles = cycles.iter().map(|&c| c as u64 + 200).sum();
    LatencySamples {
        cycles,
        cycle_ps: 1e6 / 1200.0,
        total_cycles,
    }
}

fn bandwidth(p: &TestParams) -> Outcome {
    Outcome::Bandwidth(BandwidthTotals {
        bytes: p.count * p.size as u64,
        transactions: p.count,
        time_cycles: 1_000_000 + p.size as u64 * 1000,
        cycle_ps: 1e6 / 1200.0,
    })
}

/// Runs two latency tests of the details group (with CDF and raw samples) and two bandwidth
/// tests of the size sweep.
fn run(dir: &Path) -> Vec<(TestParams, Outcome)> {
    let quick = Suite::builtin("quick").unwrap();
    let mut details = quick
        .groups()
        .iter()
        .find(|g| g.base == "lat_dma_details")
        .unwrap()
        .clone();
    details.raw = true;
    let sweep = quick.groups().iter().find(|g| g.base == "bw_dma_sz_sweep").unwrap();
    let mut w = RunWriter::create(dir, info()).unwrap();
    let mut done = Vec::new();
    for (i, p) in details.expand().into_iter().take(2).enumerate() {
        let o = Outcome::Latency(samples(700 + 100 * i as u32, 5000));
        assert!(matches!(
            w.record(&details, &p, o.clone()).unwrap(),
            Measurement::Latency(_)
        ));
        done.push((p, o));
    }
    for p in sweep.expand().into_iter().take(2) {
        let o = bandwidth(&p);
        let Measurement::Bandwidth(b) = w.record(sweep, &p, o.clone()).unwrap() else {
            panic!()
        };
        assert_eq!(b.gbps, 8.0 * b.bytes as f64 / b.time_ns);
        done.push((p, o));
    }
    w.finish(UNIX_EPOCH + Duration::from_secs(1_700_000_100)).unwrap();
    done
}

#[test]
fn writer_output_reads_back_exactly() {
    let dir = scratch("round_trip");
    let done = run(&dir);
    let data = RunData::load(&dir).unwrap();
    let mut expect_info = info();
    expect_info.end_time = Some("2023-11-14T22:15:00Z".into());
    assert_eq!(data.info, Some(expect_info));
    let bases: Vec<&str> = data.files.iter().map(|f| f.base.as_str()).collect();
    assert_eq!(bases, ["bw_dma_sz_sweep", "lat_dma_details", "lat_dma_details_cdf"]);

    let Some(ResultData::Latency(rows)) = data.get("lat_dma_details") else {
        panic!()
    };
    let Some(ResultData::Cdf(sections)) = data.get("lat_dma_details_cdf") else {
        panic!()
    };
    assert_eq!((rows.len(), sections.len()), (2, 2));
    for ((p, o), (row, section)) in done.iter().zip(rows.iter().zip(sections)) {
        let Outcome::Latency(s) = o else { panic!() };
        let sorted = SortedLatencies::new(s).unwrap();
        let st = sorted.stats();
        assert_eq!(
            (row.key.test, row.key.size, row.key.window, row.key.cache),
            (p.kind, p.size, p.window, p.cache)
        );
        assert_eq!(
            (row.key.pattern, row.key.host_offset, row.key.device_offset),
            (p.pattern, 0, 0)
        );
        assert_eq!(
            (row.tavg_ns, row.avg_ns, row.med_ns, row.min_ns, row.max_ns),
            (st.ns.tavg, st.ns.avg, st.ns.median, st.ns.min, st.ns.max)
        );
        assert_eq!(
            (row.p95_ns, row.p99_ns, row.p999_ns),
            (st.ns.p95, Some(st.ns.p99), st.ns.p999)
        );
        assert_eq!((row.outliers, row.samples), (st.outliers, 5000));
        assert!(row.outliers > 0);
        let points: Vec<(f64, f64)> = sorted.cdf().iter().map(|c| (c.ns, c.cdf)).collect();
        assert_eq!(section.points, points);
    }

    let Some(ResultData::Bandwidth(rows)) = data.get("bw_dma_sz_sweep") else {
        panic!()
    };
    for ((p, o), row) in done[2..].iter().zip(rows) {
        let Outcome::Bandwidth(t) = o else { panic!() };
        let b = pcie_bench::BandwidthStats::new(t).unwrap();
        assert_eq!((row.key.test, row.key.size, row.key.cache), (p.kind, p.size, p.cache));
        assert_eq!(
            (row.time_ns, row.bytes, row.trans),
            (b.time_ns, b.bytes, b.transactions)
        );
        assert_eq!((row.bw_gbps, row.trans_per_sec), (b.gbps, b.trans_per_sec));
    }

    let raw = read_raw(&dir.join("lat_dma_details_raw.csv")).unwrap();
    assert_eq!(raw.len(), 10_000);
    let Outcome::Latency(first) = &done[0].1 else { panic!() };
    assert_eq!(
        (raw[1].index, raw[1].ns),
        (1, first.cycles[1] as f64 * first.cycle_ps / 1000.0)
    );
    assert_eq!((raw[5000].index, raw[5000].test), (0, done[1].0.kind));
}

#[test]
fn our_headers_label_units_and_add_p99() {
    let dir = scratch("headers");
    run(&dir);
    let head = |f: &str| {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        head("lat_dma_details.csv"),
        "Test,PAT,Cache,HO,DO,WinSZ,SZ,TAvg,Avg,Med,Min,Max,95%,99%,99.9%,TAvg(ns),Avg(ns),Med(ns),Min(ns),Max(ns),\
         95%(ns),99%(ns),99.9%(ns),#outliers,#samples"
    );
    assert_eq!(
        head("bw_dma_sz_sweep.csv"),
        "Test,PAT,Cache,HO,DO,WinSZ,SZ,Time(cyc),Time,Bytes,Trans,BW (Gb/s),Trans/s"
    );
    assert_eq!(head("lat_dma_details_cdf.csv"), "cycles,ns,cdf");
    assert_eq!(head("lat_dma_details_raw.csv"), "test,cache,window,size,index,ns");
    let row = std::fs::read_to_string(dir.join("bw_dma_sz_sweep.csv")).unwrap();
    assert!(row
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("BW_DMA_RD,Rand,HWarm,0,0,8192,16,"));
}

#[test]
fn same_inputs_give_byte_identical_files() {
    let (a, b) = (scratch("det_a"), scratch("det_b"));
    run(&a);
    run(&b);
    for f in [
        "bw_dma_sz_sweep.csv",
        "lat_dma_details.csv",
        "lat_dma_details_cdf.csv",
        "lat_dma_details_raw.csv",
        "run.json",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn interrupted_run_leaves_complete_files_for_finished_tests() {
    let dir = scratch("interrupted");
    let quick = Suite::builtin("quick").unwrap();
    let g = quick.groups().iter().find(|g| g.base == "lat_dma_sizes").unwrap();
    let tests = g.expand();
    let mut w = RunWriter::create(&dir, info()).unwrap();
    for (i, p) in tests.iter().take(3).enumerate() {
        w.record(g, p, Outcome::Latency(samples(600 + i as u32, 1000))).unwrap();
        // After every test the directory loads, with exactly the finished tests.
        let data = RunData::load(&dir).unwrap();
        let Some(ResultData::Latency(rows)) = data.get("lat_dma_sizes") else {
            panic!()
        };
        assert_eq!(rows.len(), i + 1);
        assert_eq!(data.info.as_ref().unwrap().end_time, None);
    }
    // A backend answering with the wrong kind of result is refused and changes nothing.
    let before = std::fs::read(dir.join("lat_dma_sizes.csv")).unwrap();
    let e = w.record(g, &tests[3], bandwidth(&tests[3])).unwrap_err().to_string();
    assert!(
        e.ends_with("lat_dma_sizes.csv: LAT_RD size 256 window 8192: the backend returned the other kind of result"),
        "{e}"
    );
    let empty = LatencySamples {
        cycles: vec![],
        cycle_ps: 1000.0,
        total_cycles: 0,
    };
    assert!(w
        .record(g, &tests[3], Outcome::Latency(empty))
        .unwrap_err()
        .to_string()
        .ends_with("no latency samples"));
    assert_eq!(std::fs::read(dir.join("lat_dma_sizes.csv")).unwrap(), before);
    drop(w);
    // No temporary files are left behind, and the directory is not reused for another run.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    let e = RunWriter::create(&dir, info()).err().unwrap().to_string();
    assert!(e.contains("exists and is not empty"), "{e}");
}

#[test]
fn new_run_directories_never_collide() {
    let root = scratch("create_new");
    std::fs::create_dir_all(&root).unwrap();
    let stem = root.join("bench-single-2026-11-25T120000Z");
    // Eight runs started at the same instant with the same stem: eight distinct directories.
    let dirs: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| RunWriter::create_new(&stem, info()).unwrap().dir().to_path_buf()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut names: Vec<String> = dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut want: Vec<String> = std::iter::once("bench-single-2026-11-25T120000Z".to_string())
        .chain((2..=8).map(|n| format!("bench-single-2026-11-25T120000Z-{n}")))
        .collect();
    want.sort();
    assert_eq!(names, want);
    for d in &dirs {
        assert!(d.join("run.json").is_file(), "{}", d.display());
    }
    std::fs::remove_dir_all(&root).unwrap();
}
