//! `pcieperf bench run` as a user runs it: run directories, determinism, refusals, Ctrl-C.

mod common;
use common::pcieperf;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn scratch(name: &str) -> PathBuf {
    common::fresh_path(&format!("bench-{name}"))
}

fn csv_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn quick_suite_writes_a_loadable_run_directory() {
    let out = scratch("quick");
    let o = pcieperf(&["bench", "run", "--samples", "3000", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = String::from_utf8(o.stdout).unwrap();
    assert!(
        summary.contains("bw_dma_sz_sweep") && summary.contains("lat_dma_sizes"),
        "{summary}"
    );
    let run = pcie_bench::RunData::load(&out).expect("our run directory loads through the shared reader");
    assert!(run.info.is_some());
    match run.get("bw_dma_sz_sweep") {
        Some(pcie_bench::ResultData::Bandwidth(rows)) => {
            assert!(rows.iter().all(|r| r.bw_gbps > 1.0 && r.bw_gbps < 64.0));
            assert!(rows.iter().any(|r| r.key.test == pcie_bench::TestKind::BwRdWr));
        }
        other => panic!("bw_dma_sz_sweep: {other:?}"),
    }
    let header = std::fs::read_to_string(out.join("lat_dma_sizes.csv")).unwrap();
    assert!(
        header.starts_with("Test,PAT,Cache,HO,DO,WinSZ,SZ,TAvg,Avg,Med,Min,Max,95%,99%,99.9%"),
        "{header}"
    );
    assert!(std::fs::read_dir(&out)
        .unwrap()
        .all(|e| !e.unwrap().file_name().to_string_lossy().contains(".tmp")));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn same_seed_gives_byte_identical_csvs_whatever_the_thread_count() {
    let (a, b) = (scratch("seed-a"), scratch("seed-b"));
    for (dir, threads) in [(&a, "1"), (&b, "2")] {
        let o = pcieperf(&[
            "bench",
            "run",
            "--samples",
            "2000",
            "--seed",
            "9",
            "--threads",
            threads,
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (fa, fb) = (csv_files(&a), csv_files(&b));
    assert!(fa.len() >= 6);
    assert_eq!(fa, fb);
    let c = scratch("seed-c");
    pcieperf(&[
        "bench",
        "run",
        "--samples",
        "2000",
        "--seed",
        "10",
        "--out",
        c.to_str().unwrap(),
    ]);
    assert_ne!(csv_files(&c), fa, "another seed gives other samples");
    for d in [a, b, c] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn single_test_prints_pcie_bench_columns() {
    let out = scratch("single");
    let o = pcieperf(&[
        "bench",
        "run",
        "--test",
        "BW_RD",
        "--size",
        "256",
        "--samples",
        "20000",
        "--format",
        "csv",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("Test,PAT,Cache,HO,DO,WinSZ,SZ,Time(cyc),Time,Bytes,Trans,BW (Gb/s),Trans/s")
    );
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&row[..7], ["BW_DMA_RD", "Rand", "HWarm", "0", "0", "8192", "256"]);
    let gbps: f64 = row[11].parse().unwrap();
    assert!(gbps > 35.0 && gbps < 56.0, "{gbps}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn raw_samples_and_cdfs_on_request() {
    let out = scratch("raw");
    let o = pcieperf(&[
        "bench",
        "run",
        "--test",
        "LAT_RD",
        "--samples",
        "500",
        "--raw",
        "--cdf",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let raw = pcie_bench::read_raw(&out.join("lat_rd_raw.csv")).unwrap();
    assert_eq!(raw.len(), 500);
    assert!(raw.iter().all(|s| s.ns > 400.0 && s.ns < 20_000.0));
    let cdf = std::fs::read_to_string(out.join("lat_rd_cdf.csv")).unwrap();
    assert!(cdf.starts_with("cycles,ns,cdf"), "{cdf}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_parameters_exit_2_naming_the_value() {
    let dir = scratch("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("broken.toml");
    std::fs::write(&suite, "name = \"x\"\n[[group]]\nbase = \"a\"\ntests = [\"LAT_RD\"]\nsizes = [64]\nwindows = [8192]\ncaches = [\"warm\"]\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--test", "LAT_RD", "--size", "4000", "--host-offset", "200"],
            "4200",
        ),
        (vec!["--test", "LAT_RD", "--window", "1000"], "window 1000"),
        (
            vec!["--test", "LAT_RD", "--cache", "hwarm,cold"],
            "--cache hwarm,cold: must be one of",
        ),
        (vec!["--test", "LAT_FOO"], "--test LAT_FOO: must be one of"),
        (vec!["--backend", "sim:pentium"], "unknown host profile"),
        (vec!["--suite", suite.to_str().unwrap()], "\"warm\" is not one of"),
        (vec!["--only", "no_such_base"], "no_such_base"),
        (vec!["--numa", "mem=9"], "--numa mem=9"),
        (vec!["--iommu", "1g"], "--iommu 1g: must be one of off, 2m, 4k"),
        (vec!["--threads", "0"], "--threads 0: must be at least 1"),
    ];
    for (args, message) in cases {
        let mut all = vec!["bench", "run", "--out", dir.to_str().unwrap()];
        all.extend(&args);
        let o = pcieperf(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!dir.join("run.json").exists(), "{args:?} started a run");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn ctrl_c_keeps_complete_csvs_of_finished_tests() {
    let out = scratch("interrupt");
    let child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args([
            "bench",
            "run",
            "--suite",
            "paper",
            "--samples",
            "300000",
            "--threads",
            "1",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some tests have finished, then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while (!out.exists() || csv_files(&out).is_empty()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("interrupted after"));
    let run = pcie_bench::RunData::load(&out).expect("what was written loads");
    assert!(!run.files.is_empty());
    assert!(std::fs::read_dir(&out)
        .unwrap()
        .all(|e| !e.unwrap().file_name().to_string_lossy().contains(".tmp")));
    std::fs::remove_dir_all(&out).unwrap();
}
