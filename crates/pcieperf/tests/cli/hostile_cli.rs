//! Hostile values on every numeric option of every command: the tool must answer with exit 2
//! and a message naming the option, or exit 0 with finite output — never a panic (101), an
//! abort (134), a signal or a hang.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Numbers a tired engineer types or a script computes wrongly.
const HOSTILE: &[&str] = &[
    "0",
    "-1",
    "0.5",
    "1e-300",
    "1e300",
    "nan",
    "inf",
    "65536",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "",
    "x",
];

/// Longest any one invocation may take before it counts as a hang.
const LIMIT: Duration = Duration::from_secs(30);

/// Values inside an option's documented range that ask for more than `LIMIT` of work: the
/// largest bandwidth count (2^32 DMAs, minutes of simulation) and 18 simulated hours. They are
/// not tried; everything around them is.
const LONG_BUT_VALID: &[(&str, &str)] = &[
    ("--samples", "4294967296"),
    ("--duration", "65536"),
    ("--runtime", "65536"),
];

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs the binary in `dir` with a time limit, killing it when it hangs.
fn run(dir: &std::path::Path, args: &[String]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let readers = (
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        }),
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        }),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waits") {
            break Some(s);
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.and_then(|s| s.code()),
        stdout: readers.0.join().unwrap(),
        stderr: readers.1.join().unwrap(),
        took: start.elapsed(),
    }
}

/// What is wrong with one answer, if anything.
fn judge(option: &str, value: &str, r: &Run) -> Option<String> {
    if r.took > LIMIT {
        return Some(format!("hung (killed after {LIMIT:?})"));
    }
    match r.code {
        Some(0) => {
            let nonsense = r
                .stdout
                .split(|c: char| c == ',' || c == '"' || c == ':' || c.is_whitespace())
                .find(|w| matches!(w.to_ascii_lowercase().as_str(), "nan" | "inf" | "-inf" | "infinity"));
            nonsense.map(|w| format!("exit 0 with {w:?} in the output"))
        }
        Some(2) => {
            let long = if option == "-I" {
                "interval"
            } else {
                option.trim_start_matches('-')
            };
            let named = r.stderr.contains(long) || (!value.is_empty() && r.stderr.contains(value));
            (!named).then(|| format!("exit 2 without naming {option} or {value:?}: {}", r.stderr.trim()))
        }
        Some(c) => Some(format!("exit {c}: {}", r.stderr.trim())),
        None => Some(format!("killed by a signal: {}", r.stderr.trim())),
    }
}

/// Each command with the arguments that keep it short, and its numeric options.
fn cases() -> Vec<(Vec<&'static str>, Vec<&'static str>)> {
    let sim_pmu = ["--source", "sim", "--fast", "--duration", "0.3"];
    let with = |head: &[&'static str], tail: &[&'static str]| [head, tail].concat();
    vec![
        (
            vec!["model", "bw", "--format", "csv"],
            vec![
                "--gen",
                "--lanes",
                "--mps",
                "--mrrs",
                "--rcb",
                "--addr",
                "--tlp-align",
                "--tag-bits",
                "--sizes",
                "--offset",
                "--eth",
                "--latency",
                "--tags",
            ],
        ),
        (vec!["model", "link", "--format", "csv"], vec!["--mps", "--mrrs"]),
        (
            vec!["model", "nic", "--format", "csv", "--sizes", "64..128"],
            vec!["--gen", "--lanes", "--mps", "--mrrs", "--eth", "--sizes"],
        ),
        (
            vec![
                "bench",
                "run",
                "--format",
                "csv",
                "--out",
                "run",
                "--test",
                "LAT_RD",
                "--samples",
                "2000",
            ],
            vec![
                "--size",
                "--window",
                "--host-offset",
                "--device-offset",
                "--samples",
                "--seed",
                "--threads",
            ],
        ),
        (
            vec![
                "bench",
                "run",
                "--format",
                "csv",
                "--out",
                "run",
                "--test",
                "BW_RD",
                "--samples",
                "2000",
            ],
            vec!["--size", "--window", "--samples"],
        ),
        (
            vec![
                "bench",
                "run",
                "--format",
                "csv",
                "--out",
                "run",
                "--suite",
                "quick",
                "--only",
                "lat_dma_sizes",
                "--samples",
                "500",
            ],
            vec!["--samples", "--threads"],
        ),
        (
            with(
                &[
                    "pmu",
                    "stat",
                    "-e",
                    "dwc_rootport/rx_pcie_tlp_data_payload/",
                    "--format",
                    "csv",
                ],
                &sim_pmu,
            ),
            vec!["--seed", "-I", "--duration"],
        ),
        (
            with(&["pmu", "record", "-o", "rec.csv"], &sim_pmu),
            vec!["--seed", "-I", "--duration"],
        ),
        (
            with(&["pmu", "serve", "--listen", "127.0.0.1:0"], &sim_pmu),
            vec!["-I", "--duration"],
        ),
        (
            with(&["pmu", "top", "--format", "csv"], &sim_pmu),
            vec!["-I", "--duration"],
        ),
        (
            vec![
                "pmu",
                "validate",
                "--source",
                "sim",
                "--port",
                "00:02.0",
                "--runtime",
                "1s",
                "--format",
                "csv",
            ],
            vec!["--bs", "--iodepth", "--numjobs", "--runtime", "--size", "-I", "--seed"],
        ),
    ]
}

#[test]
fn hostile_numbers_get_a_message_or_a_correct_answer() {
    let dir = std::env::temp_dir().join(format!("pcieperf-hostile-{}", std::process::id()));
    let mut problems = Vec::new();
    let mut runs = 0;
    for (base, options) in cases() {
        for option in options {
            for value in HOSTILE {
                if LONG_BUT_VALID.contains(&(option, value)) {
                    continue;
                }
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir_all(&dir).unwrap();
                // The option given last wins where the base already sets it (clap refuses
                // repeats of single-valued options, so replace it instead).
                let mut args: Vec<String> = Vec::new();
                let mut skip = false;
                for (i, a) in base.iter().enumerate() {
                    if skip {
                        skip = false;
                        continue;
                    }
                    if *a == option && i + 1 < base.len() {
                        skip = true;
                        continue;
                    }
                    args.push(a.to_string());
                }
                args.push(format!("{option}={value}"));
                let r = run(&dir, &args);
                runs += 1;
                if let Some(p) = judge(option, value, &r) {
                    problems.push(format!("pcieperf {}: {p}", args.join(" ")));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{runs} hostile invocations, {} problems", problems.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A hostile environment rather than hostile options: endless and blocking files where small
/// ones are expected, foreign and planted output directories, degenerate measurements. Every
/// case must end within `ENV_LIMIT`, under `ENV_MEMORY`, with its documented exit code.
mod environment {
    use crate::common::{fresh_path, reference, scratch_dir};
    use std::fs;
    use std::io::Read;
    use std::os::unix::fs::symlink;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    const ENV_LIMIT: Duration = Duration::from_secs(10);
    /// Peak resident memory allowed a command (KiB, as getrusage reports it).
    const ENV_MEMORY_KIB: i64 = 300 * 1024;

    struct Ended {
        code: Option<i32>,
        stderr: String,
        took: Duration,
        peak_kib: i64,
    }

    /// Runs the binary with `stdin`, killing it past twice the limit; its peak memory from
    /// wait4's rusage.
    fn run_with(args: &[&str], stdin: Stdio) -> Ended {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .stdin(stdin)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let mut err = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let pid = child.id() as libc::pid_t;
        let start = Instant::now();
        let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
        let code = loop {
            // SAFETY: `pid` is our child; `status` and `usage` are writable.
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if r == pid {
                break libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            }
            if start.elapsed() > 2 * ENV_LIMIT {
                let _ = child.kill();
                // SAFETY: as above, blocking this time.
                unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        // Reaped by wait4 already; this only settles the handle (ECHILD).
        let _ = child.wait();
        Ended {
            code,
            stderr: reader.join().unwrap(),
            took: start.elapsed(),
            peak_kib: usage.ru_maxrss,
        }
    }

    fn run(args: &[&str]) -> Ended {
        run_with(args, Stdio::null())
    }

    /// Asserts the command ended in time and memory with one of `codes`; its stderr.
    fn ended(args: &[&str], e: Ended, codes: &[i32]) -> String {
        assert!(e.took < ENV_LIMIT, "{args:?} took {:?}: {}", e.took, e.stderr);
        assert!(e.peak_kib < ENV_MEMORY_KIB, "{args:?} peaked at {} KiB", e.peak_kib);
        assert!(
            e.code.is_some_and(|c| codes.contains(&c)),
            "{args:?}: exit {:?}, expected one of {codes:?}: {}",
            e.code,
            e.stderr
        );
        e.stderr
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "{}", path.display());
    }

    /// What replaces a small file: a link to an endless device, a FIFO no one writes, a
    /// regular file far past any limit.
    #[derive(Clone, Copy, Debug)]
    enum Hostile {
        Zero,
        Fifo,
        Huge,
    }

    fn plant(path: &Path, how: Hostile) {
        let _ = fs::remove_file(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        match how {
            Hostile::Zero => symlink("/dev/zero", path).unwrap(),
            Hostile::Fifo => mkfifo(path),
            Hostile::Huge => fs::write(path, vec![b'7'; 70 << 20]).unwrap(),
        }
    }

    #[test]
    fn endless_and_blocking_files_in_a_sysfs_tree_are_cannot_tell() {
        let port = "sys/bus/pci/devices/0000:30:03.0";
        let files = [
            format!("{port}/current_link_speed"),
            format!("{port}/class"),
            format!("{port}/numa_node"),
            format!("{port}/aer_dev_correctable"),
            format!("{port}/power_state"),
            format!("{port}/config"),
            "sys/module/pcie_aspm/parameters/policy".to_string(),
            "sys/bus/event_source/devices/dwc_rootport_3018/type".to_string(),
            "sys/bus/event_source/devices/dwc_rootport_3018/events/rx_pcie_tlp_data_payload".to_string(),
            "proc/cpuinfo".to_string(),
        ];
        for how in [Hostile::Zero, Hostile::Fifo] {
            for file in &files {
                let tree = pcie_pmu::fixture::dwc_host("hostile-attr");
                let root = tree.path().to_str().unwrap().to_string();
                plant(&tree.path().join(file), how);
                let what = format!("{file} as {how:?}");
                // check: the file's value cannot be told; findings (3) or none (0).
                let args = ["check", "--sysfs", &root, "--format", "json"];
                ended(&args, run(&args), &[0, 3]);
                // pmu list: a PMU file that is no file is an error of its PMU or of the tree (1).
                let args = ["pmu", "list", "--sysfs", &root, "--format", "json"];
                ended(&args, run(&args), &[0, 1]);
                // snapshot: the file is left out and listed.
                let out = fresh_path("hostile-attr-snap");
                let o = out.to_str().unwrap();
                let args = ["snapshot", "--sysfs", &root, "-o", o];
                let err = ended(&args, run(&args), &[0]);
                assert!(!out.join(file).exists(), "{what}: copied: {err}");
                let _ = fs::remove_dir_all(&out);
            }
        }
        // A regular attribute past a page reads as "cannot tell" too.
        let tree = pcie_pmu::fixture::dwc_host("hostile-huge");
        plant(&tree.path().join(port).join("current_link_speed"), Hostile::Huge);
        let root = tree.path().to_str().unwrap();
        let args = ["check", "--sysfs", root, "--format", "json"];
        ended(&args, run(&args), &[0, 3]);
    }

    #[test]
    fn endless_inputs_named_on_the_command_line_are_refused_with_their_limit() {
        let d = scratch_dir("hostile-inputs");
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        let huge = d.join("huge.txt");
        plant(&huge, Hostile::Huge);
        let (f, h) = (fifo.to_str().unwrap(), huge.to_str().unwrap());
        let out = d.join("out.toml");
        let o = out.to_str().unwrap();
        let sim_fifo = format!("sim:{f}");
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (
                vec!["check", "--lspci", "/dev/zero"],
                "a character device, not a regular file",
            ),
            (vec!["check", "--lspci", f], "a FIFO, not a regular file"),
            (
                vec!["check", "--lspci", h],
                "more than 67108864 bytes (the most an lspci dump has)",
            ),
            (
                vec!["bench", "run", "--backend", "sim:/dev/zero", "--test", "LAT_RD"],
                "a character device",
            ),
            (
                vec!["bench", "run", "--backend", &sim_fifo, "--test", "LAT_RD"],
                "a FIFO",
            ),
            (vec!["bench", "run", "--suite", f], "a FIFO"),
            (vec!["bench", "run", "--suite", "/dev/zero"], "a character device"),
            (vec!["pmu", "list", "--source", "sim:/dev/zero"], "a character device"),
            (vec!["check", "--source", "sim:/dev/zero"], "a character device"),
            (
                vec!["sim", "fit", h, "--device", "/dev/zero", "-o", o],
                "a character device",
            ),
            (
                vec!["sim", "fit", h, "--device", "nfp6000", "--base", f, "-o", o],
                "a FIFO",
            ),
        ];
        for (args, says) in &cases {
            let err = ended(args, run(args), &[2]);
            assert!(err.contains(says), "{args:?}: {err}");
        }
        // An endless standard input stops at the dump's limit.
        let mut yes = Command::new("yes").stdout(Stdio::piped()).spawn().unwrap();
        let args = ["check", "--lspci", "-"];
        let e = run_with(&args, Stdio::from(yes.stdout.take().unwrap()));
        let _ = yes.kill();
        let _ = yes.wait();
        let err = ended(&args, e, &[2]);
        assert!(err.contains("--lspci -: more than 67108864 bytes"), "{err}");
        assert!(!out.exists());
        fs::remove_dir_all(&d).unwrap();
    }

    /// A copy of the pcie-bench measurements (no IOMMU) to spoil.
    fn measurements(name: &str) -> crate::common::Scratch {
        let from = reference("nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro");
        let to = scratch_dir(name);
        for e in fs::read_dir(&from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
        to
    }

    /// `sim fit DIR --device nfp6000 -o OUT`: ends with exit 2 and writes no profile; its stderr.
    fn fit_refused(dir: &Path, out_name: &str) -> String {
        let out = fresh_path(out_name);
        let args = [
            "sim",
            "fit",
            dir.to_str().unwrap(),
            "--device",
            "nfp6000",
            "-o",
            out.to_str().unwrap(),
        ];
        let err = ended(&args, run(&args), &[2]);
        assert!(!out.exists(), "{out_name} written");
        err
    }

    #[test]
    fn a_fit_directory_with_endless_host_files_is_refused_naming_the_file() {
        for (file, how, says) in [
            ("sys-lspci.txt", Hostile::Zero, "a character device"),
            ("sys-kernel-cmdline.txt", Hostile::Fifo, "a FIFO"),
            ("sys-cpuinfo.txt", Hostile::Huge, "more than 16777216 bytes"),
        ] {
            let dir = measurements("hostile-fit-files");
            plant(&dir.join(file), how);
            let err = fit_refused(&dir, "hostile-fit.toml");
            assert!(err.contains(file) && err.contains(says), "{file}: {err}");
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn degenerate_rows_are_refused_with_file_line_and_column() {
        let table = "lat_dma_sizes.csv";
        // Line 3's Med(ns) (field 17) set to 0; then line 2's WinSZ (field 6) to 100.
        for (line, field, value, says) in [
            (3, 16, "0", ":3:Med(ns): 0: a measurement of 0 or less cannot be fitted"),
            (2, 5, "100", ":2:WinSZ: 100: must be a positive multiple of 64"),
        ] {
            let dir = measurements("hostile-fit-rows");
            let path = dir.join(table);
            let text = fs::read_to_string(&path).unwrap();
            let spoiled: Vec<String> = text
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    if i + 1 != line {
                        return l.to_string();
                    }
                    let mut f: Vec<&str> = l.split(',').collect();
                    f[field] = value;
                    f.join(",")
                })
                .collect();
            fs::write(&path, spoiled.join("\n") + "\n").unwrap();
            let err = fit_refused(&dir, "hostile-rows.toml");
            assert!(err.contains(&format!("{table}{says}")), "{err}");
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// Every file of `dir` with its bytes, to show nothing changed.
    fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut all: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    fs::read(e.path()).unwrap_or_default(),
                )
            })
            .collect();
        all.sort();
        all
    }

    #[test]
    fn foreign_and_planted_output_directories_are_refused_untouched() {
        // bench run --out onto pcie-bench's measurements.
        let dir = measurements("hostile-out");
        let before = contents(&dir);
        let args = [
            "bench",
            "run",
            "--test",
            "LAT_RD",
            "--samples",
            "100",
            "--out",
            dir.to_str().unwrap(),
        ];
        let err = ended(&args, run(&args), &[2]);
        assert!(err.contains("exists and is not empty"), "{err}");
        assert_eq!(contents(&dir), before, "nothing touched");
        fs::remove_dir_all(&dir).unwrap();

        // snapshot -o a dangling symlink: refused, its target not made.
        let d = scratch_dir("hostile-snap-link");
        symlink(d.join("target"), d.join("link")).unwrap();
        let tree = pcie_pmu::fixture::dwc_host("hostile-snap");
        let link = d.join("link");
        let args = [
            "snapshot",
            "--sysfs",
            tree.path().to_str().unwrap(),
            "-o",
            link.to_str().unwrap(),
        ];
        let err = ended(&args, run(&args), &[2]);
        assert!(err.contains("a dangling symlink"), "{err}");
        assert!(!d.join("target").exists());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_exporter_listens_and_serves_health_on_a_hostile_tree_and_ends_on_sigterm() {
        let root = fresh_path("hostile-serve");
        pcie_health::fixture::dual_socket_server(&root).unwrap();
        fs::create_dir_all(root.join("sys/bus/event_source/devices")).unwrap();
        fs::create_dir_all(root.join("proc")).unwrap();
        let devices = root.join("sys/bus/pci/devices");
        plant(&devices.join("0000:17:00.0/current_link_speed"), Hostile::Zero);
        plant(&devices.join("0000:19:00.0/config"), Hostile::Fifo);
        plant(&devices.join("0000:31:00.0/aer_dev_correctable"), Hostile::Zero);
        let start = Instant::now();
        let mut server = crate::common::serve(&["--sysfs", root.to_str().unwrap(), "-I", "100"]);
        let body = loop {
            let text = crate::common::http_get(&server.addr, "/metrics", ENV_LIMIT);
            if text.contains("pcieperf_health_check_success") || start.elapsed() > ENV_LIMIT {
                break text;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(body.contains("pcieperf_health_check_success 1"), "{body}");
        assert!(start.elapsed() < ENV_LIMIT, "took {:?}", start.elapsed());
        // SAFETY: our child's pid.
        unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) };
        let stop = Instant::now();
        while server.child.try_wait().unwrap().is_none() {
            assert!(stop.elapsed() < ENV_LIMIT, "SIGTERM did not end the exporter");
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(server);
        fs::remove_dir_all(&root).unwrap();
    }
}
