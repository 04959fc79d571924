//! Running the `pcieperf` binary from the CLI tests.

use std::process::{Command, Output};

pub fn pcieperf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .output()
        .expect("runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Runs, expects success, returns stdout.
pub fn ok(args: &[&str]) -> String {
    let o = pcieperf(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

/// Runs, expects exit 2 with nothing on stdout, returns stderr.
pub fn refused(args: &[&str]) -> String {
    let o = pcieperf(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert!(o.stdout.is_empty(), "{args:?} printed {}", stdout(&o));
    stderr(&o)
}

/// True where this host lets us count its software PMU; otherwise says why (the test skips).
pub fn can_count_software() -> bool {
    let o = pcieperf(&["pmu", "stat", "-e", "software/cpu-clock/", "--duration", "0.01"]);
    if o.status.code() != Some(0) {
        eprintln!("skipped: {}", stderr(&o));
        return false;
    }
    true
}

/// A fixture host whose DWC root-port PMU (`dwc_rootport_3018` on root port 0000:30:03.0, Gen5
/// x16) is the kernel's software PMU in disguise: type 1 (`PERF_TYPE_SOFTWARE`), with
/// `rx_pcie_tlp_data_payload` = cpu-clock (config 0) and `tx_pcie_tlp_data_payload` = task-clock
/// (config 1). The catalog still says 1 byte per count, so a host without PCIe PMUs counts
/// payload rows, root-port sums and link shares for real: about 1e9 "bytes" a second, 8 Gb/s.
pub fn software_backed_dwc(tag: &str) -> pcie_pmu::fixture::Tree {
    use pcie_pmu::fixture::{self, DwcVariant, Tree};
    let t = Tree::new(tag);
    fixture::common_pmus(&t);
    fixture::dwc_pmu(&t, "dwc_rootport_3018", 1, "0", DwcVariant::Upstream);
    t.root_port("0000:30:03.0", "0");
    let events = "sys/bus/event_source/devices/dwc_rootport_3018/events";
    t.attr(&format!("{events}/rx_pcie_tlp_data_payload"), "eventid=0x0,type=0x0");
    t.attr(&format!("{events}/tx_pcie_tlp_data_payload"), "eventid=0x1,type=0x0");
    t
}

/// A path under the temp directory, unique to this test process, removed (whatever the test
/// left there) when dropped, so test runs do not pile up directories in the temp directory.
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A [`Scratch`] path that does not exist yet (for commands that create their output directory
/// themselves).
pub fn fresh_path(name: &str) -> Scratch {
    let p = std::env::temp_dir().join(format!("pcieperf-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    Scratch(p)
}

/// An empty [`Scratch`] directory.
pub fn scratch_dir(name: &str) -> Scratch {
    let p = fresh_path(name);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// The committed test certificates and keys (`tests/cli/tls`, made as its README says).
pub fn tls_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/tls")
}

/// One of the pcie-bench data directories copied into `data/reference/pcie-bench`.
pub fn reference(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/reference/pcie-bench")
        .join(name)
}

/// `GET path` over HTTP/1.1 with `Connection: close`: the answer's text, up to the server's
/// close. The request goes in one write, and the answer is read even when that write failed:
/// a server may answer and close before it read the request (RFC 9112 section 9.6), and its
/// answer is still there to read, as HTTP clients do.
pub fn http_get(addr: &str, path: &str, timeout: std::time::Duration) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let sent = s.write_all(request.as_bytes());
    let mut text = Vec::new();
    if let Err(e) = s.read_to_end(&mut text) {
        panic!(
            "GET {path}: {e} (sending: {sent:?}); read {}",
            String::from_utf8_lossy(&text)
        );
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// `pcieperf pmu serve ARGS` on a free loopback port, killed when dropped.
pub struct Server {
    pub child: std::process::Child,
    pub addr: String,
    /// What it wrote on stderr after the line naming its address (the first MiB).
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `pcieperf pmu serve ARGS` on a free loopback port and reads its address from the
/// first line naming it; stderr is then drained (and kept in [`Server::stderr`]) so the server
/// never blocks on a full pipe or fails on a closed one.
pub fn serve(args: &[&str]) -> Server {
    serve_with(args, &[])
}

/// [`serve`] with environment variables set for the server.
pub fn serve_with(args: &[&str], env: &[(&str, &str)]) -> Server {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(["pmu", "serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // `http://` or, with TLS, `https://`.
    while !line.contains("://") {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "the server ended before listening"
        );
    }
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let stderr = std::sync::Arc::<std::sync::Mutex<String>>::default();
    let kept = std::sync::Arc::clone(&stderr);
    std::thread::spawn(move || {
        let mut line = String::new();
        while err.read_line(&mut line).unwrap_or(0) > 0 {
            let mut k = kept.lock().unwrap();
            if k.len() < 1 << 20 {
                k.push_str(&line);
            }
            line.clear();
        }
    });
    Server { child, addr, stderr }
}

/// A stand-in driver library built from `tests/cli/fake_driver/<source>` into
/// `CARGO_TARGET_TMPDIR/<dir>/<lib>` (under a temporary name first, so tests running at once
/// never load a half-written one); returns the directory.
pub fn build_stand_in(source: &str, dir: &str, lib: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli/fake_driver")
        .join(source);
    let building = dir.join(format!("{lib}.{}", std::process::id()));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let o = Command::new(rustc)
        .args(["--edition", "2021", "--crate-type", "cdylib", "-o"])
        .arg(&building)
        .arg(&src)
        .output()
        .expect("rustc runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::rename(&building, dir.join(lib)).unwrap();
    dir
}
