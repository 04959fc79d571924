//! `pcieperf bench run` as a user runs it: run directories, determinism, refusals, Ctrl-C.

use crate::common;
use common::pcieperf;

use std::path::Path;
use std::process::{Command, Stdio};

fn scratch(name: &str) -> common::Scratch {
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

/// Every file of a run directory, name and bytes; `run.json` without what differs between two
/// runs of the same command by design: its start and end times, and the command line (whose
/// `-j` and `--out` values the caller checks).
fn run_dir_files(dir: &Path) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let mut files = Vec::new();
    let mut command_line = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let mut bytes = std::fs::read(&p).unwrap();
        if name == "run.json" {
            let mut info: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let info = info.as_object_mut().unwrap();
            for time in ["start_time", "end_time"] {
                assert!(info.remove(time).is_some_and(|t| t.is_string()), "{time}");
            }
            let line = info.remove("command_line").unwrap();
            command_line = serde_json::from_value(line).unwrap();
            bytes = serde_json::to_vec_pretty(info).unwrap();
        }
        files.push((name, bytes));
    }
    files.sort();
    (files, command_line)
}

#[test]
fn same_seed_gives_byte_identical_run_directories_whatever_the_thread_count() {
    let (a, b) = (scratch("seed-a"), scratch("seed-b"));
    let mut runs = Vec::new();
    for (dir, threads) in [(&a, "1"), (&b, "4")] {
        let out = dir.to_str().unwrap();
        let args = [
            "bench",
            "run",
            "--samples",
            "2000",
            "--seed",
            "9",
            "--cdf",
            "--raw",
            "-j",
            threads,
            "--out",
            out,
        ];
        let o = pcieperf(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (files, command_line) = run_dir_files(dir);
        assert_eq!(command_line[1..], args, "run.json's command line is the one typed");
        runs.push(files);
    }
    let names: Vec<&str> = runs[0].iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"run.json"), "{names:?}");
    assert!(
        names.iter().filter(|n| n.ends_with("_raw.csv")).count() >= 2,
        "{names:?}"
    );
    assert!(names.iter().filter(|n| n.ends_with(".csv")).count() >= 8, "{names:?}");
    for ((name, one), (_, four)) in runs[0].iter().zip(&runs[1]) {
        assert!(one == four, "{name} differs between -j 1 and -j 4");
    }
    assert_eq!(runs[0].len(), runs[1].len());
    let c = scratch("seed-c");
    pcieperf(&[
        "bench",
        "run",
        "--samples",
        "2000",
        "--seed",
        "10",
        "--cdf",
        "--raw",
        "--threads",
        "4",
        "--out",
        c.to_str().unwrap(),
    ]);
    let (other, _) = run_dir_files(&c);
    let other_names: Vec<&str> = other.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(other_names, names, "another seed writes the same files");
    assert_ne!(csv_files(&c), csv_files(&a), "another seed gives other samples");
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
        (vec!["--threads", "0"], "--threads 0: must be from 1 to 256"),
        (vec!["--threads", "1000000"], "--threads 1000000: must be from 1 to 256"),
        // Used to panic with "capacity overflow" (exit 101).
        (
            vec!["--test", "LAT_RD", "--samples", "18446744073709551615"],
            "--samples 18446744073709551615: must be between 1 and 16777216 latency samples",
        ),
        // Used to allocate 16 GB up front and abort (exit 134), leaving a run.json.
        (
            vec!["--test", "LAT_RD", "--samples", "4000000000"],
            "--samples 4000000000: must be between 1 and 16777216",
        ),
        (
            vec!["--test", "BW_RD", "--samples", "4294967297"],
            "--samples 4294967297: must be between 1 and 4294967296 DMAs",
        ),
        (vec!["--test", "BW_RD", "--samples", "0"], "--samples 0: must be between 1"),
        (
            vec!["--samples", "16777217"],
            "--samples 16777217: must be between 1 and 16777216 latency samples (all are held in memory) (group \"lat_dma_sizes\"",
        ),
        (vec!["--test", "LAT_RD", "--size", "0"], "--size 0: must be at least 1"),
        (vec!["--test", "LAT_RD", "--size", "4294967296"], "--size"),
        (vec!["--test", "LAT_RD", "--size", "-1"], "-1"),
        (vec!["--test", "LAT_RD", "--window", "1e300"], "--window 1e300: \"1e300\" is not a byte count"),
        (vec!["--test", "LAT_RD", "--window", "nan"], "--window nan"),
        (vec!["--test", "LAT_RD", "--window", ""], "--window : \"\" is not a byte count"),
        (vec!["--test", "LAT_RD", "--window", "17179869184.0G"], "--window 17179869184.0G"),
        (vec!["--test", "LAT_RD", "--window", "128M"], "--window 134217728: must be at most"),
        (
            vec!["--test", "LAT_RD", "--host-offset", "4294967295"],
            "--host-offset 4294967295: must be below 4096",
        ),
        // Used to wrap around in u32 and pass as a 63-byte reach.
        (
            vec!["--test", "LAT_RD", "--device-offset", "4294967295"],
            "--device-offset 4294967295: device offset + transfer must fit",
        ),
        (vec!["--seed", "-1"], "-1"),
        (vec!["--seed", "18446744073709551616"], "--seed"),
        (vec!["--numa", "dev=256"], "--numa dev=256"),
        (vec!["--numa", "dev=0,dev=1"], "--numa dev=0,dev=1: dev is given twice"),
        (
            vec!["--numa", "mem=2"],
            "--numa dev=0,mem=2,cpu=0: the simulated host has 2 sockets: dev, mem and cpu must be 0 or 1",
        ),
        (vec!["--numa", ""], "--numa : must be like"),
        (vec!["--iommu", ""], "--iommu : must be one of off, 2m, 4k"),
        (
            vec!["--handshake-timeout", "nan"],
            "--handshake-timeout NaN: must be a number of seconds above 0 and at most 604800",
        ),
        (vec!["--handshake-timeout", "inf"], "--handshake-timeout inf: must be"),
        (vec!["--handshake-timeout", "1e300"], "--handshake-timeout 1e300: must be"),
        (vec!["--handshake-timeout", "-1"], "-1"),
        (vec!["--handshake-timeout", "0"], "--handshake-timeout 0.0: must be"),
    ];
    // The run directory: new (the suite's directory, not empty, would itself be refused).
    let out = dir.join("run");
    for (args, message) in cases {
        let mut all = vec!["bench", "run", "--out", out.to_str().unwrap()];
        all.extend(&args);
        let o = pcieperf(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} started a run");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `pcieperf args` in `dir` as the current directory.
fn run_in(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn runs_started_together_get_their_own_default_directories() {
    let cwd = scratch("together");
    std::fs::create_dir_all(&cwd).unwrap();
    let args = ["bench", "run", "--test", "LAT_RD", "--samples", "200"];
    // Same second, same name stem: before, all but one failed with "already holds a run".
    let children: Vec<_> = (0..3).map(|_| run_in(&cwd, &args)).collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let dirs = entries(&cwd);
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    for d in &dirs {
        assert!(d.starts_with("bench-single-"), "{d}");
        let run = pcie_bench::RunData::load(&cwd.join(d)).unwrap();
        assert_eq!(run.files.len(), 1, "{d}");
    }
    std::fs::remove_dir_all(&cwd).unwrap();
}

#[test]
fn a_single_test_printed_as_csv_or_json_leaves_no_directory() {
    let cwd = scratch("no-dir");
    std::fs::create_dir_all(&cwd).unwrap();
    for format in ["csv", "json"] {
        let args = [
            "bench",
            "run",
            "--test",
            "LAT_RD",
            "--samples",
            "200",
            "--format",
            format,
        ];
        let o = run_in(&cwd, &args).wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        match format {
            "csv" => assert!(text.starts_with("Test,PAT,Cache,HO,DO,WinSZ,SZ,TAvg,"), "{text}"),
            _ => assert!(text.starts_with("{\"base\":\"lat_rd\""), "{text}"),
        }
        assert_eq!(entries(&cwd), Vec::<String>::new(), "--format {format}");
    }
    // The same output as with --out, where the directory stays.
    let out = cwd.join("kept");
    let with_out = pcieperf(&[
        "bench",
        "run",
        "--test",
        "LAT_RD",
        "--samples",
        "200",
        "--format",
        "csv",
        "--out",
        out.to_str().unwrap(),
    ]);
    let without = run_in(
        &cwd,
        &[
            "bench",
            "run",
            "--test",
            "LAT_RD",
            "--samples",
            "200",
            "--format",
            "csv",
        ],
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(with_out.stdout, without.stdout);
    assert!(out.join("lat_rd.csv").is_file());
    assert_eq!(entries(&cwd), vec!["kept".to_string()]);
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// Every file of a run directory parses completely: run.json as a run, every CSV through the
/// reader, and no temporary file left behind.
fn assert_complete(dir: &Path) -> pcie_bench::RunData {
    let run = pcie_bench::RunData::load(dir).expect("what was written loads");
    let info = run.info.as_ref().expect("run.json");
    assert!(info.end_time.is_some(), "run.json is stamped with its end");
    for name in entries(dir) {
        assert!(
            name == "run.json" || name.ends_with(".csv"),
            "{name} is not a complete result file"
        );
    }
    run
}

#[cfg(unix)]
fn interrupted_with(signal: i32, name: &str) {
    let out = scratch(name);
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
            "--raw",
            "--cdf",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some tests have finished, then signal.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while (!out.exists() || csv_files(&out).is_empty()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("interrupted after"));
    let run = assert_complete(&out);
    assert!(!run.files.is_empty());
    std::fs::remove_dir_all(&out).unwrap();
}

#[cfg(unix)]
#[test]
fn sigint_keeps_complete_files_of_finished_tests() {
    interrupted_with(libc::SIGINT, "sigint");
}

#[cfg(unix)]
#[test]
fn sigterm_keeps_complete_files_of_finished_tests() {
    interrupted_with(libc::SIGTERM, "sigterm");
}
