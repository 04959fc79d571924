//! Hostile result files, suites and device replies: each is refused with a located message
//! (or, for what is legitimately odd, accepted), never a panic, a silent wrong figure or an
//! unbounded read. Cases found by the fuzzer (crates/pcie-fuzz) are kept here.

use pcie_bench::{ResultData, ResultFile, RunData};
use std::path::{Path, PathBuf};

const LATENCY: &str = "Test,PAT,Cache,HO,DO,WinSZ,SZ,TAvg,Avg,Med,Min,Max,95%,99.9%,TAvg(ns),Avg(ns),Med(ns),Min(ns),Max(ns),95%(ns),99.9%(ns),#outliers,#samples
LAT_DMA_RD,Seq,HWarm,0,0,8192,4,932,700.69,704.0,640,11696,720.0,736.0,776.66,583.90,586.66,533.33,9746.66,600.0,613.33,12,2097152
";

fn parse(text: &str) -> Result<Option<ResultFile>, String> {
    ResultFile::parse(Path::new("lat.csv"), text).map_err(|e| e.to_string())
}

/// LATENCY with the Med(ns) field of the row replaced.
fn with_median(v: &str) -> String {
    LATENCY.replace(",586.66,", &format!(",{v},"))
}

#[test]
fn latency_figures_must_be_finite_non_negative_and_bounded() {
    let Some(ResultFile {
        data: ResultData::Latency(rows),
        ..
    }) = parse(LATENCY).unwrap()
    else {
        panic!("not a latency file")
    };
    assert_eq!(rows[0].med_ns, 586.66);
    for bad in ["NaN", "inf", "-inf", "-1", "1e300", "1e16", ""] {
        let e = parse(&with_median(bad)).unwrap_err();
        assert!(e.starts_with("lat.csv:2: column \"Med(ns)\": "), "{bad}: {e}");
    }
    let e = parse(&LATENCY.replace(",12,2097152", ",12,0")).unwrap_err();
    assert_eq!(
        e,
        "lat.csv:2: column \"#samples\": 0: a latency row needs at least 1 sample"
    );
    let e = parse(&LATENCY.replace(",12,2097152", ",13,12")).unwrap_err();
    assert_eq!(e, "lat.csv:2: column \"#outliers\": 13 outliers of 12 samples");
    let e = parse(&LATENCY.replace(",12,2097152", ",12,18446744073709551616")).unwrap_err();
    assert!(e.contains("is not a whole number"), "{e}");
    let e = parse(&LATENCY.replace(",Med(ns),", ",Median,")).unwrap_err();
    assert!(e.contains("not a result table"), "{e}");
    let e = parse(&LATENCY.replace(",Min(ns),", ",Mn,")).unwrap_err();
    assert_eq!(e, "lat.csv:1: column \"Min(ns)\": missing from the header");
}

#[test]
fn duplicate_rows_are_kept_as_written() {
    // pcie-bench's offset sweeps run host offset 0 / device offset 0 twice; both rows stay.
    let row = LATENCY.lines().nth(1).unwrap();
    let text = format!("{LATENCY}{row}\n");
    let Some(ResultFile {
        data: ResultData::Latency(rows),
        ..
    }) = parse(&text).unwrap()
    else {
        panic!("not a latency file")
    };
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], rows[1]);
}

#[test]
fn cdf_fractions_stay_within_one() {
    let ok = "cycles,ns,cdf\n592,493.3,0\n592,493.3,0.5\n608,506.6,1\n";
    assert!(matches!(
        parse(ok).unwrap().unwrap().data,
        ResultData::Cdf(ref s) if s.len() == 1 && s[0].points.len() == 3
    ));
    let e = parse(&ok.replace(",1\n", ",1.5\n")).unwrap_err();
    assert_eq!(e, "lat.csv:4: column \"cdf\": 1.5 is above 1: not a fraction");
    let e = parse(&ok.replace(",0.5\n", ",NaN\n")).unwrap_err();
    assert!(e.contains("NaN must be a number from 0 to 1e15"), "{e}");
}

#[test]
fn bandwidth_figures_are_checked() {
    let text = "Test,PAT,Cache,HO,DO,WinSZ,SZ,Time(cyc),Time,Bytes,Trans,BW (GB/s),Trans/s
BW_DMA_RD,Seq,HWarm,0,0,8192,64,172106144,143421786.66,536870912,8388608,29.94,58489077.53
";
    assert!(parse(text).unwrap().is_some());
    for (from, to, column) in [
        (",29.94,", ",-29.94,", "BW (GB/s)"),
        (",143421786.66,", ",inf,", "Time"),
        (",536870912,", ",-1,", "Bytes"),
        (",64,", ",4294967296,", "SZ"),
    ] {
        let e = parse(&text.replace(from, to)).unwrap_err();
        assert!(e.starts_with(&format!("lat.csv:2: column \"{column}\"")), "{to}: {e}");
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn oversized_files_are_refused_unread_and_raw_files_skipped_unread() {
    let dir = scratch("oversized");
    // Sparse files: 300 MB on paper, nothing on disk. Before, each was read whole into memory
    // (and the raw file parsed into rows just to be skipped).
    let huge = dir.join("lat.csv");
    std::fs::write(&huge, LATENCY).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&huge)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    let raw = dir.join("lat_raw.csv");
    std::fs::write(&raw, "test,cache,window,size,index,ns\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&raw)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    let e = RunData::load(&dir).unwrap_err().to_string();
    assert!(
        e.ends_with("lat.csv: 314572800 bytes: larger than the 268435456 bytes a result table may have"),
        "{e}"
    );
    std::fs::remove_file(&huge).unwrap();
    assert!(RunData::load(&dir).unwrap().files.is_empty());
    // run.json too: a 2 GB one used to be read whole before parsing.
    let info = dir.join("run.json");
    std::fs::write(&info, "{").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&info)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let e = RunData::load(&dir).unwrap_err().to_string();
    assert!(
        e.ends_with("run.json: 2147483648 bytes: larger than the 16777216 bytes a run.json may have"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
