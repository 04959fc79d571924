//! `pcieperf pmu serve` speaks HTTP/1.1 correctly to odd requests (414/431 for oversized heads,
//! 405 with `Allow`, HEAD, 400 for garbage), asks for basic authentication when the web config
//! names users, and keeps answering scrapes while crowds of silent, trickling and slow clients
//! hold connections. Served from the simulated Yitian 710 (no perf permission needed). The
//! ignored stress test prints scrape latency percentiles beside such crowds and the server's
//! memory after slow readers of a large page left.

use crate::common;
use common::{http_get, scratch_dir, serve, Server};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

fn sim_server(extra: &[&str]) -> Server {
    let mut args = vec!["--source", "sim", "-I", "200"];
    args.extend_from_slice(extra);
    serve(&args)
}

/// Send `request` (from a thread of its own, so a server that answers before reading it all
/// does not block us) and read the answer to the server's close.
fn exchange(addr: &str, request: Vec<u8>) -> String {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&request));
    let mut text = Vec::new();
    let read = (&s).read_to_end(&mut text);
    let _ = writer.join();
    if let Err(e) = read {
        panic!("{e} after {:?}", String::from_utf8_lossy(&text));
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// (status line, head, body).
fn parts(text: &str) -> (String, String, String) {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {text:?}"));
    let status = head.lines().next().unwrap_or("").to_string();
    (status, head.to_string(), body.to_string())
}

fn request(method: &str, target: &str, headers: &str) -> Vec<u8> {
    format!("{method} {target} HTTP/1.1\r\nHost: x\r\n{headers}\r\n").into_bytes()
}

/// A header's value; `name` in lower case (names are case-insensitive).
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        (n.to_ascii_lowercase() == name).then(|| v.trim())
    })
}

#[test]
fn odd_requests_get_the_status_http_gives_them() {
    let server = sim_server(&[]);
    let addr = &server.addr;
    let (status, head, body) = parts(&exchange(addr, request("GET", "/metrics", "")));
    assert_eq!(status, "HTTP/1.1 200 OK");
    let length: usize = header(&head, "content-length").unwrap().parse().unwrap();
    assert_eq!(length, body.len());
    assert!(body.starts_with("# HELP pcieperf_"), "{body}");

    // HEAD: the GET's head (its length too), no body.
    let (status, head, body) = parts(&exchange(addr, request("HEAD", "/", "")));
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        header(&head, "content-type").unwrap().starts_with("text/html"),
        "{head}"
    );
    let (_, _, page) = parts(&exchange(addr, request("GET", "/", "")));
    assert_eq!(header(&head, "content-length"), Some(page.len().to_string().as_str()));
    assert_eq!(body, "");

    for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let (status, head, _) = parts(&exchange(addr, request(method, "/metrics", "Content-Length: 0\r\n")));
        assert_eq!(status, "HTTP/1.1 405 Method Not Allowed", "{method}");
        assert_eq!(header(&head, "allow"), Some("GET, HEAD"), "{method}: {head}");
    }
    assert!(parts(&exchange(addr, request("GET", "/nope", ""))).0.contains("404"));

    // A 10 KB target fits the head but not the target limit; a 1 MB one overflows the head.
    let long = format!("/metrics?{}", "a".repeat(10_000));
    assert_eq!(
        parts(&exchange(addr, request("GET", &long, ""))).0,
        "HTTP/1.1 414 URI Too Long"
    );
    let huge = format!("/metrics?{}", "a".repeat(1 << 20));
    let status = parts(&exchange(addr, request("GET", &huge, ""))).0;
    assert!(
        status == "HTTP/1.1 414 URI Too Long" || status == "HTTP/1.1 431 Request Header Fields Too Large",
        "{status}"
    );
    let big_header = format!("X-Big: {}\r\n", "b".repeat(20_000));
    assert_eq!(
        parts(&exchange(addr, request("GET", "/metrics", &big_header))).0,
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    let many: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    assert_eq!(
        parts(&exchange(addr, request("GET", "/metrics", &many))).0,
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    // Binary garbage, and a request line that is not one.
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    assert_eq!(parts(&exchange(addr, garbage)).0, "HTTP/1.1 400 Bad Request");
    assert_eq!(
        parts(&exchange(addr, b"hello there\r\n\r\n".to_vec())).0,
        "HTTP/1.1 400 Bad Request"
    );
}

#[test]
fn basic_auth_users_are_asked_for_their_password() {
    let dir = scratch_dir("serve-auth");
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let config = dir.join("web.yml");
    std::fs::write(&config, format!("basic_auth_users:\n  prometheus: '{hash}'\n")).unwrap();
    let server = sim_server(&["--web.config.file", config.to_str().unwrap()]);
    let addr = &server.addr;
    let (status, head, _) = parts(&exchange(addr, request("GET", "/metrics", "")));
    assert_eq!(status, "HTTP/1.1 401 Unauthorized");
    assert!(
        header(&head, "www-authenticate").unwrap().starts_with("Basic "),
        "{head}"
    );
    // prometheus:s3cret, then a wrong password and an unknown user.
    let with = |b64: &str| {
        parts(&exchange(
            addr,
            request("GET", "/metrics", &format!("Authorization: Basic {b64}\r\n")),
        ))
        .0
    };
    assert_eq!(with("cHJvbWV0aGV1czpzM2NyZXQ="), "HTTP/1.1 200 OK");
    assert_eq!(with("cHJvbWV0aGV1czpzM2NyZXQ="), "HTTP/1.1 200 OK", "remembered");
    assert_eq!(with("cHJvbWV0aGV1czp3cm9uZw=="), "HTTP/1.1 401 Unauthorized");
    assert_eq!(with("b3RoZXI6czNjcmV0"), "HTTP/1.1 401 Unauthorized");
    // The page and its JSON too.
    assert!(http_get(addr, "/api/targets", Duration::from_secs(5)).starts_with("HTTP/1.1 401"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_web_config_is_refused_before_listening() {
    let dir = scratch_dir("serve-web-config");
    let config = dir.join("web.yml");
    let refused = |text: &str, path: &Path| {
        std::fs::write(&config, text).unwrap();
        common::refused(&[
            "pmu",
            "serve",
            "--source",
            "sim",
            "--web.config.file",
            path.to_str().unwrap(),
        ])
    };
    let e = refused(
        "tls_server_config:\n  cert_file: nowhere.crt\n  key_file: nowhere.key\n",
        &config,
    );
    assert!(e.contains("--web.config.file") && e.contains("nowhere.crt"), "{e}");
    let e = refused("basic_auth_users:\n  alice: plaintext\n", &config);
    assert!(e.contains("basic_auth_users.alice: not a bcrypt hash"), "{e}");
    let e = refused("", Path::new("/dev/null"));
    assert!(e.contains("/dev/null: a character device, not a regular file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Open up to `n` connections to `addr` that send nothing: fewer where this process may not
/// open that many descriptors (after raising its limit to the hard one) and leave 256 for the
/// tests running beside.
fn silent(addr: &str, n: usize) -> Vec<TcpStream> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the calls to read and write.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
    let room = usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX).saturating_sub(256);
    (0..n.min(room)).map_while(|_| TcpStream::connect(addr).ok()).collect()
}

#[test]
fn more_silent_clients_than_places_never_fail_a_scrape() {
    let server = sim_server(&[]);
    let addr = server.addr.clone();
    // More than the server holds (1024, or (limit - 64) / 2 where its descriptor limit is
    // below 2,112): the oldest that sent nothing give way to newer ones.
    let crowd = silent(&addr, 1100);
    assert!(crowd.len() > 700, "could open only {} connections", crowd.len());
    for _ in 0..5 {
        let (status, _, _) = parts(&http_get(&addr, "/metrics", Duration::from_secs(10)));
        assert_eq!(status, "HTTP/1.1 200 OK");
    }
    // Connections that sent nothing are closed after a second.
    std::thread::sleep(Duration::from_millis(1500));
    let (mut closed, crowd_len) = (0, crowd.len());
    for mut s in crowd {
        s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        if matches!(s.read(&mut [0u8; 1]), Ok(0) | Err(_)) {
            closed += 1;
        }
    }
    assert_eq!(closed, crowd_len, "silent connections still open");
}

#[test]
fn sigterm_ends_the_server_while_clients_hold_it() {
    let mut server = sim_server(&[]);
    let addr = server.addr.clone();
    let _crowd = silent(&addr, 200);
    // One client trickling its head, one reading its answer slowly.
    let mut trickle = TcpStream::connect(&addr).unwrap();
    trickle.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    slow.read_exact(&mut [0u8; 16]).unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

/// Percentile `p` (0..100) of sorted `v`.
fn percentile(v: &[Duration], p: f64) -> Duration {
    v[((v.len() - 1) as f64 * p / 100.0).round() as usize]
}

/// Resident memory of process `pid` in MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024.0
}

/// A tree of `ports` root ports with eight functions below each, for a large `/metrics`.
fn wide_tree(root: &std::path::Path, ports: u32) {
    use pcie_health::fixture::{link, root_port, Func};
    for i in 0..ports {
        let (domain, k) = (i / 64, i % 64);
        let port = format!("{domain:04x}:00:{:02x}.{}", k % 32, k / 32);
        let bus = k as u8 + 1;
        root_port(&port, 0, link(16.0, 16, 16.0, 16), bus)
            .write(root, &[])
            .unwrap();
        for f in 0..8 {
            Func::new(
                &format!("{domain:04x}:{bus:02x}:00.{f}"),
                0x15b3,
                0x101d,
                0x020000,
                pcie_sysfs::PortType::Endpoint,
                0,
            )
            .link(link(16.0, 16, 16.0, 16))
            .config(|c| c.aer())
            .write(root, &[&port])
            .unwrap();
        }
    }
    std::fs::create_dir_all(root.join("sys/bus/event_source/devices")).unwrap();
    std::fs::create_dir_all(root.join("proc")).unwrap();
}

/// Scrape `/metrics` `n` times one after another; the latencies, sorted.
fn scrapes(addr: &str, n: usize) -> Vec<Duration> {
    let mut t: Vec<Duration> = (0..n)
        .map(|_| {
            let start = Instant::now();
            let text = http_get(addr, "/metrics", Duration::from_secs(30));
            assert!(text.starts_with("HTTP/1.1 200 OK"), "{}", &text[..text.len().min(200)]);
            start.elapsed()
        })
        .collect();
    t.sort();
    t
}

fn show(what: &str, t: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{what}: {} scrapes, p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        t.len(),
        ms(percentile(t, 50.0)),
        ms(percentile(t, 90.0)),
        ms(percentile(t, 99.0)),
        ms(t[t.len() - 1])
    );
}

/// The stress test: a large page (a 10,000-function tree), scraped alone, beside 2,000 silent
/// connections reopened as the server drops them, beside clients trickling their heads, and
/// beside 32 slow readers of the page; then the server's memory once the slow readers left.
/// `cargo test -p pcieperf --test cli stress -- --ignored --nocapture`
#[test]
#[ignore]
fn stress_scrapes_beside_silent_trickling_and_slow_clients() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let root = scratch_dir("serve-stress");
    wide_tree(&root, 1250);
    let server = serve(&["--sysfs", root.to_str().unwrap(), "-I", "1000"]);
    let addr = server.addr.clone();
    // The first check of 10,000 functions takes a while.
    let deadline = Instant::now() + Duration::from_secs(60);
    let size = loop {
        let text = http_get(&addr, "/metrics", Duration::from_secs(30));
        if text.contains("pcieperf_pcidevice_info") {
            break text.len();
        }
        assert!(Instant::now() < deadline, "no link health after 60 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "/metrics: {:.1} MB; server at {:.0} MiB",
        size as f64 / 1e6,
        rss_mib(server.child.id())
    );
    show("alone", &scrapes(&addr, 50));

    let stop = Arc::new(AtomicBool::new(false));
    let mut crowd = Vec::new();
    // 2,000 silent connections in 4 groups, each reopening its connections as they are closed.
    for _ in 0..4 {
        let (addr, stop) = (addr.clone(), Arc::clone(&stop));
        crowd.push(std::thread::spawn(move || {
            let mut held = silent(&addr, 500);
            while !stop.load(Ordering::Relaxed) {
                for s in &mut held {
                    s.set_nonblocking(true).unwrap();
                    // Still open: nothing to read yet. Closed or reset: open another.
                    let open =
                        matches!(s.read(&mut [0u8; 1]), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock);
                    if !open {
                        if let Ok(n) = TcpStream::connect(&addr) {
                            *s = n;
                        }
                    }
                }
                // The server closes them after 1 s: they are back within a fifth of that.
                std::thread::sleep(Duration::from_millis(200));
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(500));
    show("beside 2,000 silent connections, reopened", &scrapes(&addr, 60));
    // 50 clients sending a header byte every 100 ms, reconnecting when cut off.
    for _ in 0..50 {
        let (addr, stop) = (addr.clone(), Arc::clone(&stop));
        crowd.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut s) = TcpStream::connect(&addr) else { continue };
                let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n");
                while !stop.load(Ordering::Relaxed) && s.write_all(b"X").is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(500));
    show("beside those and 50 trickling clients", &scrapes(&addr, 60));
    // 32 slow readers: each reads 4 KiB of the page every 50 ms.
    let slow_stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..32)
        .map(|_| {
            let (addr, stop) = (addr.clone(), Arc::clone(&slow_stop));
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                let mut buf = [0u8; 4096];
                while !stop.load(Ordering::Relaxed) && matches!(s.read(&mut buf), Ok(n) if n > 0) {
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1000));
    let with_readers = rss_mib(server.child.id());
    show("beside those and 32 slow readers", &scrapes(&addr, 60));
    slow_stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for c in crowd {
        c.join().unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));
    println!(
        "server memory: {with_readers:.0} MiB with 32 slow readers, {:.0} MiB after they left",
        rss_mib(server.child.id())
    );
    std::fs::remove_dir_all(&root).unwrap();
}
