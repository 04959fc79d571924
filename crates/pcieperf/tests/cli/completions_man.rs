//! `pcieperf completions`, `pcieperf man` and `pcieperf --version`: what shells, `man` and
//! packagers get, checked with the real tools where the host has them.

use crate::common;

use common::{ok, refused};
use std::io::Write;
use std::process::{Command, Stdio};

const TOP_LEVEL: [&str; 6] = ["model", "bench", "pmu", "sim", "completions", "man"];

/// True where `program` runs on this host; otherwise says the check is skipped.
fn have(program: &str, what: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        eprintln!("skipped: {program} is not installed, so {what} is not checked");
    }
    found
}

/// Runs `program args` with `input` on stdin; its exit code, stdout and stderr.
fn feed(program: &str, args: &[&str], input: &str) -> (Option<i32>, String, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

/// Checks `script` with `shell -n` (parse only) through a file, as the shell would source it.
fn syntax_ok(shell: &str, script: &str) {
    let dir = std::env::temp_dir().join(format!("pcieperf-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("pcieperf.{shell}"));
    std::fs::write(&path, script).unwrap();
    let out = Command::new(shell).arg("-n").arg(&path).output().expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{shell} -n rejects the script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn each_completion_script_offers_every_command_and_their_options() {
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(&["completions", shell]);
        for word in TOP_LEVEL {
            assert!(script.contains(word), "{shell} script lacks the command {word}");
        }
        // Options of nested commands and the values clap knows for them.
        for long in ["backend", "suite", "sysfs", "format"] {
            // fish declares long options as `-l NAME`, bash and zsh spell them `--NAME`.
            let word = if shell == "fish" {
                format!("-l {long}")
            } else {
                format!("--{long}")
            };
            assert!(script.contains(&word), "{shell} script lacks {word}");
        }
        assert!(script.contains("validate"), "{shell} script lacks pmu validate");
        // Each script registers itself for the binary's name in that shell's own way.
        let registration = match shell {
            "bash" => "complete -F _pcieperf",
            "zsh" => "#compdef pcieperf",
            _ => "complete -c pcieperf",
        };
        assert!(script.contains(registration), "{shell} script lacks `{registration}`");
    }
}

#[test]
fn bash_accepts_the_bash_script() {
    if have("bash", "the bash script's syntax") {
        syntax_ok("bash", &ok(&["completions", "bash"]));
    }
}

#[test]
fn zsh_and_fish_accept_their_scripts() {
    for shell in ["zsh", "fish"] {
        if have(shell, &format!("the {shell} script's syntax")) {
            syntax_ok(shell, &ok(&["completions", shell]));
        }
    }
}

#[test]
fn bash_completes_the_commands_from_the_script() {
    if !have("bash", "completion in bash") {
        return;
    }
    // Load the script and ask it what follows `pcieperf bench run --format `.
    let script = ok(&["completions", "bash"]);
    let probe = r#"
COMP_WORDS=(pcieperf b); COMP_CWORD=1; _pcieperf pcieperf b pcieperf; echo "top: ${COMPREPLY[*]}"
COMP_WORDS=(pcieperf bench run --format ""); COMP_CWORD=4
_pcieperf pcieperf "" --format; echo "format: ${COMPREPLY[*]}"
"#;
    let (code, out, err) = feed("bash", &["-s"], &format!("{script}\n{probe}"));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("top: bench"), "{out}");
    let formats = out.lines().find(|l| l.starts_with("format:")).unwrap();
    for f in ["table", "csv", "json"] {
        assert!(formats.contains(f), "{formats}");
    }
}

#[test]
fn a_shell_that_is_not_offered_is_refused_naming_the_allowed_ones() {
    let err = refused(&["completions", "bsh"]);
    assert!(err.contains("bsh"), "{err}");
    for shell in ["bash", "zsh", "fish"] {
        assert!(err.contains(shell), "{err}");
    }
}

#[test]
fn the_man_page_is_roff_and_names_every_command_page() {
    let page = ok(&["man"]);
    assert!(page.contains(".TH pcieperf 1"), "{page}");
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH OPTIONS",
        ".SH SUBCOMMANDS",
        ".SH VERSION",
    ] {
        assert!(page.contains(section), "lacks {section}");
    }
    for cmd in TOP_LEVEL {
        // git-style: pcieperf-bench(1), roff-escaped hyphen.
        assert!(
            page.contains(&format!("pcieperf\\-{cmd}(1)")),
            "lacks pcieperf-{cmd}(1)"
        );
    }
    assert!(!page.contains("pcieperf\\-help"), "the help command has no page");
}

#[test]
fn each_command_has_its_own_page_by_words_or_by_page_name() {
    let page = ok(&["man", "bench", "run"]);
    assert!(page.contains(".TH pcieperf-bench-run 1"), "{page}");
    assert!(page.contains("\\-\\-backend"), "the page documents --backend");
    assert!(
        page.contains("\\fBpcieperf bench run\\fR"),
        "synopsis names the full command"
    );
    assert_eq!(ok(&["man", "bench-run"]), page);
    assert_eq!(ok(&["man", "pcieperf-bench-run"]), page);

    let pmu = ok(&["man", "pmu"]);
    for sub in ["list", "stat", "top", "record", "serve", "validate"] {
        assert!(
            pmu.contains(&format!("pcieperf\\-pmu\\-{sub}(1)")),
            "pmu page lacks {sub}"
        );
    }
}

#[test]
fn a_command_without_a_page_is_refused_naming_the_pages() {
    let err = refused(&["man", "bench", "runn"]);
    assert!(err.contains("man bench runn"), "{err}");
    for page in ["bench run", "pmu validate", "model bw", "completions"] {
        assert!(err.contains(page), "{err}");
    }
}

#[test]
fn out_dir_writes_every_page_as_a_file() {
    // A directory that does not exist yet is created, parents included.
    let dir = std::env::temp_dir()
        .join(format!("pcieperf-man-{}", std::process::id()))
        .join("man1");
    let listed = ok(&["man", "--out-dir", dir.to_str().unwrap()]);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for name in [
        "pcieperf.1",
        "pcieperf-bench-run.1",
        "pcieperf-pmu-validate.1",
        "pcieperf-man.1",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    assert_eq!(
        listed.lines().count(),
        names.len(),
        "prints each path written: {listed}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("pcieperf-bench-run.1")).unwrap(),
        ok(&["man", "bench", "run"])
    );
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn man_renders_the_pages() {
    if !have("man", "rendering by man -l") {
        return;
    }
    for args in [&["man"][..], &["man", "bench", "run"][..]] {
        let (code, out, err) = feed("man", &["-l", "-"], &ok(args));
        assert_eq!(code, Some(0), "man -l {args:?}: {err}");
        assert!(out.contains("SYNOPSIS"), "{out}");
        assert!(!err.contains("warning"), "man -l {args:?} warns: {err}");
    }
}

#[test]
fn version_names_the_release_and_the_git_revision() {
    for flag in ["--version", "-V"] {
        let v = ok(&[flag]);
        let line = v.trim_end();
        let rest = line.strip_prefix("pcieperf ").unwrap_or_else(|| panic!("{line}"));
        let (semver, git) = rest.split_once(" (git ").unwrap_or_else(|| panic!("{line}"));
        assert_eq!(semver, env!("CARGO_PKG_VERSION"), "{line}");
        let parts: Vec<&str> = semver.split('.').collect();
        assert!(
            parts.len() == 3 && parts.iter().all(|p| p.parse::<u64>().is_ok()),
            "{line}"
        );
        let rev = git.strip_suffix(')').unwrap_or_else(|| panic!("{line}"));
        let hex = rev.len() >= 4 && rev.bytes().all(|b| b.is_ascii_hexdigit());
        assert!(hex || rev == "unknown", "{line}");
    }
}
