//! Suite files: the built-in quick suite, filtering and overrides, and errors for malformed
//! files that name the file, group, key and allowed values.

use pcie_bench::{CacheState, Iommu, Numa, Suite, TestKind};

const MINIMAL: &str = r#"
name = "mini"
latency_count = 100
bandwidth_count = 1000

[[group]]
base = "lat"
tests = ["LAT_RD"]
sizes = [64]
windows = ["8K"]
caches = ["hwarm"]
"#;

fn err(text: &str) -> String {
    Suite::parse(text, "bad.toml").unwrap_err().to_string()
}

/// MINIMAL with lines of its group replaced or added.
fn with(lines: &str) -> String {
    let key = |l: &str| l.split('=').next().unwrap().trim().to_string();
    let keys: Vec<String> = lines.lines().map(key).collect();
    let kept: Vec<&str> = MINIMAL.lines().filter(|l| !keys.contains(&key(l))).collect();
    format!("{}\n{lines}\n", kept.join("\n"))
}

#[test]
fn quick_suite_is_valid_and_small() {
    let quick = Suite::builtin("quick").unwrap();
    assert_eq!(quick.name, "quick");
    assert_eq!(
        quick.bases(),
        [
            "bw_dma_sz_sweep",
            "lat_dma_sizes",
            "lat_dma_sweep_rd_rnd_64",
            "bw_dma_win_sweep_rd_rnd_64",
            "lat_dma_off_rd",
            "lat_dma_details"
        ]
    );
    let tests: Vec<_> = quick.groups().iter().flat_map(|g| g.expand()).collect();
    assert_eq!(tests.len(), quick.test_count());
    assert!(tests.iter().all(|t| t.check(4096).is_ok()));
    // Reduced counts: latency 20k samples (100k for the CDF run), bandwidth 200k DMAs.
    for t in &tests {
        let max = if t.kind.is_latency() { 100_000 } else { 200_000 };
        assert!(t.count <= max, "{t:?}");
    }
    let sizes: Vec<u32> = quick.groups()[0].sizes.clone();
    for saw_tooth in [64, 65, 256, 257, 512, 513] {
        assert!(sizes.contains(&saw_tooth));
    }
    assert!(quick.groups().iter().any(|g| g.cdf));
}

#[test]
fn the_gpu_suite_is_the_quick_one_with_windows_a_gpu_s_threads_measure() {
    let (quick, gpu) = (Suite::builtin("quick").unwrap(), Suite::builtin("gpu").unwrap());
    assert_eq!(gpu.bases(), quick.bases());
    for (q, g) in quick.groups().iter().zip(gpu.groups()) {
        if g.is_latency() {
            // One DMA at a time: pcie-bench's windows, unchanged.
            assert_eq!(format!("{q:?}"), format!("{g:?}"), "{}", g.base);
            continue;
        }
        assert!(g.windows.iter().all(|&w| w >= pcie_bench::SM_MIN_WINDOW), "{}", g.base);
        let over: Vec<u64> = q
            .windows
            .iter()
            .copied()
            .filter(|&w| w >= pcie_bench::SM_MIN_WINDOW)
            .collect();
        assert!(
            over.iter().all(|w| g.windows.contains(w)),
            "{}: {:?}",
            g.base,
            g.windows
        );
        assert!(
            q.sizes.iter().all(|s| g.sizes.contains(s)),
            "{}: every quick size",
            g.base
        );
        assert_eq!(
            (&q.tests, &q.caches, q.pattern, q.count),
            (&g.tests, &g.caches, g.pattern, g.count)
        );
    }
}

#[test]
fn builtin_and_file_suites() {
    assert_eq!(Suite::builtin_names(), ["quick", "paper", "gpu"]);
    let e = Suite::builtin("full").unwrap_err().to_string();
    assert_eq!(e, "--suite full: must be one of quick, paper, gpu or a suite file");
    assert_eq!(Suite::from_arg("paper").unwrap().name, "paper");

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("suites");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mini.toml");
    std::fs::write(&file, MINIMAL).unwrap();
    let s = Suite::from_arg(file.to_str().unwrap()).unwrap();
    assert_eq!(s.name, "mini");
    let missing = dir.join("nope.toml");
    let e = Suite::from_arg(missing.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}: cannot read", missing.display())), "{e}");
    // A user file's errors name the file as given.
    std::fs::write(&file, with("caches = [\"warm\"]")).unwrap();
    let e = Suite::load(&file).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: group \"lat\": caches:", file.display())),
        "{e}"
    );
}

#[test]
fn only_filters_bases_and_names_the_available_ones() {
    let paper = Suite::builtin("paper").unwrap();
    let s = paper
        .clone()
        .only(&["lat_dma_sizes_byte_inc", "lat_dma_sizes"])
        .unwrap();
    // Suite order is kept, and both groups of the byte_inc base come along.
    assert_eq!(s.bases(), ["lat_dma_sizes", "lat_dma_sizes_byte_inc"]);
    assert_eq!(s.test_count(), 30 + 128);
    let e = paper.only(&["lat_dma_size"]).unwrap_err().to_string();
    assert!(
        e.starts_with("--only lat_dma_size: suite \"paper\" has no such group; available: lat_cmd_sizes, "),
        "{e}"
    );
    assert!(e.ends_with("bw_dma_off_wr"), "{e}");
}

#[test]
fn overrides_apply_to_every_test() {
    let s = Suite::builtin("paper")
        .unwrap()
        .with_count(1000)
        .unwrap()
        .with_numa(Numa { dev: 0, mem: 1, cpu: 1 })
        .with_iommu(Iommu::Pages4K);
    for t in s.groups().iter().flat_map(|g| g.expand()) {
        assert_eq!(t.count, 1000);
        assert_eq!(t.numa, Numa { dev: 0, mem: 1, cpu: 1 });
        assert_eq!(t.iommu, Iommu::Pages4K);
    }
    assert_eq!(
        Suite::builtin("quick").unwrap().with_count(0).unwrap_err().to_string(),
        "--samples 0: must be between 1 and 4294967296 DMAs per bandwidth test (group \"bw_dma_sz_sweep\" of suite \"quick\")"
    );
}

#[test]
fn minimal_suite_defaults() {
    let s = Suite::parse(MINIMAL, "mini.toml").unwrap();
    let t = &s.groups()[0].expand()[0];
    assert_eq!(
        (t.kind, t.size, t.window, t.cache),
        (TestKind::LatRd, 64, 8192, CacheState::HWarm)
    );
    assert_eq!((t.host_offset, t.device_offset, t.count), (0, 0, 100));
    assert_eq!(t.pattern, pcie_bench::Pattern::Seq);
    let bw = Suite::parse(&with("tests = [\"BW_RD\", \"BW_DMA_WR\"]"), "mini.toml").unwrap();
    assert_eq!(bw.groups()[0].count, 1000);
    assert_eq!(bw.groups()[0].tests, [TestKind::BwRd, TestKind::BwWr]);
}

#[test]
fn malformed_values_name_file_group_key_and_allowed_values() {
    let cases = [
        (
            with("caches = [\"warm\"]"),
            "bad.toml: group \"lat\": caches: \"warm\" is not one of cold, dthrash, dwarm, hwarm",
        ),
        (
            with("tests = [\"LAT_FOO\"]"),
            "bad.toml: group \"lat\": tests: \"LAT_FOO\" is not one of LAT_RD, LAT_WRRD, BW_RD, BW_WR, BW_RDWR, LAT_CMD_RD, LAT_CMD_WRRD",
        ),
        (
            with("pattern = \"zigzag\""),
            "bad.toml: group \"lat\": pattern: \"zigzag\" is not one of seq, rand",
        ),
        (
            with("offsets = \"both\""),
            "bad.toml: group \"lat\": offsets: \"both\" is not one of product, host-then-device",
        ),
        (
            with("order = [\"test\", \"size\"]"),
            "bad.toml: group \"lat\": order: must name each of test, size, window, cache, offset exactly once",
        ),
        (
            with("windows = [\"8Q\"]"),
            "bad.toml: group \"lat\": windows: \"8Q\" is not a byte count like 4096, 8K, 1.5M or 64M",
        ),
        (
            with("sizes = [0]"),
            "bad.toml: group \"lat\": sizes: 0 must be between 1 and 4294967295",
        ),
        (
            with("sizes = \"64\""),
            "bad.toml: group \"lat\": sizes: expected an array, found string",
        ),
        (with("sizes = []"), "bad.toml: group \"lat\": sizes: must not be empty"),
        (
            with("host_offsets = [-1]"),
            "bad.toml: group \"lat\": host_offsets: -1 is negative",
        ),
        (with("cdf = 1"), "bad.toml: group \"lat\": cdf: expected true or false, found integer"),
        (
            with("count = 0"),
            "bad.toml: group \"lat\": count: 0 must be between 1 and 16777216",
        ),
        (
            with("count = 16777217"),
            "bad.toml: group \"lat\": count: 16777217 must be between 1 and 16777216",
        ),
        (
            with("tests = [\"BW_RD\"]\ncount = 4294967297"),
            "bad.toml: group \"lat\": count: 4294967297 must be between 1 and 4294967296",
        ),
        (
            MINIMAL.replace("latency_count = 100", "latency_count = 9223372036854775807"),
            "bad.toml: latency_count: 9223372036854775807 must be between 1 and 16777216",
        ),
        (
            with("device_offsets = [4294967295]"),
            "bad.toml: group \"lat\": test LAT_RD size 64 window 8192 host offset 0 device offset 4294967295: device-offset 4294967295: device offset + transfer must fit the 8192-byte device buffer",
        ),
        (
            with("tests = [\"LAT_RD\", \"BW_RD\"]"),
            "bad.toml: group \"lat\": tests: mixes latency and bandwidth tests; one output base holds one kind",
        ),
        (
            with("base = \"a/b\""),
            "bad.toml: group \"a/b\": base: \"a/b\" must be letters, digits, '_', '-' or '.'",
        ),
    ];
    for (text, expect) in cases {
        assert_eq!(err(&text), expect);
    }
}

#[test]
fn unknown_and_missing_keys() {
    let e = err(&with("window = [\"8K\"]"));
    assert!(
        e.starts_with("bad.toml: group \"lat\": window: unknown key; allowed keys are base, tests, sizes, windows,"),
        "{e}"
    );
    let e = err(&MINIMAL.replace("latency_count", "samples"));
    assert!(
        e.starts_with("bad.toml: samples: unknown key; allowed keys are name, description,"),
        "{e}"
    );
    assert_eq!(
        err(&MINIMAL.replace("base = \"lat\"\n", "")),
        "bad.toml: group #1: base: missing: every group names its output base"
    );
    assert_eq!(
        err(&MINIMAL.replace("caches = [\"hwarm\"]\n", "")),
        "bad.toml: group \"lat\": caches: missing"
    );
    assert_eq!(
        err(&MINIMAL.replace("latency_count = 100\n", "")),
        "bad.toml: group \"lat\": count: missing, and the suite sets no latency_count"
    );
    assert_eq!(
        err("name = \"x\"\n"),
        "bad.toml: group: missing: a suite needs at least one [[group]]"
    );
    assert_eq!(
        err("group = 3\nname = \"x\""),
        "bad.toml: group: expected [[group]] tables, found integer"
    );
    assert!(
        err("name = ").starts_with("bad.toml: TOML parse error"),
        "{}",
        err("name = ")
    );
}

#[test]
fn tests_that_pcie_bench_would_refuse_are_refused() {
    let e = err(&with("sizes = [4000]\nhost_offsets = [200]"));
    assert_eq!(
        e,
        "bad.toml: group \"lat\": test LAT_RD size 4000 window 8192 host offset 200 device offset 0: \
         host-offset 200: transfer + host offset = 4200 must not exceed 4096"
    );
    let e = err(&with("tests = [\"LAT_CMD_RD\"]\nsizes = [6]"));
    assert!(e.contains("size 6: command tests take multiples of 4 up to 64"), "{e}");
}

#[test]
fn suites_expanding_to_too_many_tests_are_refused_with_the_count() {
    // 1000^5 = 10^15 tests: refused before anything is expanded.
    let list = |item: &str| format!("[{}]", vec![item; 1000].join(", "));
    let text = with(&format!(
        "tests = {}\nsizes = {}\nwindows = {}\ncaches = {}\nhost_offsets = {}",
        list("\"LAT_RD\""),
        list("64"),
        list("8192"),
        list("\"cold\""),
        list("0")
    ));
    assert_eq!(
        err(&text),
        "bad.toml: group \"lat\": tests: the suite expands to 1000000000000000 tests up to this group; at most 1000000 are allowed"
    );
    // The limit counts the whole suite, not one group.
    let group = |base: &str| {
        format!(
            "[[group]]\nbase = \"{base}\"\ntests = [\"LAT_RD\"]\nsizes = {}\nwindows = {}\ncaches = [\"cold\"]\n",
            list("64"),
            list("8192")
        )
    };
    let text = format!("name = \"x\"\nlatency_count = 10\n{}{}", group("a"), group("b"));
    assert_eq!(
        err(&text),
        "bad.toml: group \"b\": tests: the suite expands to 2000000 tests up to this group; at most 1000000 are allowed"
    );
}

#[test]
fn bases_shared_by_groups_must_be_adjacent_and_agree() {
    let group = |base: &str, tests: &str, extra: &str| {
        format!("[[group]]\nbase = \"{base}\"\ntests = [{tests}]\nsizes = [64]\nwindows = [8192]\ncaches = [\"cold\"]\n{extra}\n")
    };
    let head = "name = \"x\"\nlatency_count = 10\nbandwidth_count = 10\n";
    let split = format!(
        "{head}{}{}{}",
        group("a", "\"LAT_RD\"", ""),
        group("b", "\"LAT_RD\"", ""),
        group("a", "\"LAT_RD\"", "")
    );
    assert_eq!(
        err(&split),
        "bad.toml: group \"a\": base: another group with this base is not adjacent; put a base's groups together"
    );
    let mixed = format!("{head}{}{}", group("a", "\"LAT_RD\"", ""), group("a", "\"BW_RD\"", ""));
    assert_eq!(
        err(&mixed),
        "bad.toml: group \"a\": groups sharing a base must agree on latency/bandwidth tests, cdf and raw"
    );
    let clash = format!(
        "{head}{}{}",
        group("a", "\"LAT_RD\"", "cdf = true"),
        group("a_cdf", "\"LAT_RD\"", "")
    );
    assert_eq!(
        err(&clash),
        "bad.toml: group \"a_cdf\": output a_cdf.csv is also written by group \"a\""
    );
    let bw_cdf = format!("{head}{}", group("a", "\"BW_RD\"", "cdf = true"));
    assert_eq!(
        err(&bw_cdf),
        "bad.toml: group \"a\": cdf: only latency groups have samples to write"
    );
    let ok = format!(
        "{head}{}{}",
        group("a", "\"LAT_RD\"", ""),
        group("a", "\"LAT_WRRD\"", "")
    );
    assert_eq!(Suite::parse(&ok, "ok.toml").unwrap().bases(), ["a"]);
}

#[test]
fn endless_or_huge_suite_files_are_refused_after_a_bounded_read() {
    // Used to read until memory ran out.
    let e = Suite::load(std::path::Path::new("/dev/zero")).unwrap_err().to_string();
    assert!(e.starts_with("/dev/zero: "), "{e}");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("suites-huge");
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.toml");
    std::fs::write(&big, format!("{MINIMAL}{}", "#\n".repeat(1 << 20))).unwrap();
    let e = Suite::load(&big).unwrap_err().to_string();
    assert!(
        e.ends_with("big.toml: cannot read: more than 1048576 bytes (the most a profile, suite or catalog has)"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
