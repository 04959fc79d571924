//! `pcieperf pmu serve` on a free loopback port: `/metrics` parses as Prometheus text (0.0.4)
//! with HELP/TYPE for every family, counters grow between scrapes, the live page and its JSON
//! answer, and Ctrl-C ends it with exit 0. Counts the host's software PMU (skipped where
//! perf_event_open is not permitted).

use crate::common;
use common::{can_count_software, http_get, pcieperf, refused, serve, software_backed_dwc, stderr, Server};

use prometheus_parse::{Scrape, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A GET over HTTP/1.1: (status line, headers, body).
fn get(addr: &str, path: &str) -> (String, String, String) {
    let text = http_get(addr, path, Duration::from_secs(5));
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), headers.to_string(), body.to_string())
}

fn scrape(addr: &str) -> (String, Scrape) {
    let (status, headers, body) = get(addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    // Header names are case-insensitive (hyper writes them in lower case).
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    let lines = body.lines().map(|l| Ok(l.to_string()));
    (body.clone(), Scrape::parse(lines).expect("parses"))
}

fn value(s: &Scrape, metric: &str, event: &str) -> f64 {
    let sample = s
        .samples
        .iter()
        .find(|x| x.metric == metric && x.labels.get("event") == Some(event))
        .unwrap_or_else(|| panic!("no {metric} for {event}"));
    match sample.value {
        Value::Counter(v) | Value::Gauge(v) => v,
        ref v => panic!("{metric}: {v:?}"),
    }
}

/// Starts the server on a free port; `None` where counting is refused here.
fn start(args: &[&str]) -> Option<Server> {
    can_count_software().then(|| serve(args))
}

#[test]
fn metrics_parse_grow_and_ctrl_c_ends_cleanly() {
    let Some(mut server) = start(&["-e", "software/cpu-clock/,software/task-clock/", "-I", "100"]) else {
        return;
    };
    let addr = server.addr.clone();
    // Before the first interval there is nothing to count yet, but the answer still parses.
    let deadline = Instant::now() + Duration::from_secs(10);
    let first = loop {
        let (body, s) = scrape(&addr);
        if s.samples.iter().any(|x| x.metric == "pcieperf_event_raw_total") {
            break (body, s);
        }
        assert!(Instant::now() < deadline, "no samples: {body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let (body, s1) = first;
    // Every line is a comment or a sample the parser took (it skips what it does not understand).
    let sample_lines = body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count();
    assert_eq!(sample_lines, s1.samples.len(), "{body}");
    for family in [
        "pcieperf_event_raw_total",
        "pcieperf_event_scaled_total",
        "pcieperf_event_running_ratio",
        "pcieperf_intervals_total",
        "pcieperf_interval_seconds",
    ] {
        assert!(s1.docs.contains_key(family), "HELP for {family}: {body}");
        assert!(body.contains(&format!("# TYPE {family} ")), "TYPE for {family}");
    }
    for x in &s1.samples {
        let counter = x.metric.ends_with("_total");
        assert!(
            matches!(
                (&x.value, counter),
                (Value::Counter(_), true) | (Value::Gauge(_), false)
            ),
            "{x:?}"
        );
        if x.metric.starts_with("pcieperf_event_") {
            assert_eq!(x.labels.get("pmu"), Some("software"), "{x:?}");
            assert_eq!(x.labels.get("root_port"), Some(""), "{x:?}");
            assert_eq!(x.labels.get("metric"), Some(""), "{x:?}");
        }
    }
    assert_eq!(value(&s1, "pcieperf_event_running_ratio", "cpu-clock"), 1.0);
    // Software events never count payload: no bytes or Gb/s families.
    assert!(!body.contains("pcieperf_event_bytes_total") && !body.contains("pcieperf_root_port_gbps"));

    std::thread::sleep(Duration::from_millis(350));
    let (_, s2) = scrape(&addr);
    for ev in ["cpu-clock", "task-clock"] {
        let (a, b) = (
            value(&s1, "pcieperf_event_raw_total", ev),
            value(&s2, "pcieperf_event_raw_total", ev),
        );
        // cpu-clock counts nanoseconds: at least 0.2 s more after 0.35 s.
        assert!(b - a > 2e8, "{ev}: {a} -> {b}");
    }
    let intervals = |s: &Scrape| {
        s.samples
            .iter()
            .find(|x| x.metric == "pcieperf_intervals_total")
            .map(|x| match x.value {
                Value::Counter(v) => v,
                _ => panic!(),
            })
            .unwrap()
    };
    assert!(intervals(&s2) >= intervals(&s1) + 2.0);

    let (status, headers, page) = get(&addr, "/");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("text/html"));
    assert!(
        page.contains("api/targets") && !page.contains("http"),
        "self-contained page"
    );
    let (_, _, json) = get(&addr, "/api/targets");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let targets = v["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0]["name"], "software/cpu-clock/");
    assert!(targets[0]["history"].as_array().unwrap().len() >= 3, "{json}");
    assert!(get(&addr, "/nope").0.contains("404"));

    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGINT) };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_silent_client_does_not_hold_up_a_scrape() {
    let Some(server) = start(&["-e", "software/cpu-clock/", "-I", "100"]) else {
        return;
    };
    // Connects and never sends its request: the server gives such a client 1 s.
    let idle = TcpStream::connect(&server.addr).unwrap();
    let (status, _, _) = get(&server.addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    // The scrape was answered while the silent connection is still open, not after its timeout.
    idle.set_nonblocking(true).unwrap();
    let open = matches!((&idle).read(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    assert!(open, "the scrape waited for the silent client to time out");
}

#[test]
fn requests_pipelined_behind_the_first_do_not_reset_its_answer() {
    let Some(server) = start(&["-e", "software/cpu-clock/", "-I", "100"]) else {
        return;
    };
    let mut s = TcpStream::connect(&server.addr).unwrap();
    // 60 KB of requests in one write: more than the server's reader takes in at once, so most
    // of it is still in the server's socket when the first is answered and the server closes
    // (it answers one request per connection). Closed with them unread, the socket would be
    // reset, and the client's read end in an error instead of the close.
    let one = format!("GET /metrics HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
    s.write_all(one.repeat(60_000 / one.len()).as_bytes()).unwrap();
    // Answer, close (or reset) have arrived by now.
    std::thread::sleep(Duration::from_millis(300));
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut text = Vec::new();
    if let Err(e) = s.read_to_end(&mut text) {
        panic!("{e} after {} bytes of the answer", text.len());
    }
    let text = String::from_utf8(text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_string)
        })
        .expect("a length");
    assert_eq!(
        body.len(),
        length.parse::<usize>().unwrap(),
        "one whole answer, then the close"
    );
}

#[test]
fn a_client_trickling_its_request_is_cut_off_after_3_s() {
    let Some(server) = start(&["-e", "software/cpu-clock/", "-I", "100"]) else {
        return;
    };
    let mut slow = TcpStream::connect(&server.addr).unwrap();
    let start = Instant::now();
    // A header byte every 200 ms, never the blank line: each read alone is quick.
    let cut = loop {
        if slow.write_all(b"X").is_err() {
            break start.elapsed();
        }
        slow.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        match slow.read(&mut [0u8; 64]) {
            Ok(0) => break start.elapsed(),
            Ok(_) => panic!("answered a request that never ended"),
            // A signal to this test process (another test's child exiting) interrupts the read.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break start.elapsed(),
        }
        assert!(start.elapsed() < Duration::from_secs(10), "still connected after 10 s");
    };
    assert!(cut >= Duration::from_millis(2900), "cut off early, after {cut:?}");
}

#[test]
fn listen_address_is_checked_and_non_loopback_warns() {
    let e = refused(&["pmu", "serve", "-e", "software/cpu-clock/", "--listen", "localhost"]);
    assert!(e.contains("--listen localhost") && e.contains("ADDRESS:PORT"), "{e}");
    let e = refused(&["pmu", "serve", "-e", "software/cpu-clock/", "-I", "0"]);
    assert!(e.contains("-I 0"), "{e}");
    let o = pcieperf(&[
        "pmu",
        "serve",
        "-e",
        "software/cpu-clock/",
        "--listen",
        "0.0.0.0:0",
        "--duration",
        "0.3",
    ]);
    let e = stderr(&o);
    assert!(
        e.contains("warning: --listen 0.0.0.0:") && e.contains("not a loopback"),
        "{e}"
    );
    if !e.contains("not permitted") {
        assert_eq!(o.status.code(), Some(0), "{e}");
    }
}

#[test]
fn root_port_families_from_a_payload_pmu() {
    let tree = software_backed_dwc("serve-payload");
    let Some(server) = start(&["--sysfs", tree.path().to_str().unwrap(), "-I", "100"]) else {
        return;
    };
    let addr = server.addr.clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    let (body, s) = loop {
        let (body, s) = scrape(&addr);
        if s.samples.iter().any(|x| x.metric == "pcieperf_root_port_gbps") {
            break (body, s);
        }
        assert!(Instant::now() < deadline, "no root port samples: {body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let port = |metric: &str, dir: &str| {
        let x = s
            .samples
            .iter()
            .find(|x| x.metric == metric && x.labels.get("direction") == Some(dir))
            .unwrap_or_else(|| panic!("{metric} {dir}: {body}"));
        assert_eq!(x.labels.get("root_port"), Some("0000:30:03.0"));
        match x.value {
            Value::Gauge(v) => v,
            ref v => panic!("{v:?}"),
        }
    };
    for dir in ["rx", "tx"] {
        let g = port("pcieperf_root_port_gbps", dir);
        assert!((4.0..12.0).contains(&g), "{dir}: {g}");
        let share = port("pcieperf_root_port_link_share_ratio", dir);
        assert!(
            (g / share - 446.8).abs() < 0.2,
            "{dir}: {g} Gb/s is {share} of the model"
        );
    }
    let bytes = s
        .samples
        .iter()
        .find(|x| x.metric == "pcieperf_event_bytes_total" && x.labels.get("metric") == Some("rx_bytes"))
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(bytes.labels.get("event"), Some("rx_pcie_tlp_data_payload"));
    assert_eq!(bytes.labels.get("pmu"), Some("dwc_rootport_3018"));
    assert!(body.contains("# TYPE pcieperf_event_gbps gauge"));
}
