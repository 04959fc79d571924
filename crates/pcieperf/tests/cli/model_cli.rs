//! `pcieperf model ...` as a user runs it: outputs, exit codes and messages.

use crate::common;
use common::{pcieperf, refused, stderr, stdout};

use std::path::PathBuf;

#[test]
fn bad_link_parameters_are_refused_with_their_allowed_values() {
    let cases: &[(&[&str], &str)] = &[
        (&["--gen", "8"], "--gen 8: must be one of 1, 2, 3, 4, 5, 6, 7"),
        (&["--gen", "pcie3"], "--gen pcie3: must be one of 1, 2, 3, 4, 5, 6, 7"),
        (
            &["--mps", "300"],
            "--mps 300: must be one of 128, 256, 512, 1024, 2048, 4096",
        ),
        (
            &["--mrrs", "8192"],
            "--mrrs 8192: must be one of 128, 256, 512, 1024, 2048, 4096",
        ),
        (&["--lanes", "3"], "--lanes 3: must be one of 1, 2, 4, 8, 16, 32"),
        (&["--lanes", "x3"], "--lanes x3: must be one of 1, 2, 4, 8, 16, 32"),
        (&["--sizes", "0"], "--sizes 0: must be between 1 and 16777216"),
        (&["--sizes", "64,0,128"], "--sizes 0: must be between 1 and 16777216"),
        (
            &["--gen", "6", "--flit", "off"],
            "--flit off: Gen6 links always run in flit mode; use on or auto",
        ),
        (
            &["--flit", "sometimes"],
            "--flit sometimes: must be one of auto, on, off",
        ),
        (&["--rcb", "96"], "--rcb 96: must be one of 64, 128"),
        (&["--op", "copy"], "--op copy: must be one of wr, rd, rdwr"),
        (&["--compat", "pcie-sim"], "--compat pcie-sim: must be pcie-model"),
        (
            &["--compat", "pcie-model", "--offset", "8"],
            "--offset 8: pcie-model assumes aligned transfers",
        ),
        (&["--eth", "33"], "--eth 33: must be one of 10, 25, 40, 100, 200, 400"),
        (&["--latency", "-5"], "--latency -5: must be a number of nanoseconds"),
        (
            &["--tag-bits", "14"],
            "--tag-bits 14: 14-bit tags exist only in flit mode",
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["model", "bw"];
        all.extend_from_slice(args);
        let err = refused(&all);
        assert!(err.contains(message), "{args:?}: got {err}");
    }
}

#[test]
fn hostile_numbers_are_refused_naming_the_value_and_the_allowed_range() {
    let one_of_sizes = "must be one of 128, 256, 512, 1024, 2048, 4096";
    let cases: &[(&[&str], String)] = &[
        // Negative and out-of-u32 numbers reach the model's message, not clap's.
        (&["bw", "--mps", "-1"], format!("--mps -1: {one_of_sizes}")),
        (
            &["bw", "--mrrs", "4294967296"],
            format!("--mrrs 4294967296: {one_of_sizes}"),
        ),
        (&["bw", "--rcb", "nan"], "--rcb nan: must be one of 64, 128".into()),
        (&["bw", "--addr", "1e300"], "--addr 1e300: must be one of 32, 64".into()),
        (
            &["bw", "--tag-bits", ""],
            "--tag-bits : must be one of 5, 8, 10, 14".into(),
        ),
        (
            &["bw", "--tlp-align", "-16"],
            "--tlp-align -16: must be one of 4, 8, 16, 32, 64".into(),
        ),
        (
            &["bw", "--lanes", "-8"],
            "--lanes -8: must be one of 1, 2, 4, 8, 16, 32".into(),
        ),
        (
            &["bw", "--gen", "-1"],
            "--gen -1: must be one of 1, 2, 3, 4, 5, 6, 7".into(),
        ),
        (
            &["bw", "--offset", "-1"],
            "--offset -1: must be between 0 and 4095".into(),
        ),
        (
            &["bw", "--offset", "4294967296"],
            "--offset 4294967296: must be between 0 and 4095".into(),
        ),
        (
            &["bw", "--sizes", "-1"],
            "--sizes -1: '-1' is not a whole number of bytes".into(),
        ),
        (
            &["bw", "--eth", "-40"],
            "--eth -40: must be one of 10, 25, 40, 100, 200, 400".into(),
        ),
        // Floats are quoted as typed, and values that round to 0 ps are refused as such.
        (
            &["bw", "--latency", "1e300"],
            "--latency 1e300: must be a number of nanoseconds from 0.001 to 1e9".into(),
        ),
        (&["bw", "--latency", "nan"], "--latency nan: must be a number".into()),
        (&["bw", "--latency", "1e-9"], "--latency 1e-9: must be a number".into()),
        (
            &["bw", "--latency", "18446744073709551615"],
            "--latency 18446744073709551615: must be a number".into(),
        ),
        // More reads in flight than the tag field can name.
        (
            &["bw", "--latency", "600", "--tags", "4294967295"],
            "--tags 4294967295: must be between 1 and 256 (8-bit tags)".into(),
        ),
        (
            &["bw", "--latency", "600", "--tags", "-1"],
            "--tags -1: must be between 1 and 256".into(),
        ),
        (&["nic", "--rcb", "-64"], "--rcb -64: must be one of 64, 128".into()),
        (&["link", "--mps", "-1"], format!("--mps -1: {one_of_sizes}")),
        (&["link", "--mrrs", "inf"], format!("--mrrs inf: {one_of_sizes}")),
    ];
    for (args, message) in cases {
        let mut all = vec!["model"];
        all.extend_from_slice(args);
        let err = refused(&all);
        assert!(err.contains(message.as_str()), "{args:?}: got {err}");
    }
}

#[test]
fn size_lists_past_the_point_limit_are_refused() {
    // 1..1048576 is the limit itself; one more plain size used to slip through.
    let err = refused(&["model", "bw", "--sizes", "1..1048576,5"]);
    assert!(err.contains("--sizes 1..1048576,5: more than 1048576 sizes"), "{err}");
}

#[test]
fn clap_level_errors_also_exit_2() {
    refused(&["model", "bw", "--mps", "lots"]);
    refused(&["model", "bw", "--no-such-option"]);
    refused(&["model", "nic", "--sizes", "60"]);
    refused(&["model", "nic", "--nic", "smart"]);
    refused(&["model", "link", "--mps", "100"]);
}

#[test]
fn csv_has_the_documented_columns_and_configuration() {
    let o = pcieperf(&["model", "bw", "--sizes", "64,2048", "--format", "csv"]);
    assert!(o.status.success());
    let text = stdout(&o);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for col in [
        "size",
        "wr_gbps",
        "rd_gbps",
        "rdwr_gbps",
        "tlp_gbps",
        "wr_tps",
        "gen",
        "lanes",
        "mps",
        "mrrs",
        "mode",
    ] {
        assert!(header.contains(&col), "missing {col} in {header:?}");
    }
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let get = |c: &str| row[header.iter().position(|h| *h == c).unwrap()];
    assert_eq!(get("size"), "64");
    assert_eq!(
        (get("gen"), get("lanes"), get("mps"), get("mode")),
        ("3", "8", "256", "spec")
    );
    let wr: f64 = get("wr_gbps").parse().unwrap();
    assert!(wr > 30.0 && wr < 50.0, "{wr}");
}

#[test]
fn compat_mode_prints_pcie_models_headline_numbers() {
    let o = pcieperf(&[
        "model",
        "bw",
        "--compat",
        "pcie-model",
        "--sizes",
        "64,2048",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let gbps = |row: usize, op: usize| v["rows"][row]["results"][op]["payload"].as_f64().unwrap();
    // pcie-bench-method.md §1.2: 64 B 42.10 / 44.10 / 33.08, 2048 B 52.92 / 53.69 / 50.75.
    let expect = [[42.10, 44.10, 33.08], [52.92, 53.69, 50.75]];
    for (row, e) in expect.iter().enumerate() {
        for (op, want) in e.iter().enumerate() {
            assert!(
                (gbps(row, op) - want).abs() < 0.006,
                "row {row} op {op}: {}",
                gbps(row, op)
            );
        }
    }
    assert_eq!(v["config"]["mode"], "pcie-model");
    assert!(v["rows"][0]["results"][0]["flows"][0]["bytes"].as_f64().unwrap() > 0.0);
}

#[test]
fn latency_bound_names_the_limit() {
    let o = pcieperf(&[
        "model",
        "bw",
        "--sizes",
        "64",
        "--op",
        "rd",
        "--latency",
        "600",
        "--tags",
        "32",
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let (header, row) = text.split_once('\n').unwrap();
    let h: Vec<&str> = header.split(',').collect();
    let r: Vec<&str> = row.trim().split(',').collect();
    let get = |c: &str| r[h.iter().position(|x| *x == c).unwrap()];
    assert_eq!(get("rd_limit"), "latency");
    let bound: f64 = get("rd_bound_gbps").parse().unwrap();
    assert!((bound - 32.0 * 64.0 * 8.0 / 600.0).abs() < 1e-3);
}

#[test]
fn plot_writes_an_svg_with_one_series_per_operation_and_the_line_rate() {
    let dir = common::scratch_dir("plot");
    let svg: PathBuf = dir.join("bw.svg");
    let o = pcieperf(&["model", "bw", "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") || text.starts_with("<?xml"));
    assert_eq!(
        text.matches("class=\"series\"").count(),
        4,
        "write, read, read/write, 40GbE"
    );
    assert!(text.contains("40GbE line rate"));
    // The default plot covers 1..4096 B: the write curve keeps a vertex per saw-tooth edge.
    let write = &text[text.find("data-name=\"Write\"").unwrap()..];
    let d = &write[write.find(" d=\"").unwrap() + 4..];
    let vertices = d[..d.find('"').unwrap()]
        .split([' ', 'L'])
        .filter(|s| !s.is_empty())
        .count();
    assert!(vertices > 60, "{vertices} vertices");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plot_to_a_missing_directory_is_refused_before_any_work() {
    let e = refused(&["model", "bw", "--plot", "/nonexistent/dir/bw.svg"]);
    assert!(
        e.contains("--plot /nonexistent/dir/bw.svg: directory /nonexistent/dir does not exist"),
        "{e}"
    );
}

#[test]
fn nic_reports_the_paper_crossovers_in_compat_mode() {
    let o = pcieperf(&["model", "nic", "--compat", "pcie-model", "--sizes", "64..1499"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("simple keeps up with line rate in both directions from 584 B"),
        "{text}"
    );
    assert!(text.contains("kernel keeps up with line rate in both directions from 300 B"));
    assert!(text.contains("dpdk   keeps up with line rate in both directions from 182 B"));
}

#[test]
fn link_table_covers_every_generation_and_width() {
    let o = pcieperf(&["model", "link", "--format", "csv"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 1 + 7 * 6);
    let gen6_x16 = text.lines().find(|l| l.starts_with("6,16,")).unwrap();
    assert!(gen6_x16.contains(",1b/1b,on,1024.0000,"), "{gen6_x16}");
}

#[test]
fn explain_shows_the_packets_and_the_bottleneck() {
    let o = pcieperf(&["model", "bw", "--sizes", "2048", "--op", "rd", "--explain"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(
        text.contains("limited by the host-to-device (down) direction"),
        "{text}"
    );
    // 2048 B with MRRS 512 and MPS 256: 4 requests up, 8 completions down.
    assert!(text.contains("4.00 x MRd"), "{text}");
    assert!(text.contains("8.00 x CplD"), "{text}");
}
