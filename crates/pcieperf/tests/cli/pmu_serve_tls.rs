//! A real Prometheus (Debian's `prometheus`; skipped with a printed reason where it is not
//! installed) scrapes `pcieperf pmu serve --web.config.file` over TLS with basic
//! authentication and stores its series; a scrape job without the password is refused with
//! 401. The certificate is the committed self-signed one in `tls/` (see its README), trusted by
//! Prometheus as its own CA, so the scrape verifies the server's name and chain.

use crate::common;
use crate::pmu_serve_health::{encode, get, installed, prometheus_on};
use common::{scratch_dir, serve};

use std::net::TcpStream;
use std::time::{Duration, Instant};

/// `/api/v1/targets`' active targets: (job, health, last error).
fn targets(web: &str) -> Vec<(String, String, String)> {
    let (_, body) = get(web, "/api/v1/targets");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["activeTargets"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
            (
                t["labels"]["job"].as_str().unwrap_or("").to_string(),
                s("health"),
                s("lastError"),
            )
        })
        .collect()
}

#[test]
fn prometheus_scrapes_over_tls_with_basic_auth_and_without_the_password_gets_401() {
    let Some(prometheus) = installed("prometheus") else {
        println!("skipped: no prometheus on the PATH (Debian: apt-get install prometheus)");
        return;
    };
    let tls = common::tls_dir();
    let dir = scratch_dir("serve-tls");
    // The web config names its files relative to itself, as the exporter-toolkit reads them.
    for f in ["localhost.crt", "localhost.key"] {
        std::fs::copy(tls.join(f), dir.join(f)).unwrap();
    }
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    std::fs::write(
        dir.join("web.yml"),
        format!(
            "tls_server_config:\n  cert_file: localhost.crt\n  key_file: localhost.key\n\
             basic_auth_users:\n  prometheus: {hash}\n"
        ),
    )
    .unwrap();
    let web_config = dir.join("web.yml");
    let exporter = serve(&[
        "--source",
        "sim",
        "-I",
        "200",
        "--web.config.file",
        web_config.to_str().unwrap(),
    ]);
    let target = &exporter.addr;
    // Plain HTTP to the TLS port gets no answer (the handshake fails; rustls may say why).
    let plain = common::http_get(target, "/metrics", Duration::from_secs(5));
    assert!(!plain.starts_with("HTTP/1.1 200"), "{plain}");

    let ca = dir.join("localhost.crt");
    let job = |name: &str, auth: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config: {{ca_file: {}}}\n{auth}    static_configs: [{{targets: [\"{target}\"]}}]\n",
            ca.display()
        )
    };
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global: {{scrape_interval: 1s}}\nscrape_configs:\n{}{}{}",
            job(
                "with_password",
                "    basic_auth: {username: prometheus, password: s3cret}\n"
            ),
            job(
                "wrong_password",
                "    basic_auth: {username: prometheus, password: guess}\n"
            ),
            job("no_password", "")
        ),
    )
    .unwrap();
    let (_prom, web) = prometheus_on(&prometheus, &dir);
    let start = Instant::now();
    let seen = loop {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "targets not scraped within 60 s"
        );
        std::thread::sleep(Duration::from_millis(300));
        if TcpStream::connect(&web).is_err() {
            continue; // not listening yet
        }
        let t = targets(&web);
        if t.len() == 3 && t.iter().all(|(_, health, _)| health != "unknown") {
            break t;
        }
    };
    for (job, health, error) in &seen {
        match job.as_str() {
            "with_password" => assert_eq!((health.as_str(), error.as_str()), ("up", ""), "{seen:?}"),
            _ => {
                assert_eq!(health, "down", "{seen:?}");
                assert!(error.contains("401"), "{job}: {error}");
            }
        }
    }
    // What it scraped is stored: the simulated host's link health and its counters.
    let deadline = Instant::now() + Duration::from_secs(30);
    for q in [
        "pcieperf_health_check_success{job=\"with_password\"}",
        "pcieperf_intervals_total{job=\"with_password\"}",
    ] {
        loop {
            let (_, body) = get(&web, &format!("/api/v1/query?query={}", encode(q)));
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
            if let Some(r) = result.first() {
                let value: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
                assert!(value >= 1.0, "{q}: {body}");
                break;
            }
            assert!(Instant::now() < deadline, "{q}: no series: {body}");
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
