//! The simulated Yitian 710 as a PMU source: `pmu list/stat --source sim` and
//! `pmu validate --source sim` (the seed study's accuracy checks), and their refusals.

use crate::common;
use common::{ok, pcieperf, refused, stderr};

use pcie_pmu::fixture::{self, DwcVariant, Tree};
use serde_json::Value;

fn validate(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["pmu", "validate", "--format", "json"];
    all.extend_from_slice(args);
    let v: Value = serde_json::from_str(&ok(&all)).unwrap();
    v.as_array().unwrap().clone()
}

fn num(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

#[test]
fn multiplexed_rx_and_tx_err_as_the_rotation_and_the_bursts_make_them() {
    for rw in ["read", "write", "readwrite"] {
        let rows = validate(&["--source", "sim", "--port", "00:02.0", "--rw", rw, "--runtime", "20s"]);
        assert_eq!(rows.len(), 2);
        for r in &rows {
            // Both payload events share the port's one time-based counter.
            assert!((num(r, "running_pct") - 50.0).abs() < 1.0, "{rw}: {r}");
            let carries = match rw {
                "read" => r["event"] == "rx",
                "write" => r["event"] == "tx",
                _ => true,
            };
            if carries {
                assert!(num(r, "workload_bytes") > 2e9, "{rw}: {r}");
                // Each rotation leaves the counter blind for a few microseconds of its 4 ms.
                // Mixed, the SATA link carries a read's data up and a write's down in turn,
                // so a 4 ms turn sees some of each, and the scaled counts err within the
                // study's order (issue 5's limit: 1 %).
                let e = num(r, "error_pct");
                let bound = if rw == "readwrite" { -1.0..1.0 } else { -1.0..0.0 };
                assert!(bound.contains(&e), "{rw}: {r}");
                // fio's runtime ends when the last I/O submitted before 20 s completes.
                let runtime = num(r, "runtime_s");
                assert!((20.0..21.0).contains(&runtime), "{rw}: {r}");
                let mib_s = num(r, "workload_bytes") / 1048576.0 / runtime;
                assert!((num(r, "workload_mib_s") - mib_s).abs() < 1e-9 * mib_s, "{rw}: {r}");
                assert!(num(r, "clat_stdev_ms") > 0.0, "{rw}: {r}");
            } else {
                assert_eq!(num(r, "workload_bytes"), 0.0);
                assert!(r["error_pct"].is_null(), "no error without workload bytes: {r}");
                assert_eq!((num(r, "workload_mib_s"), num(r, "runtime_s")), (0.0, 0.0), "{rw}: {r}");
                assert_eq!(
                    (num(r, "clat_avg_ms"), num(r, "clat_stdev_ms")),
                    (0.0, 0.0),
                    "{rw}: {r}"
                );
            }
        }
        // Little's law: 4 jobs × 64 I/Os of 1 MiB in flight = MiB/s × clat, over both
        // directions (a little less: the run's end drains the queues).
        let in_flight: f64 = rows
            .iter()
            .map(|r| num(r, "workload_mib_s") * num(r, "clat_avg_ms") / 1e3)
            .sum();
        assert!((246.0..=256.0).contains(&in_flight), "{rw}: {in_flight} MiB in flight");
    }
}

#[test]
fn table_csv_and_json_carry_the_same_fio_figures() {
    let args = |format: &'static str| {
        [
            "pmu",
            "validate",
            "--source",
            "sim:yitian710-nvme",
            "--port",
            "00:01.0",
            "--runtime",
            "1s",
            "--iodepth",
            "8",
            "--numjobs",
            "1",
            "--format",
            format,
        ]
    };
    let json: Value = serde_json::from_str(&ok(&args("json"))).unwrap();
    let csv = ok(&args("csv"));
    let table = ok(&args("table"));
    let mut csv_lines = csv.lines();
    let header: Vec<&str> = csv_lines.next().unwrap().split(',').collect();
    let mut table_lines = table.lines();
    assert!(
        table_lines
            .next()
            .unwrap()
            .ends_with("fio MiB/s  Runtime s  clat avg ms  clat stdev ms"),
        "{table}"
    );
    for r in json.as_array().unwrap() {
        let fields: Vec<&str> = csv_lines.next().unwrap().split(',').collect();
        let shown: Vec<&str> = table_lines.next().unwrap().split_whitespace().collect();
        for (k, human) in [
            ("workload_mib_s", 1),
            ("runtime_s", 3),
            ("clat_avg_ms", 3),
            ("clat_stdev_ms", 3),
        ] {
            let i = header
                .iter()
                .position(|h| *h == k)
                .unwrap_or_else(|| panic!("{k} in {csv}"));
            let v: f64 = fields[i].parse().unwrap();
            assert!((v - num(r, k)).abs() < 1e-6, "{k}: csv {v}, json {r}");
            // Table columns after event, PMU event, workload MB, PMU MB, error %, counted %.
            let col = 6 + ["workload_mib_s", "runtime_s", "clat_avg_ms", "clat_stdev_ms"]
                .iter()
                .position(|x| *x == k)
                .unwrap();
            assert_eq!(shown[col], format!("{:.*}", human, num(r, k)), "{k}: {table}");
        }
    }
    // The NVMe port at 8 I/Os of 1 MiB in flight: about 5.8 GiB/s and 1.4 ms each.
    let rx = &json[0];
    assert!((5500.0..6000.0).contains(&num(rx, "workload_mib_s")), "{rx}");
    let little = num(rx, "workload_mib_s") * num(rx, "clat_avg_ms") / 1e3;
    assert!((7.8..=8.0).contains(&little), "{little} MiB in flight: {rx}");
}

#[test]
fn the_mixed_run_reproduces_the_studys_table() {
    // The study's `fio --rw=readwrite` (issue 39): read 161 MiB/s, 3249 MiB, clat 710.83 ms;
    // write 168 MiB/s, 3393 MiB, clat 803.25 ms.
    let rows = validate(&["--source", "sim", "--port", "00:02.0", "--rw", "readwrite"]);
    let near = |got: f64, want: f64, pct: f64| (got / want - 1.0).abs() * 100.0 <= pct;
    for (r, mib_s, mib, clat) in [(&rows[0], 161.0, 3249.0, 710.83), (&rows[1], 168.0, 3393.0, 803.25)] {
        assert!(near(num(r, "workload_mib_s"), mib_s, 5.0), "{r}");
        assert!(near(num(r, "workload_bytes") / 1048576.0, mib, 5.0), "{r}");
        assert!(near(num(r, "clat_avg_ms"), clat, 10.0), "{r}");
    }
    // Reads pass the writes in the host's scheduler (mq-deadline): they wait less.
    assert!(num(&rows[0], "clat_avg_ms") < num(&rows[1], "clat_avg_ms"), "{rows:?}");
}

#[test]
fn one_event_counts_the_data_and_exactly_the_protocol_payload() {
    // Per 1 MiB I/O on the AHCI port, besides the data: upstream an 8 B Set Device Bits FIS, a
    // 4 B MSI and two 4 B register reads answered (20 B); downstream two 4 B doorbells, the 32 B
    // command header, the 20 B CFIS, one 16 B PRD and two 4 B interrupt clears (84 B).
    for (rw, event) in [
        ("read", "rx"),
        ("write", "tx"),
        ("readwrite", "rx"),
        ("readwrite", "tx"),
    ] {
        let rows = validate(&["--source", "sim", "--port", "00:02.0", "--rw", rw, "--events", event]);
        let r = &rows[0];
        assert_eq!(num(r, "running_pct"), 100.0);
        let ios = rows_ios(rw, event, r);
        let per_io = if event == "rx" { 20.0 } else { 84.0 };
        // The counter counts 16 B units of the payload that crossed: at most 15 B short.
        let expected = num(r, "workload_bytes") + per_io * ios;
        let pmu = num(r, "pmu_bytes");
        assert!(
            pmu <= expected && pmu > expected - 16.0,
            "{rw} {event}: {r}, expected {expected}"
        );
        if rw != "readwrite" || event == "rx" {
            assert!(num(r, "error_pct").abs() < 0.01, "{rw} {event}: {r}");
        }
    }
}

/// I/Os in a run: one per MiB of data; in a readwrite run the other direction's I/Os count too,
/// so run it again for them (same seed, same run).
fn rows_ios(rw: &str, event: &str, r: &Value) -> f64 {
    let mine = num(r, "workload_bytes") / 1048576.0;
    if rw != "readwrite" {
        return mine;
    }
    let other = if event == "rx" { "tx" } else { "rx" };
    let rows = validate(&["--source", "sim", "--port", "00:02.0", "--rw", rw, "--events", other]);
    mine + num(&rows[0], "workload_bytes") / 1048576.0
}

#[test]
fn busy_neighbours_do_not_leak_into_the_port() {
    let sata = [
        "--source",
        "sim",
        "--port",
        "00:02.0",
        "--runtime",
        "2s",
        "--events",
        "rx",
    ];
    let alone = validate(&sata);
    let neighbours = ["--workload", "port=b0:00.0,rx=80,tx=20"];
    let busy = validate(&[&sata[..], &neighbours[..]].concat());
    // Other ports have their own links and PMUs; the SATA port's run is the same I/O for I/O.
    // (The NIC's 100 GbE traffic crosses root port b0:00.0, on the other die.)
    assert_eq!(alone[0]["workload_bytes"], busy[0]["workload_bytes"]);
    assert!(num(&busy[0], "error_pct").abs() < 0.01, "{}", busy[0]);
}

/// The NVMe host under the study's pre-upstream driver with the narrowed 32-bit throughput
/// counter: a profile file inheriting `yitian710-nvme`.
fn narrow_nvme(tag: &str) -> (Tree, String) {
    let t = Tree::new(tag);
    let file = t.path().join("narrow-nvme.toml");
    std::fs::write(
        &file,
        "inherit = \"yitian710-nvme\"\n[pmu]\ndriver = \"pcie_bdf\"\nthroughput_bits = 32\n",
    )
    .unwrap();
    let source = format!("sim:{}", file.display());
    (t, source)
}

#[test]
fn a_narrowed_32_bit_counter_wraps_and_stays_exact() {
    // pcie_bdf_* returns the 32-bit register in 16 B units: at the NVMe port's 6.9 GB/s it
    // wraps every 10 s.
    let (_t, source) = narrow_nvme("narrow-validate");
    let rows = validate(&[
        "--source",
        &source,
        "--port",
        "00:01.0",
        "--runtime",
        "20s",
        "--events",
        "rx",
    ]);
    let r = &rows[0];
    assert_eq!(r["pmu"], "pcie_bdf_100");
    assert!(
        num(r, "raw") > 2.0 * 4294967296.0,
        "the counter wrapped at least twice: {r}"
    );
    assert!(num(r, "error_pct").abs() < 0.01, "{r}");
}

#[test]
fn list_and_stat_on_the_simulated_host() {
    let v: Value = serde_json::from_str(&ok(&["pmu", "list", "--source", "sim", "--format", "json"])).unwrap();
    let ports: Vec<&str> = v["pcie_pmus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["root_ports"][0]["bdf"].as_str().unwrap())
        .collect();
    assert_eq!(ports.len(), 18, "{ports:?}");
    let table = ok(&["pmu", "list", "--source", "sim"]);
    assert!(
        table.contains("root port 0000:00:02.0") && table.contains("ahci"),
        "{table}"
    );
    assert!(
        table.contains("dwc_rootport_b000") && table.contains("mlx5_core"),
        "{table}"
    );

    let out = ok(&[
        "pmu",
        "stat",
        "--source",
        "sim",
        "--fast",
        "--workload",
        "port=00:02.0,rw=read,bs=1M,iodepth=32",
        "--workload",
        "port=0000:b0:00.0,rx=40",
        "-e",
        "dwc_rootport/rx_pcie_tlp_data_payload/",
        "--duration",
        "2",
        "--format",
        "json",
    ]);
    let rows: Value = serde_json::from_str(&out).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 18, "every instance of dwc_rootport");
    for r in rows {
        let g = num(r, "gbps");
        if r["pmu"] == "dwc_rootport_10" {
            // The SATA SSD reads at 545 MB/s = 4.36 Gb/s once its first I/Os are in.
            assert!((4.1..4.4).contains(&g), "{r}");
        } else if r["pmu"] == "dwc_rootport_b000" {
            // 40 Gb/s of 1500 B packets plus a 64 B completion each and an MSI-X per 64.
            assert!((41.6..41.8).contains(&g), "{r}");
        } else {
            assert_eq!(g, 0.0, "{r}");
        }
    }
}

#[test]
fn stat_carries_the_wraps_of_a_narrow_counter() {
    // 25 s at 6.9 GB/s is 2.5 wraps of a 32-bit counter of 16 B units; read every second.
    let (_t, source) = narrow_nvme("narrow-stat");
    let out = ok(&[
        "pmu",
        "stat",
        "--source",
        &source,
        "--fast",
        "--workload",
        "port=00:01.0,rw=read,bs=1M,iodepth=64",
        "-e",
        "pcie_bdf_100/Rx_PCIe_TLP_Data_Payload/",
        "--duration",
        "25",
        "--format",
        "json",
    ]);
    let rows: Value = serde_json::from_str(&out).unwrap();
    let r = &rows[0];
    assert!(num(r, "raw") > 2.0 * 4294967296.0, "{r}");
    assert!((55.0..55.3).contains(&num(r, "gbps")), "6.9 GB/s once running: {r}");
}

#[test]
fn bad_input_exits_2_and_names_it() {
    let t = Tree::new("validate");
    fixture::common_pmus(&t);
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    t.root_port("0000:30:03.0", "0");
    let root = t.path().to_str().unwrap();
    let sim = |extra: &[&str]| {
        let mut a = vec!["pmu", "validate"];
        if !extra.contains(&"--source") {
            a.extend(["--source", "sim"]);
        }
        if !extra.contains(&"--port") {
            a.extend(["--port", "00:02.0"]);
        }
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let stat_workload = |w: &str| {
        ["pmu", "stat", "--source", "sim", "-e", "x/y/", "--workload", w]
            .map(String::from)
            .to_vec()
    };
    let cases: Vec<(Vec<String>, &[&str])> = vec![
        (
            sim(&["--port", "00:09.0"]),
            &["0000:00:09.0", "no such root port", "0000:00:02.0"],
        ),
        (sim(&["--port", "b0:00.0"]), &["cx5", "0000:00:02.0"]),
        (sim(&["--port", "30:03.0"]), &["empty", "0000:00:02.0"]),
        (sim(&["--port", "x"]), &["--port x"]),
        (sim(&["--rw", "randread"]), &["--rw randread", "read, write, readwrite"]),
        (sim(&["--bs", "1000"]), &["--bs 1000", "multiple of 512"]),
        (sim(&["--iodepth", "0"]), &["--iodepth 0", "1 to 4096"]),
        (sim(&["--numjobs", "many"]), &["--numjobs many"]),
        (sim(&["--runtime", "soon"]), &["--runtime soon"]),
        (sim(&["--size", "0"]), &["--size 0"]),
        (sim(&["--events", "rx,bytes"]), &["--events rx,bytes"]),
        (sim(&["-I", "0"]), &["-I 0"]),
        (sim(&["--workload", "port=00:02.0"]), &["validated port 0000:00:02.0"]),
        (sim(&["--workload", "port=00:01.0,bs=3"]), &["bs=3"]),
        (sim(&["--workload", "port=00:01.0,bs=4k"]), &["usb", "0000:00:02.0"]),
        (
            sim(&["--source", "sim:pentium"]),
            &["sim:pentium", "yitian710, yitian710-narrow, yitian710-nvme"],
        ),
        (sim(&["--source", "simulator"]), &["--source simulator"]),
        (sim(&["--sysfs", root]), &["--sysfs"]),
        (
            ["pmu", "list", "--source", "sim:nope"].map(String::from).to_vec(),
            &["sim:nope"],
        ),
        (
            stat_workload("port=00:02.0,rw=trim"),
            &["rw=trim", "read, write, readwrite"],
        ),
        (stat_workload("port=b0:00.0,rx=400"), &["rx=400", "0 to 100"]),
        (
            ["pmu", "stat", "-e", "msr/tsc/", "--workload", "port=00:02.0"]
                .map(String::from)
                .to_vec(),
            &["--workload", "--source sim"],
        ),
        // The DWC driver does not group its events; neither does the simulated one.
        (
            [
                "pmu",
                "stat",
                "--source",
                "sim",
                "--duration",
                "0.1",
                "-e",
                "{dwc_rootport_10/rx_pcie_tlp_data_payload/,dwc_rootport_10/tx_pcie_tlp_data_payload/}",
            ]
            .map(String::from)
            .to_vec(),
            &[
                "dwc_rootport_10 refused event dwc_rootport_10/tx_pcie_tlp_data_payload/",
                "group",
            ],
        ),
    ];
    for (args, expected) in &cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = refused(&a);
        assert!(expected.iter().all(|x| e.contains(x)), "{args:?}: {e}");
    }
    // On a real host: a port without a PMU; fio missing, or no block device below the port.
    let e = refused(&["pmu", "validate", "--sysfs", root, "--port", "00:02.0"]);
    assert!(
        e.contains("--port 0000:00:02.0: no PCIe PMU") && e.contains("0000:30:03.0"),
        "{e}"
    );
    let o = pcieperf(&["pmu", "validate", "--sysfs", root, "--port", "30:03.0"]);
    let e = stderr(&o);
    if std::process::Command::new("fio").arg("--version").output().is_err() {
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(e.contains("cannot run fio") && e.contains("--source sim"), "{e}");
    } else {
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains("no block device below this root port"), "{e}");
    }
}

#[test]
fn the_studys_machine_lists_its_18_pmus_and_devices_in_json() {
    let out = ok(&["pmu", "list", "--source", "sim:yitian710-narrow", "--format", "json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let pmus = v["pcie_pmus"].as_array().unwrap();
    let names: Vec<&str> = pmus.iter().map(|p| p["name"].as_str().unwrap()).collect();
    let mut want = vec!["pcie_bdf_0", "pcie_bdf_100", "pcie_bdf_200", "pcie_bdf_300"];
    let quads = [
        "100000", "100100", "100200", "100300", "300000", "300100", "300200", "300300",
    ];
    let more = ["800000", "800100", "800200", "800300", "980000", "b00000"];
    let rest: Vec<String> = quads.iter().chain(&more).map(|n| format!("pcie_bdf_{n}")).collect();
    want.extend(rest.iter().map(String::as_str));
    assert_eq!(names, want);
    // (PMU, its root port, the functions below it with their ids and links).
    let below = |name: &str| -> (String, Vec<(String, String, Value)>) {
        let p = pmus.iter().find(|p| p["name"] == name).unwrap();
        let rp = &p["root_ports"][0];
        let devices = rp["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["bdf"].as_str().unwrap().to_string(),
                    d["id"].as_str().unwrap().to_string(),
                    d["link"].clone(),
                )
            })
            .collect();
        (rp["bdf"].as_str().unwrap().to_string(), devices)
    };
    let dev =
        |b: &str, id: &str, link: Option<&str>| (b.to_string(), id.to_string(), link.map_or(Value::Null, Value::from));
    assert_eq!(
        below("pcie_bdf_0"),
        (
            "0000:00:00.0".to_string(),
            vec![
                dev("0000:01:00.0", "1a03:1150", Some("5.0 GT/s PCIe x1")),
                dev("0000:02:00.0", "1a03:2000", None)
            ]
        )
    );
    assert_eq!(
        below("pcie_bdf_100").1,
        vec![dev("0000:03:00.0", "1912:0014", Some("5.0 GT/s PCIe x1"))]
    );
    assert_eq!(
        below("pcie_bdf_200").1,
        vec![dev("0000:04:00.0", "1b4b:9235", Some("5.0 GT/s PCIe x2"))]
    );
    assert_eq!(
        below("pcie_bdf_b00000").1,
        vec![
            dev("0000:b1:00.0", "15b3:1017", Some("8.0 GT/s PCIe x16")),
            dev("0000:b1:00.1", "15b3:1017", Some("8.0 GT/s PCIe x16"))
        ]
    );
    assert_eq!(below("pcie_bdf_980000"), ("0000:98:00.0".to_string(), vec![]));
    let numa: Vec<u64> = pmus
        .iter()
        .map(|p| p["root_ports"][0]["numa_node"].as_u64().unwrap())
        .collect();
    assert_eq!(numa, [[0; 12].as_slice(), &[1; 6]].concat());
}
