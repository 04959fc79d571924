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
