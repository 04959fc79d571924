//! Every output option of every command against every kind of path (issue 24): a new name, a
//! regular file (replaced atomically, permissions kept), symlinks to a file, to nothing and to a
//! directory, a character device, a FIFO with a reader, `-`, and `/dev/full`. The special file
//! stays what it was, the data arrives where it should, a write error exits 1 naming the path.
//! Device nodes need root (`mknod`); where it is refused those cases are skipped with a message.

use crate::common;
use common::{reference, scratch_dir, stderr, stdout};

use std::fs;
use std::io::Read;
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// An option that names one output file: the command line around the path, and what the file
/// holds when written.
struct FileOption {
    name: &'static str,
    args: fn(&str, &Path) -> Vec<String>,
    holds: &'static str,
}

/// An option that names an output directory, and one file it holds once written.
struct DirOption {
    name: &'static str,
    args: fn(&str) -> Vec<String>,
    holds: &'static str,
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// A quick PMU recording on the simulated host, with its rows to `out`.
fn record(out: &str, extra: &[&str]) -> Vec<String> {
    let mut v = words("pmu record --source sim --fast --duration 0.2 -I 100 -o");
    v.push(out.into());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn report_dir() -> String {
    reference("nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro")
        .to_str()
        .unwrap()
        .into()
}

const FILE_OPTIONS: &[FileOption] = &[
    FileOption {
        name: "pmu record -o",
        args: |p, _| record(p, &[]),
        holds: "time_s,unix_time,",
    },
    FileOption {
        name: "pmu record --svg",
        args: |p, side| record(side.join("r.csv").to_str().unwrap(), &["--svg", p]),
        holds: "<svg",
    },
    FileOption {
        name: "pmu record --html",
        args: |p, side| record(side.join("r.csv").to_str().unwrap(), &["--html", p]),
        holds: "<!DOCTYPE html>",
    },
    FileOption {
        name: "model bw --plot",
        args: |p, _| [words("model bw --plot"), vec![p.into()]].concat(),
        holds: "<svg",
    },
    FileOption {
        name: "model nic --plot",
        args: |p, _| [words("model nic --sizes 64,1518 --plot"), vec![p.into()]].concat(),
        holds: "<svg",
    },
    FileOption {
        name: "bench report --html",
        args: |p, _| vec!["bench".into(), "report".into(), report_dir(), "--html".into(), p.into()],
        holds: "<!DOCTYPE html>",
    },
];

const DIR_OPTIONS: &[DirOption] = &[
    DirOption {
        name: "bench run --out",
        args: |p| {
            [
                words("bench run --test BW_RD --samples 100 --threads 1 --out"),
                vec![p.into()],
            ]
            .concat()
        },
        holds: "run.json",
    },
    DirOption {
        name: "bench report --svg-dir",
        args: |p| {
            vec![
                "bench".into(),
                "report".into(),
                report_dir(),
                "--svg-dir".into(),
                p.into(),
            ]
        },
        holds: "bw_dma_off_rd_cold_host.svg",
    },
    DirOption {
        name: "snapshot -o",
        args: |p| vec!["snapshot".into(), "-o".into(), p.into()],
        holds: "proc/cpuinfo",
    },
    DirOption {
        name: "man --out-dir",
        args: |p| vec!["man".into(), "--out-dir".into(), p.into()],
        holds: "pcieperf.1",
    },
];

/// Runs pcieperf, giving up (and failing) after a minute: a FIFO opened by mistake would
/// otherwise wait for ever.
fn run(args: &[String]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let read_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).unwrap();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{args:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: read_out.join().unwrap(),
        stderr: read_err.join().unwrap(),
    }
}

/// A device node like `/dev/null` (1, 3) or `/dev/full` (1, 7) at `path`; false (with a message)
/// where this process may not make one.
fn mknod(path: &Path, minor: u32) -> bool {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, minor)) };
    if rc != 0 {
        eprintln!(
            "skipped the device cases: mknod {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    rc == 0
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn is_device(path: &Path, minor: u32) -> bool {
    let m = fs::symlink_metadata(path).unwrap();
    m.file_type().is_char_device() && m.rdev() == libc::makedev(1, minor)
}

fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).unwrap().file_type().is_symlink()
}

/// No temporary file left beside the outputs.
fn no_temporary(dir: &Path) {
    for e in fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "{name} left in {}", dir.display());
    }
}

fn text(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_output_file_option_against_every_kind_of_path() {
    for opt in FILE_OPTIONS {
        let d = scratch_dir(&format!("paths-{}", opt.name.replace(' ', "-")));
        let side = d.join("side");
        fs::create_dir(&side).unwrap();
        let go = |p: &Path| {
            let o = run(&(opt.args)(p.to_str().unwrap(), &side));
            (o.status.code(), stdout(&o), stderr(&o))
        };
        let written = |code: Option<i32>, err: &str, what: &str| {
            assert_eq!(code, Some(0), "{} {what}: {err}", opt.name);
        };

        // A new name, and an existing file: replaced by a new file renamed into place, with the
        // old file's permissions.
        let file = d.join("out");
        let (code, _, err) = go(&file);
        written(code, &err, "new file");
        assert!(text(&file).contains(opt.holds), "{}", opt.name);
        fs::write(&file, "old").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o640)).unwrap();
        let before = fs::metadata(&file).unwrap().ino();
        let (code, _, err) = go(&file);
        written(code, &err, "existing file");
        let after = fs::metadata(&file).unwrap();
        assert!(text(&file).contains(opt.holds), "{}", opt.name);
        assert_ne!(after.ino(), before, "{}: replaced by a rename", opt.name);
        assert_eq!(after.permissions().mode() & 0o7777, 0o640, "{}", opt.name);

        // Symlinks: to a file and to nothing are followed; the link stays a link.
        fs::write(d.join("target"), "old").unwrap();
        symlink("target", d.join("to-file")).unwrap();
        symlink("made", d.join("dangling")).unwrap();
        for (link, target) in [("to-file", "target"), ("dangling", "made")] {
            let (code, _, err) = go(&d.join(link));
            written(code, &err, link);
            assert!(is_link(&d.join(link)), "{}: {link} is no longer a link", opt.name);
            assert!(text(&d.join(target)).contains(opt.holds), "{} {link}", opt.name);
        }

        // A directory, or a link to one: refused before any work, nothing written in it.
        fs::create_dir(d.join("sub")).unwrap();
        symlink("sub", d.join("to-dir")).unwrap();
        for dir in ["sub", "to-dir"] {
            let (code, _, err) = go(&d.join(dir));
            assert_eq!(code, Some(2), "{} {dir}: {err}", opt.name);
            assert!(err.contains("is a directory"), "{} {dir}: {err}", opt.name);
            assert_eq!(fs::read_dir(d.join("sub")).unwrap().count(), 0);
        }

        // A FIFO: its reader gets the data; it stays a FIFO.
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut got = String::new();
                fs::File::open(fifo).unwrap().read_to_string(&mut got).unwrap();
                got
            })
        };
        let (code, _, err) = go(&fifo);
        written(code, &err, "FIFO");
        assert!(reader.join().unwrap().contains(opt.holds), "{}", opt.name);
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

        // `-`: standard output holds the file and nothing else.
        let (code, out, err) = go(Path::new("-"));
        written(code, &err, "-");
        assert!(out.starts_with(opt.holds), "{}: {out:.200}", opt.name);
        no_temporary(&d);
        no_temporary(&side);

        // Devices: like /dev/null, written in place; like /dev/full, a write error naming it.
        if mknod(&d.join("null"), 3) && mknod(&d.join("full"), 7) {
            let (code, _, err) = go(&d.join("null"));
            written(code, &err, "device");
            assert!(is_device(&d.join("null"), 3), "{}", opt.name);
            let full = d.join("full");
            let (code, out, err) = go(&full);
            assert_eq!(code, Some(1), "{} /dev/full: {err}", opt.name);
            assert!(
                err.contains(&format!("cannot write {}: No space left on device", full.display())),
                "{}: {err}",
                opt.name
            );
            assert!(
                !err.contains("recorded") && !out.contains("Wrote"),
                "{}: {err}{out}",
                opt.name
            );
            assert!(is_device(&full, 7), "{}", opt.name);
        }
        fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn every_output_directory_option_against_every_kind_of_path() {
    for opt in DIR_OPTIONS {
        let d = scratch_dir(&format!("dirs-{}", opt.name.replace(' ', "-")));
        let go = |p: &Path| {
            let o = run(&(opt.args)(p.to_str().unwrap()));
            (o.status.code(), stderr(&o))
        };

        // A new name and a symlink to an empty directory of ours: written in the directory
        // (the target), the link staying a link.
        fs::create_dir(d.join("sub")).unwrap();
        symlink("sub", d.join("to-dir")).unwrap();
        for (path, dir) in [("new", "new"), ("to-dir", "sub")] {
            let (code, err) = go(&d.join(path));
            assert_eq!(code, Some(0), "{} {path}: {err}", opt.name);
            assert!(d.join(dir).join(opt.holds).is_file(), "{} {path}", opt.name);
            no_temporary(&d.join(dir));
            if path != dir {
                assert!(is_link(&d.join(path)), "{}: {path}", opt.name);
            }
        }

        // A dangling symlink is refused, its target not created; a directory holding anything
        // (a user's CSV named like an output) is refused and left as it was.
        symlink("made", d.join("dangling")).unwrap();
        let (code, err) = go(&d.join("dangling"));
        assert_eq!(code, Some(2), "{} dangling: {err}", opt.name);
        assert!(err.contains("a dangling symlink"), "{}: {err}", opt.name);
        assert!(!d.join("made").exists() && is_link(&d.join("dangling")), "{}", opt.name);
        fs::create_dir(d.join("full")).unwrap();
        let planted = d.join("full").join(Path::new(opt.holds).file_name().unwrap());
        fs::write(&planted, "mine").unwrap();
        let (code, err) = go(&d.join("full"));
        assert_eq!(code, Some(2), "{} full: {err}", opt.name);
        assert!(err.contains("exists and is not empty"), "{}: {err}", opt.name);
        assert_eq!(text(&planted), "mine");
        assert_eq!(fs::read_dir(d.join("full")).unwrap().count(), 1, "{}", opt.name);

        // A file, a FIFO (no reader: opening it would hang), `-` and a device: refused before
        // any work, each left as it was.
        fs::write(d.join("file"), "old").unwrap();
        mkfifo(&d.join("fifo"));
        let mut refused: Vec<PathBuf> = vec![d.join("file"), d.join("fifo"), PathBuf::from("-")];
        if mknod(&d.join("null"), 3) {
            refused.push(d.join("null"));
        }
        for p in &refused {
            let (code, err) = go(p);
            assert_eq!(code, Some(2), "{} {}: {err}", opt.name, p.display());
            let expected = if p == Path::new("-") {
                "a directory cannot be standard output"
            } else {
                "is not a directory"
            };
            assert!(err.contains(expected), "{} {}: {err}", opt.name, p.display());
        }
        assert_eq!(text(&d.join("file")), "old");
        assert!(fs::metadata(d.join("fifo")).unwrap().file_type().is_fifo());
        if refused.len() == 4 {
            assert!(is_device(&d.join("null"), 3));
        }
        fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn an_unbounded_record_streams_to_stdout_and_ctrl_c_ends_it_whole() {
    // `pcieperf pmu record -o - | gzip`: rows arrive while the run goes on, and an interrupt
    // leaves whole rows and exit 0.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pcieperf"))
        .args(words("pmu record --source sim --fast -I 50 -o -"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(60);
    // Two intervals' rows (each a header-led CSV) before the run is stopped.
    while got.iter().filter(|&&b| b == b'\n').count() < 3 && Instant::now() < deadline {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "stdout closed while recording");
        got.extend_from_slice(&buf[..n]);
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    out.read_to_end(&mut got).unwrap();
    let status = child.wait_with_output().unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let text = String::from_utf8(got).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("time_s,unix_time,"), "{text}");
    assert!(text.ends_with('\n'), "{text}");
    assert!(lines[1..].iter().all(|l| l.split(',').count() == 14), "{text}");
    assert!(stderr(&status).contains("to standard output"), "{}", stderr(&status));
}

#[test]
fn a_file_on_stdout_sends_the_command_s_own_text_to_stderr() {
    let o = run(&words("model bw --sizes 64 --plot -"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.starts_with("<svg") && out.ends_with("</svg>\n"), "{out:.300}");
    assert!(err.contains("Size B"), "the table: {err}");

    // /dev/stdout is standard output too, not a file to replace.
    let o = run(&words("model bw --sizes 64 --plot /dev/stdout"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("<svg"), "{}", stdout(&o));

    let o = run(&words("pmu record --source sim -o - --svg -"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--svg -: -o already writes to standard output"),
        "{}",
        stderr(&o)
    );
}
