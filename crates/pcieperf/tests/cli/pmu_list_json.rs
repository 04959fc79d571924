//! `pcieperf pmu list --format json`: one document with the topology and events the table shows,
//! on the simulated host and on fixture sysfs trees, checked against the table line by line.

use crate::common;
use common::ok;

use pcie_pmu::fixture::{self, DwcVariant, Tree};
use serde_json::{json, Value};

fn list(source: &[&str]) -> (String, Value) {
    let mut args = vec!["pmu", "list"];
    args.extend_from_slice(source);
    let table = ok(&args);
    args.extend_from_slice(&["--format", "json"]);
    let v = serde_json::from_str(&ok(&args)).expect("one JSON document");
    (table, v)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn arr(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

/// A root port or device line as the table prints it, from the JSON fields alone.
fn device_line(d: &Value) -> String {
    let mut parts = vec![text(&d["bdf"]).to_string(), text(&d["id"]).to_string()];
    if let Some(c) = d["class"].as_str() {
        parts.push(format!("class {c}"));
    }
    parts.push(d["driver"].as_str().unwrap_or("no driver").to_string());
    if let Some(l) = d["link"].as_str() {
        parts.push(l.to_string());
    }
    if let Some(n) = d["numa_node"].as_u64() {
        parts.push(format!("NUMA {n}"));
    }
    parts.join("  ")
}

/// The link fields agree with each other: the id with the vendor and device numbers, the link
/// text with the current and maximum speed and width.
fn check_fields(d: &Value) {
    if let (Some(v), Some(dev)) = (d["vendor"].as_u64(), d["device"].as_u64()) {
        assert_eq!(text(&d["id"]), format!("{v:04x}:{dev:04x}"), "{d}");
    }
    let show = |s: &Value, w: &Value| match (s.as_str(), w.as_u64()) {
        (Some(s), Some(w)) => Some(format!("{s} x{w}")),
        (Some(s), None) => Some(s.to_string()),
        (None, Some(w)) => Some(format!("x{w}")),
        (None, None) => None,
    };
    let cur = show(&d["current_link_speed"], &d["current_link_width"]);
    let max = show(&d["max_link_speed"], &d["max_link_width"]);
    let want = match (cur, max) {
        (Some(c), Some(m)) if c != m => Some(format!("{c} (max {m})")),
        (Some(c), _) => Some(c),
        (None, Some(m)) => Some(format!("max {m}")),
        (None, None) => None,
    };
    assert_eq!(d["link"].as_str().map(String::from), want, "{d}");
}

/// Every line of the table, rebuilt from the JSON: PMU headers, root ports with the devices below
/// them, metrics and the event names in order, then the functions no PMU watches. Returns how
/// many devices the JSON lists below the PMUs' root ports.
fn check_against_table(table: &str, v: &Value) -> usize {
    let mut want = Vec::new();
    let mut devices = 0;
    for (i, p) in arr(&v["pcie_pmus"]).iter().enumerate() {
        if i > 0 {
            want.push(String::new());
        }
        let variant: Vec<&str> = arr(&p["variant"]).iter().map(text).collect();
        let cpus: Vec<String> = arr(&p["cpumask"]).iter().map(|c| c.to_string()).collect();
        want.push(format!(
            "{}  {}{}  type {}  cpu {}",
            text(&p["name"]),
            text(&p["family_title"]),
            if variant.is_empty() {
                String::new()
            } else {
                format!(" ({})", variant.join(", "))
            },
            p["type"].as_u64().unwrap(),
            if cpus.is_empty() { "any".into() } else { cpus.join(",") }
        ));
        if arr(&p["root_ports"]).is_empty() {
            want.push("  root ports: not identified by this PMU family".into());
        }
        for rp in arr(&p["root_ports"]) {
            if rp["in_sysfs"] == true {
                check_fields(rp);
                want.push(format!("  root port {}", device_line(rp)));
            } else {
                want.push(format!("  root port {} (not in sys/bus/pci/devices)", text(&rp["bdf"])));
            }
            for d in arr(&rp["devices"]) {
                check_fields(d);
                want.push(format!("    {}", device_line(d)));
                devices += 1;
            }
        }
        let metrics = arr(&p["metrics"]);
        if !metrics.is_empty() {
            want.push("  metrics:".into());
        }
        for m in metrics {
            let evs: Vec<&str> = arr(&m["events"]).iter().map(text).collect();
            want.push(format!("    {:<17} {}", text(&m["metric"]), evs.join(" + ")));
            for e in &evs {
                let ev = arr(&p["events"]).iter().find(|x| x["name"] == *e).unwrap();
                assert_eq!(ev["metric"], m["metric"], "{ev}");
            }
        }
        let events = arr(&p["events"]);
        want.push(format!("  events ({}):", events.len()));
        want.push("header".into());
        for e in events {
            want.push(text(&e["name"]).to_string());
        }
    }
    if let Some(unwatched) = v.get("unwatched") {
        assert!(!arr(unwatched).is_empty(), "an empty list is left out: {v}");
        want.push(String::new());
        let every_pmu_names_ports = arr(&v["pcie_pmus"]).iter().all(|p| !arr(&p["root_ports"]).is_empty());
        want.push(if every_pmu_names_ports {
            "not watched by a PCIe PMU:".into()
        } else {
            "outside the root ports above (a PMU that does not name its ports may watch them):".into()
        });
        for u in arr(unwatched) {
            check_fields(u);
            let kind = match text(&u["kind"]) {
                "root_port" => "root port",
                "rciep" => "RCiEP",
                "rcec" => "RCEC",
                k => panic!("kind {k}: {u}"),
            };
            want.push(format!("  {kind} {}", device_line(u)));
            for d in arr(&u["devices"]) {
                check_fields(d);
                want.push(format!("    {}", device_line(d)));
            }
        }
    }
    // Rows of an event table (below `  events (N):`) are compared by their first column, the
    // `Event` header as "header"; every other line whole.
    let mut in_events = false;
    let mut got = Vec::new();
    for l in table.lines() {
        if in_events && l.starts_with("    ") {
            let first = l.split_whitespace().next().unwrap_or("");
            got.push(if first == "Event" {
                "header".into()
            } else {
                first.to_string()
            });
            continue;
        }
        in_events = l.starts_with("  events (");
        got.push(l.to_string());
    }
    assert_eq!(got, want, "table:\n{table}");
    devices
}

#[test]
fn the_simulated_host_lists_the_tree_the_table_shows() {
    let (table, v) = list(&["--source", "sim"]);
    let pmus = arr(&v["pcie_pmus"]);
    assert!(!pmus.is_empty(), "{v}");
    assert!(
        check_against_table(&table, &v) > 0,
        "devices below the root ports: {table}"
    );
    for p in pmus {
        let ports = arr(&p["root_ports"]);
        assert!(!ports.is_empty(), "{}", p["name"]);
        for rp in ports {
            assert_eq!(rp["in_sysfs"], true, "{rp}");
            assert!(text(&rp["class"]).starts_with("0604"), "a bridge: {rp}");
        }
        for e in arr(&p["events"]) {
            assert!(text(&e["spec"]).starts_with(&format!("{}/", text(&p["name"]))), "{e}");
            let needs = !arr(&e["required_params"]).is_empty();
            for k in ["config", "config1", "config2"] {
                match e[k].as_str() {
                    Some(c) => assert!(!needs && c.starts_with("0x"), "{e}"),
                    None => assert!(needs, "{e}"),
                }
            }
        }
    }

    // The Yitian 710's integrated endpoints and event collectors sit on root buses, outside
    // every root port.
    let unwatched: Vec<(&str, &str, &str, &Value)> = arr(&v["unwatched"])
        .iter()
        .map(|u| (text(&u["bdf"]), text(&u["kind"]), text(&u["id"]), &u["devices"]))
        .collect();
    let none = json!([]);
    assert_eq!(
        unwatched,
        [
            ("0000:7c:00.0", "rciep", "1ded:8001", &none),
            ("0000:7c:0a.0", "rcec", "1ded:8003", &none),
            ("0000:fc:00.0", "rciep", "1ded:8001", &none),
            ("0000:fc:0a.0", "rcec", "1ded:8003", &none),
        ]
    );
    assert!(
        table.ends_with("\nnot watched by a PCIe PMU:\n  RCiEP 0000:7c:00.0  1ded:8001  class 120000  no driver  NUMA 0\n  RCEC 0000:7c:0a.0  1ded:8003  class 080700  pcieport  NUMA 0\n  RCiEP 0000:fc:00.0  1ded:8001  class 120000  no driver  NUMA 1\n  RCEC 0000:fc:0a.0  1ded:8003  class 080700  pcieport  NUMA 1\n"),
        "{table}"
    );

    // CSV stays one row per event, with the same PMUs, ports and configs.
    let csv = ok(&["pmu", "list", "--source", "sim", "--format", "csv"]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    let events: usize = pmus.iter().map(|p| arr(&p["events"]).len()).sum();
    assert_eq!(rows.len(), events);
    let p = &pmus[0];
    let e = arr(&p["events"]).iter().find(|e| e["config"].is_string()).unwrap();
    let ports: Vec<&str> = arr(&p["root_ports"]).iter().map(|r| text(&r["bdf"])).collect();
    let prefix = format!("{},{},", text(&p["name"]), text(&p["family"]));
    let row = rows
        .iter()
        .find(|r| r.starts_with(&prefix) && r.contains(&format!(",{},", text(&e["name"]))))
        .unwrap();
    assert!(row.contains(&format!(",{},", ports.join(";"))), "{row}");
    assert!(row.contains(&format!(",{},", text(&e["config"]))), "{row}");

    // The spec of an event opens it.
    let spec = text(&e["spec"]);
    let out = ok(&[
        "pmu",
        "stat",
        "--source",
        "sim",
        "--fast",
        "-e",
        spec,
        "--duration",
        "0.1",
        "--format",
        "json",
    ]);
    let stat: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stat[0]["pmu"], p["name"], "{stat}");
}

/// Two DWC root ports (one with a NIC that trained below its maximum and a function without
/// ids, driver or link; one empty), a DWC PMU whose port sysfs lacks, and an NVIDIA PMU that
/// does not say which ports it watches.
fn host() -> Tree {
    let t = Tree::new("listjson");
    fixture::common_pmus(&t);
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    fixture::dwc_pmu(&t, "dwc_rootport_13018", 28, "64", DwcVariant::Upstream);
    fixture::dwc_pmu(&t, "dwc_rootport_23018", 29, "128", DwcVariant::Upstream);
    fixture::nvidia_grace_pmu(&t, 0, 50);
    t.root_port("0000:30:03.0", "0");
    t.nic_below("0000:30:03.0", "0000:31:00.0");
    t.pci(&["0000:30:03.0"], "0000:31:00.1", &[("class", "0x010802")], None);
    t.root_port("0001:30:03.0", "1");
    t
}

#[test]
fn a_fixture_tree_lists_ports_devices_and_links() {
    let t = host();
    let (table, v) = list(&["--sysfs", t.path().to_str().unwrap()]);
    assert_eq!(check_against_table(&table, &v), 2);
    assert_eq!(v["other_pmus"], json!(["cpu", "msr", "software"]));
    let pmu = |name: &str| {
        arr(&v["pcie_pmus"])
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {v}"))
            .clone()
    };
    let p = pmu("dwc_rootport_3018");
    assert_eq!(
        (&p["type"], &p["cpumask"], &p["family"]),
        (&json!(27), &json!([0]), &json!("dwc"))
    );
    assert_eq!(arr(&p["events"]).len(), 43);
    let port = |numa: u32, devices: Value| {
        json!({
            "in_sysfs": true, "id": "1ded:8000", "vendor": 0x1ded, "device": 0x8000, "class": "060400",
            "driver": "pcieport", "current_link_speed": "32.0 GT/s PCIe", "current_link_width": 16,
            "max_link_speed": "32.0 GT/s PCIe", "max_link_width": 16, "link": "32.0 GT/s PCIe x16",
            "numa_node": numa, "devices": devices,
        })
    };
    let mut want = port(
        0,
        json!([
            {
                "bdf": "0000:31:00.0", "id": "15b3:1017", "vendor": 0x15b3, "device": 0x1017,
                "class": "020000", "driver": "mlx5_core",
                "current_link_speed": "16.0 GT/s PCIe", "current_link_width": 8,
                "max_link_speed": "16.0 GT/s PCIe", "max_link_width": 16,
                "link": "16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)", "numa_node": 0,
            },
            {
                "bdf": "0000:31:00.1", "id": "?:?", "vendor": null, "device": null,
                "class": "010802", "driver": null,
                "current_link_speed": null, "current_link_width": null,
                "max_link_speed": null, "max_link_width": null, "link": null, "numa_node": null,
            },
        ]),
    );
    want["bdf"] = json!("0000:30:03.0");
    assert_eq!(p["root_ports"], json!([want]));

    // A port without devices lists none.
    let mut want = port(1, json!([]));
    want["bdf"] = json!("0001:30:03.0");
    assert_eq!(pmu("dwc_rootport_13018")["root_ports"], json!([want]));

    // A port the PMU names but sysfs lacks: no details, no devices.
    assert_eq!(
        pmu("dwc_rootport_23018")["root_ports"],
        json!([{
            "bdf": "0002:30:03.0", "in_sysfs": false, "id": null, "vendor": null, "device": null,
            "class": null, "driver": null, "current_link_speed": null, "current_link_width": null,
            "max_link_speed": null, "max_link_width": null, "link": null, "numa_node": null,
            "devices": [],
        }])
    );
    assert!(
        table.contains("  root port 0002:30:03.0 (not in sys/bus/pci/devices)\n"),
        "{table}"
    );

    let nv = pmu("nvidia_pcie_pmu_0");
    assert_eq!(nv["root_ports"], json!([]));
    assert_eq!(nv["cpumask"], json!([0]));
}

#[test]
fn a_host_without_pcie_pmus_lists_the_others() {
    let t = Tree::new("listjson-none");
    fixture::common_pmus(&t);
    let (table, v) = list(&["--sysfs", t.path().to_str().unwrap()]);
    assert_eq!(v, json!({"pcie_pmus": [], "other_pmus": ["cpu", "msr", "software"]}));
    assert!(table.ends_with("(3 other PMUs: cpu, msr, software).\n"), "{table}");
}

/// Functions on root buses outside every watched port: an integrated endpoint, an event
/// collector and a root port no PMU names, with the NIC below it; a port the PMU watches (and its
/// NIC) is not repeated. With a PMU that does not name its ports, the heading says they may be
/// watched after all.
#[test]
fn functions_no_pmu_watches_come_after_the_pmus() {
    let t = Tree::new("listjson-unwatched");
    fixture::common_pmus(&t);
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 27, "0", DwcVariant::Upstream);
    t.root_port("0000:30:03.0", "0");
    t.nic_below("0000:30:03.0", "0000:31:00.0");
    t.root_port("0000:40:00.0", "1");
    t.nic_below("0000:40:00.0", "0000:41:00.0");
    t.pci(
        &[],
        "0000:7c:00.0",
        &[("vendor", "0x1ded"), ("device", "0x8001"), ("class", "0x120000")],
        None,
    );
    t.pci(
        &[],
        "0000:7c:0a.0",
        &[("class", "0x080700"), ("numa_node", "0")],
        Some("pcieport"),
    );
    let (table, v) = list(&["--sysfs", t.path().to_str().unwrap()]);
    assert_eq!(check_against_table(&table, &v), 1);
    // The new key comes last: the existing keys keep their order.
    let raw = ok(&["pmu", "list", "--sysfs", t.path().to_str().unwrap(), "--format", "json"]);
    let keys: Vec<&str> = raw
        .lines()
        .filter_map(|l| l.strip_prefix("  \"")?.split('"').next())
        .collect();
    assert_eq!(keys, ["pcie_pmus", "other_pmus", "unwatched"]);
    let bdfs = |v: &Value| -> Vec<String> { arr(v).iter().map(|d| text(&d["bdf"]).to_string()).collect() };
    assert_eq!(bdfs(&v["unwatched"]), ["0000:40:00.0", "0000:7c:00.0", "0000:7c:0a.0"]);
    let port = &v["unwatched"][0];
    assert_eq!((&port["kind"], &port["class"]), (&json!("root_port"), &json!("060400")));
    assert_eq!(bdfs(&port["devices"]), ["0000:41:00.0"]);
    assert_eq!(
        v["unwatched"][2],
        json!({
            "bdf": "0000:7c:0a.0", "kind": "rcec", "id": "?:?", "vendor": null, "device": null,
            "class": "080700", "driver": "pcieport", "current_link_speed": null,
            "current_link_width": null, "max_link_speed": null, "max_link_width": null,
            "link": null, "numa_node": 0, "devices": [],
        })
    );
    assert!(
        table.ends_with(
            "\nnot watched by a PCIe PMU:\n  root port 0000:40:00.0  1ded:8000  class 060400  pcieport  32.0 GT/s PCIe x16  NUMA 1\n    0000:41:00.0  15b3:1017  class 020000  mlx5_core  16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)  NUMA 0\n  RCiEP 0000:7c:00.0  1ded:8001  class 120000  no driver\n  RCEC 0000:7c:0a.0  ?:?  class 080700  pcieport  NUMA 0\n"
        ),
        "{table}"
    );
    // CSV has no row for them: it lists events, and they have none.
    let csv = ok(&["pmu", "list", "--sysfs", t.path().to_str().unwrap(), "--format", "csv"]);
    assert!(!csv.contains("7c:0") && !csv.contains("40:00.0"), "{csv}");

    fixture::nvidia_grace_pmu(&t, 0, 50);
    let (table, v) = list(&["--sysfs", t.path().to_str().unwrap()]);
    check_against_table(&table, &v);
    assert!(
        table.contains("\noutside the root ports above (a PMU that does not name its ports may watch them):\n  root port 0000:40:00.0"),
        "{table}"
    );
}
