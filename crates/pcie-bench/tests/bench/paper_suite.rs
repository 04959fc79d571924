//! The paper suite reproduces pcie-bench's NFP control program: expanding it yields exactly the
//! rows of every CSV of a full pcie-bench run, in order, with the same counts.

use pcie_bench::{ResultData, RowKey, RunData, Suite, TestKind, TestParams};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn reference_dir() -> PathBuf {
    reference_dirs()[0].clone()
}

/// Both reference systems: IOMMU off, and IOMMU with 4 KB pages; both ran the full suite.
fn reference_dirs() -> [PathBuf; 2] {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/reference/pcie-bench");
    [
        root.join("nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro"),
        root.join("nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro-iommu-nosp"),
    ]
}

fn expanded(suite: &Suite, base: &str) -> Vec<TestParams> {
    suite
        .groups()
        .iter()
        .filter(|g| g.base == base)
        .flat_map(|g| g.expand())
        .collect()
}

#[test]
fn paper_suite_matches_every_reference_csv_row_by_row() {
    for dir in reference_dirs() {
        matches_reference(&dir);
    }
}

fn matches_reference(dir: &std::path::Path) {
    let suite = Suite::builtin("paper").unwrap();
    let data = RunData::load(dir).unwrap();
    let mut checked = 0;
    for file in &data.files {
        let tests = expanded(&suite, &file.base);
        // (key, count) of every row the reference file has.
        let rows: Vec<(RowKey, u64)> = match &file.data {
            ResultData::Cdf(_) => continue,
            ResultData::Latency(rows) => rows.iter().map(|r| (r.key, r.samples)).collect(),
            ResultData::Bandwidth(rows) => rows
                .iter()
                .map(|r| {
                    // pcie-bench halves the transaction count of BW_DMA_RW (per direction).
                    let dmas = if r.key.test == TestKind::BwRdWr {
                        r.trans * 2
                    } else {
                        r.trans
                    };
                    (r.key, dmas)
                })
                .collect(),
        };
        let ours: Vec<(RowKey, u64)> = tests.iter().map(|p| (RowKey::from(p), p.count)).collect();
        assert_eq!(ours.len(), rows.len(), "{}: row count", file.base);
        for (i, (o, r)) in ours.iter().zip(&rows).enumerate() {
            assert_eq!(o, r, "{}: row {}", file.base, i + 2);
        }
        checked += 1;
    }
    assert_eq!(checked, 28, "result CSVs compared (all but the two CDF files)");
}

#[test]
fn paper_suite_outputs_are_exactly_the_reference_files() {
    let suite = Suite::builtin("paper").unwrap();
    let data = RunData::load(&reference_dir()).unwrap();
    let mut ours = BTreeSet::new();
    for g in suite.groups() {
        ours.insert(g.base.clone());
        if g.cdf {
            ours.insert(format!("{}_cdf", g.base));
        }
    }
    let theirs: BTreeSet<String> = data.files.iter().map(|f| f.base.clone()).collect();
    assert_eq!(ours, theirs);
    assert_eq!(suite.bases().len(), 28);
    assert_eq!(suite.test_count(), 2472);
}

#[test]
fn paper_suite_runs_in_pcie_bench_order() {
    let suite = Suite::builtin("paper").unwrap();
    let order = [
        "lat_cmd_sizes",
        "lat_cmd_sweep_rd_rnd_08",
        "lat_cmd_sweep_rd_rnd_64",
        "lat_cmd_sweep_wrrd_rnd_08",
        "lat_cmd_sweep_wrrd_rnd_64",
        "lat_cmd_off_rd",
        "lat_cmd_off_wrrd",
        "lat_dma_sizes",
        "lat_dma_sizes_byte_inc",
        "lat_dma_sweep_rd_rnd_64",
        "lat_dma_sweep_wrrd_rnd_64",
        "lat_dma_off_rd",
        "lat_dma_off_wrrd",
        "lat_cmd_details",
        "lat_dma_details",
        "bw_dma_sz_sweep",
        "bw_dma_win_sweep_rd_rnd_64",
        "bw_dma_win_sweep_rd_rnd_128",
        "bw_dma_win_sweep_rd_rnd_256",
        "bw_dma_win_sweep_rd_rnd_512",
        "bw_dma_win_sweep_wr_rnd_64",
        "bw_dma_win_sweep_wr_rnd_128",
        "bw_dma_win_sweep_wr_rnd_256",
        "bw_dma_win_sweep_wr_rnd_512",
        "bw_dma_off_rd_cold",
        "bw_dma_off_wr_cold",
        "bw_dma_off_rd",
        "bw_dma_off_wr",
    ];
    assert_eq!(suite.bases(), order);
}

#[test]
fn details_cdf_sections_follow_the_details_rows() {
    let data = RunData::load(&reference_dir()).unwrap();
    for base in ["lat_cmd_details", "lat_dma_details"] {
        let Some(ResultData::Latency(rows)) = data.get(base) else {
            panic!("{base} missing")
        };
        let Some(ResultData::Cdf(sections)) = data.get(&format!("{base}_cdf")) else {
            panic!("{base}_cdf missing")
        };
        assert_eq!(sections.len(), rows.len(), "{base}");
        for (s, r) in sections.iter().zip(rows) {
            // Each section starts at the minimum with fraction 0 and ends at the maximum at 1.
            assert_eq!(s.points[0], (r.min_ns, 0.0), "{base}");
            let last = s.points.last().unwrap();
            assert!(
                (last.0 - r.max_ns).abs() < 1e-6 && (last.1 - 1.0).abs() < 1e-6,
                "{base}"
            );
        }
    }
}
