//! The reader loads original pcie-bench data directories completely: CRLF lines, "BW (GB/s)"
//! holding Gb/s, windows written as floats, no 99th percentile, CDF sections.

use pcie_bench::{CacheState, LatencyRow, Pattern, ResultData, RowKey, RunData, TestKind};
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/reference/pcie-bench")
        .join(name)
}

const PLAIN: &str = "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro";
const IOMMU_4K: &str = "nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp";

#[test]
fn loads_both_reference_directories_completely() {
    for name in [PLAIN, IOMMU_4K] {
        let data = RunData::load(&dir(name)).unwrap();
        assert!(data.info.is_none(), "pcie-bench directories have no run.json");
        let csvs = std::fs::read_dir(dir(name))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "csv"))
            .count();
        assert_eq!(data.files.len(), csvs);
        assert_eq!(csvs, 30);
        let (mut lat, mut bw, mut cdf) = (0, 0, 0);
        for f in &data.files {
            // Every line of every file became a row (header excluded).
            let lines = std::fs::read_to_string(dir(name).join(format!("{}.csv", f.base)))
                .unwrap()
                .lines()
                .count()
                - 1;
            let rows = match &f.data {
                ResultData::Latency(r) => {
                    lat += 1;
                    assert!(r.iter().all(|r| r.p99_ns.is_none()));
                    r.len()
                }
                ResultData::Bandwidth(r) => {
                    bw += 1;
                    r.len()
                }
                ResultData::Cdf(s) => {
                    cdf += 1;
                    s.iter().map(|s| s.points.len()).sum()
                }
            };
            assert_eq!(rows, lines, "{name}/{}", f.base);
        }
        assert_eq!((lat, bw, cdf), (15, 13, 2), "{name}");
    }
}

#[test]
fn latency_row_as_the_method_notes_quote_it() {
    let data = RunData::load(&dir(PLAIN)).unwrap();
    let Some(ResultData::Latency(rows)) = data.get("lat_dma_sizes") else {
        panic!("lat_dma_sizes")
    };
    let r = rows
        .iter()
        .find(|r| r.key.test == TestKind::LatRd && r.key.size == 64)
        .unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 0.05;
    assert_eq!(
        (
            r.key.pattern,
            r.key.cache,
            r.key.window,
            r.key.host_offset,
            r.key.device_offset
        ),
        (Pattern::Seq, CacheState::HWarm, 8192, 0, 0)
    );
    assert!(close(r.tavg_ns, 790.8) && close(r.avg_ns, 598.9) && close(r.med_ns, 600.0));
    assert!(close(r.min_ns, 546.7) && close(r.max_ns, 9240.0));
    assert!(close(r.p95_ns, 613.3) && close(r.p999_ns, 626.7));
    assert_eq!((r.p99_ns, r.outliers, r.samples), (None, 16, 2_097_152));
}

#[test]
fn bandwidth_columns_are_gigabits_and_nanoseconds() {
    for name in [PLAIN, IOMMU_4K] {
        let data = RunData::load(&dir(name)).unwrap();
        for f in &data.files {
            let ResultData::Bandwidth(rows) = &f.data else { continue };
            for r in rows {
                // "BW (GB/s)" = 8 × bytes / ns, and Trans/s = transactions per second of Time.
                let gbps = 8.0 * r.bytes as f64 / r.time_ns;
                assert!((r.bw_gbps - gbps).abs() < 1e-9 * gbps, "{name}/{}", f.base);
                let rate = r.trans as f64 / (r.time_ns / 1e9);
                assert!((r.trans_per_sec - rate).abs() < 1e-6 * rate, "{name}/{}", f.base);
                assert_eq!(r.bytes, r.trans * r.key.size as u64);
            }
        }
    }
}

#[test]
fn float_windows_and_the_iommu_cliff() {
    let find = |name: &str, window: u64| {
        let data = RunData::load(&dir(name)).unwrap();
        let Some(ResultData::Bandwidth(rows)) = data.get("bw_dma_win_sweep_rd_rnd_64") else {
            panic!("bw_dma_win_sweep_rd_rnd_64")
        };
        rows.iter()
            .find(|r| r.key.cache == CacheState::Cold && r.key.window == window)
            .unwrap()
            .bw_gbps
    };
    // 1.5 MB is written "1572864.0" by pcie-bench.
    assert!(find(PLAIN, 1_572_864) > 24.0);
    // 4 KB IO pages: 64 B reads over a 64 MB window fall to ~9.8 Gb/s (from ~26 without IOMMU).
    let (with, without) = (find(IOMMU_4K, 64 << 20), find(PLAIN, 64 << 20));
    assert!((9.0..10.5).contains(&with) && without > 24.0, "{with} {without}");
}

#[test]
fn latency_files_need_only_the_ns_columns() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ns-only");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(
        tmp.join("lat.csv"),
        "Test,PAT,Cache,HO,DO,WinSZ,SZ,TAvg(ns),Avg(ns),Med(ns),Min(ns),Max(ns),95%(ns),99.9%(ns),#outliers,#samples\n\
         LAT_DMA_RD,Rand,Cold,0,0,67108864.0,64,1,2,3,4,5,6,7,0,10\n",
    )
    .unwrap();
    let data = RunData::load(&tmp).unwrap();
    let Some(ResultData::Latency(rows)) = data.get("lat") else {
        panic!()
    };
    assert_eq!(
        rows[0],
        LatencyRow {
            key: RowKey {
                test: TestKind::LatRd,
                pattern: Pattern::Rand,
                cache: CacheState::Cold,
                host_offset: 0,
                device_offset: 0,
                window: 64 << 20,
                size: 64,
            },
            tavg_ns: 1.0,
            avg_ns: 2.0,
            med_ns: 3.0,
            min_ns: 4.0,
            max_ns: 5.0,
            p95_ns: 6.0,
            p99_ns: None,
            p999_ns: 7.0,
            outliers: 0,
            samples: 10,
        }
    );
}

#[test]
fn malformed_files_are_located() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("malformed");
    let write = |name: &str, text: &str| {
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join(name), text).unwrap();
        RunData::load(&tmp).unwrap_err().to_string()
    };
    let head = "Test,PAT,Cache,HO,DO,WinSZ,SZ,Time(cyc),Time,Bytes,Trans,BW (GB/s),Trans/s\n";
    let e = write(
        "bw.csv",
        &format!("{head}BW_DMA_RD,Seq,Lukewarm,0,0,8192,64,1,1,1,1,1,1\n"),
    );
    assert_eq!(
        e,
        format!(
            "{}:2: column \"Cache\": \"Lukewarm\" is not Cold, DThrash, DWarm or HWarm",
            tmp.join("bw.csv").display()
        )
    );
    let e = write(
        "bw.csv",
        &format!("{head}BW_DMA_RD,Seq,Cold,0,0,8192,64,1,1,1,1,fast,1\n"),
    );
    assert!(
        e.ends_with("bw.csv:2: column \"BW (GB/s)\": \"fast\" is not a number"),
        "{e}"
    );
    let e = write("bw.csv", &format!("{head}BW_DMA_XX,Seq,Cold,0,0,8192,64,1,1,1,1,1,1\n"));
    assert!(e.contains("column \"Test\": \"BW_DMA_XX\" is not a test name"), "{e}");
    let e = write("bw.csv", "Test,PAT,Cache,HO,DO,WinSZ,SZ,Time,Bytes,Trans/s\n");
    assert!(
        e.ends_with("bw.csv:1: column \"Trans\": missing from the header"),
        "{e}"
    );
    let e = write("notes.csv", "a,b\n1,2\n");
    assert!(e.contains("notes.csv:1: not a result table"), "{e}");
    let e = write("run.json", "{\"tool\": 1}");
    assert!(e.contains("run.json:1: invalid type"), "{e}");
}
