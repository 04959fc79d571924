//! `pcieperf pmu serve` serves link health on every host: on a fixture server without PCIe PMUs
//! (health only), and, with a real Prometheus (Debian's `prometheus` package; skipped with a
//! printed reason where it is not installed), on the simulated Yitian 710 with a degraded link:
//! Prometheus scrapes the exporter, evaluates the shipped alert rules until the degraded-link
//! alert fires, and every query of the shipped Grafana dashboard returns series.

use crate::common;
use common::{http_get, serve};

use prometheus_parse::{Scrape, Value};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A GET over HTTP/1.1: (status line, body).
pub(crate) fn get(addr: &str, path: &str) -> (String, String) {
    let text = http_get(addr, path, Duration::from_secs(10));
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().unwrap_or("").to_string();
    // Prometheus answers with chunked encoding; its JSON has no CRLF of its own.
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 {
                break;
            }
            out.push_str(&after[..n]);
            rest = &after[n + 2..];
        }
        out
    } else {
        body.to_string()
    };
    (status, body)
}

/// A child process killed when dropped.
pub(crate) struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Scrape `/metrics` until the link-health families are there (the first check runs on its
/// own thread as the server starts).
fn scrape_health(addr: &str) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = get(addr, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK");
        if body.contains("pcieperf_health_functions") || Instant::now() > deadline {
            return Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("parses");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sample(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    s.samples
        .iter()
        .find(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            ref v => panic!("{metric}: {v:?}"),
        })
}

#[test]
fn a_host_without_pcie_pmus_serves_link_health() {
    let root = std::env::temp_dir().join(format!("pcieperf-serve-health-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    pcie_health::fixture::dual_socket_server(&root).unwrap();
    pcie_health::fixture::block_device(&root, "0000:31:00.0", "nvme0n1", 2_000, 1_000).unwrap();
    std::fs::create_dir_all(root.join("sys/bus/event_source/devices")).unwrap();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    let server = serve(&["--sysfs", root.to_str().unwrap(), "-I", "100"]);
    let addr = &server.addr;
    let s = scrape_health(addr);
    assert!(
        !s.samples.iter().any(|x| x.metric.starts_with("pcieperf_event_")),
        "no PMU counts"
    );
    assert_eq!(sample(&s, "pcieperf_health_check_success", &[]), Some(1.0));
    // The switch's upstream port 17:00.0 trained Gen4 x8 of x16: node_exporter's labels.
    let port = [("segment", "0000"), ("bus", "17"), ("device", "00"), ("function", "0")];
    assert_eq!(sample(&s, "pcieperf_pcidevice_current_link_width", &port), Some(8.0));
    assert_eq!(sample(&s, "pcieperf_pcidevice_max_link_width", &port), Some(16.0));
    assert_eq!(
        sample(&s, "pcieperf_pcidevice_current_link_transfers_per_second", &port),
        Some(16e9)
    );
    let gpu = [
        ("bus", "19"),
        ("kind", "link_width_downgraded"),
        ("limited_by", "0000:17:00.0"),
    ];
    assert_eq!(sample(&s, "pcieperf_pcidevice_finding", &gpu), Some(1.0));
    let lost = sample(&s, "pcieperf_pcidevice_finding_lost_ratio", &gpu).unwrap();
    assert!((0.4..0.6).contains(&lost), "x8 of x16 loses about half: {lost}");
    let kind = [("kind", "link_width_downgraded"), ("severity", "warning")];
    assert!(sample(&s, "pcieperf_health_findings", &kind).unwrap() >= 1.0);
    let none = [("kind", "tags_limited"), ("severity", "error")];
    assert_eq!(
        sample(&s, "pcieperf_health_findings", &none),
        Some(0.0),
        "every kind is there"
    );
    let nvme = [("bus", "31"), ("severity", "correctable")];
    assert_eq!(sample(&s, "pcieperf_pcidevice_aer_errors_total", &nvme), Some(5.0));
    let avail = sample(
        &s,
        "pcieperf_pcidevice_available_bandwidth_bytes_per_second",
        &[("bus", "19")],
    )
    .unwrap();
    let capable = sample(
        &s,
        "pcieperf_pcidevice_capable_bandwidth_bytes_per_second",
        &[("bus", "19")],
    )
    .unwrap();
    assert!(avail < capable * 0.6 && avail > 1e9, "{avail} of {capable} B/s");
    // The NVMe's block device: its payload counters and what its path carries, by direction.
    let rx = [("bus", "31"), ("direction", "rx")];
    let tx = [("bus", "31"), ("direction", "tx")];
    assert_eq!(
        sample(&s, "pcieperf_pcidevice_payload_bytes_total", &rx),
        Some(2_000.0 * 512.0)
    );
    assert_eq!(
        sample(&s, "pcieperf_pcidevice_payload_bytes_total", &tx),
        Some(1_000.0 * 512.0)
    );
    let nvme_avail = sample(
        &s,
        "pcieperf_pcidevice_available_bandwidth_bytes_per_second",
        &[("bus", "31")],
    );
    let up = sample(&s, "pcieperf_pcidevice_payload_capacity_bytes_per_second", &rx);
    assert_eq!(up, nvme_avail, "device to host: the path's 4 KiB DMA writes");
    let down = sample(&s, "pcieperf_pcidevice_payload_capacity_bytes_per_second", &tx).unwrap();
    assert!(down > 1e9 && down < up.unwrap(), "reads: {down} B/s");
    assert_eq!(
        sample(&s, "pcieperf_pcidevice_payload_bytes_total", &[("bus", "19")]),
        None
    );
    std::fs::remove_dir_all(&root).unwrap();
}

/// `name` on the PATH.
pub(crate) fn installed(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn deploy(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy").join(rel)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Prometheus running with `dir/prometheus.yml`, its data in `dir/data`, and the address of
/// its web API (it may not listen yet).
pub(crate) fn prometheus_on(prometheus: &Path, dir: &Path) -> (Running, String) {
    let web = format!("127.0.0.1:{}", free_port());
    let child = Command::new(prometheus)
        .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg(format!("--web.listen-address={web}"))
        .arg("--log.level=error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (Running(child), web)
}

/// `%`-encoding of a query parameter.
pub(crate) fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The rule lines that say what is alerted on (`alert:` and `expr:`), in order.
fn expressions(rules: &str) -> Vec<&str> {
    rules
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("- alert:") || l.starts_with("expr:"))
        .collect()
}

#[test]
fn prometheus_fires_the_degraded_link_alert_and_the_dashboard_finds_its_series() {
    let Some(prometheus) = installed("prometheus") else {
        println!("skipped: no prometheus on the PATH (Debian: apt-get install prometheus)");
        return;
    };
    let shipped = std::fs::read_to_string(deploy("prometheus/pcieperf-rules.yml")).unwrap();
    if let Some(promtool) = installed("promtool") {
        let out = Command::new(promtool)
            .args(["check", "rules"])
            .arg(deploy("prometheus/pcieperf-rules.yml"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    // The shipped rules with seconds for minutes: same alerts, same expressions.
    let fast: String = shipped
        .lines()
        .map(|l| match l.trim().strip_prefix("for:") {
            Some(_) => l.replace(l.trim(), "for: 1s"),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(expressions(&fast), expressions(&shipped));
    assert_eq!(expressions(&shipped).len(), 8, "four alerts");

    let dir = std::env::temp_dir().join(format!("pcieperf-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exporter = serve(&["--source", "sim:yitian710-degraded", "-I", "200"]);
    let target = &exporter.addr;
    std::fs::write(dir.join("rules.yml"), fast).unwrap();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nrule_files: [rules.yml]\n\
             scrape_configs:\n  - job_name: pcieperf\n    static_configs: [{{targets: [\"{target}\"]}}]\n"
        ),
    )
    .unwrap();
    let (_prom, web) = prometheus_on(&prometheus, &dir);
    let start = Instant::now();
    // Both degraded links: the ConnectX-5 at b1:00 trained x8 of x16, the SATA controller at
    // 04:00.0 Gen1 of Gen2.
    let want = [("b1", "link_width_downgraded"), ("04", "link_speed_downgraded")];
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "PcieLinkDegraded did not fire for both links within 60 s"
        );
        std::thread::sleep(Duration::from_millis(300));
        if TcpStream::connect(&web).is_err() {
            continue; // not listening yet
        }
        let (_, body) = get(&web, "/api/v1/alerts");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let alerts = v["data"]["alerts"].as_array().cloned().unwrap_or_default();
        let firing: Vec<(String, String)> = alerts
            .iter()
            .filter(|a| a["labels"]["alertname"] == "PcieLinkDegraded" && a["state"] == "firing")
            .map(|a| {
                (
                    a["labels"]["bus"].as_str().unwrap_or("").to_string(),
                    a["labels"]["kind"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        // Both functions of the ConnectX-5 sit on its link.
        assert!(
            firing.iter().all(|(b, _)| b == "b1" || b == "04"),
            "only the two faulty links: {firing:?}"
        );
        if want
            .iter()
            .all(|(b, k)| firing.iter().any(|(fb, fk)| fb == b && fk == k))
        {
            break;
        }
    }
    println!(
        "PcieLinkDegraded fired for both links after {:.1} s",
        start.elapsed().as_secs_f64()
    );

    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(deploy("grafana/pcieperf-dashboard.json")).unwrap()).unwrap();
    let mut queries = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"]
                .as_str()
                .unwrap()
                .replace("$instance", ".*")
                .replace("$__rate_interval", "30s");
            let (_, body) = get(&web, &format!("/api/v1/query?query={}", encode(&expr)));
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["status"], "success", "{expr}: {body}");
            let n = v["data"]["result"].as_array().map_or(0, Vec::len);
            assert!(n > 0, "{} ({expr}): no series", panel["title"]);
            queries += 1;
        }
    }
    assert_eq!(queries, 12);
    std::fs::remove_dir_all(&dir).unwrap();
}
