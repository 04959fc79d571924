//! Gives `pcieperf --version` the git revision it was built from: `pcieperf 0.1.0 (git abc1234)`.
//!
//! The revision comes from `git rev-parse --short HEAD` when the package sits in a git checkout
//! that tracks it; a source tarball, a crates.io download or a host without git gives `unknown`.
//! Packagers building from a tarball can name the revision with `PCIEPERF_GIT_REV`.
//!
//! The script reruns only when HEAD moves (a commit, a checkout): it watches the checkout's HEAD
//! file and the branch ref HEAD points to (or `packed-refs` when the ref is packed), never the
//! whole source tree, so an edit to a source file does not rerun it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PCIEPERF_GIT_REV");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));

    let rev = match std::env::var("PCIEPERF_GIT_REV") {
        Ok(rev) if !rev.trim().is_empty() => rev.trim().to_owned(),
        _ => git_revision(&dir).unwrap_or_else(|| "unknown".to_owned()),
    };
    let version = std::env::var("CARGO_PKG_VERSION").expect("set by cargo");
    println!("cargo:rustc-env=PCIEPERF_VERSION={version} (git {rev})");
}

/// The short revision of HEAD, or None outside a git checkout of this package; registers the
/// files whose change means HEAD moved.
fn git_revision(dir: &Path) -> Option<String> {
    // A package unpacked inside some unrelated repository (a tarball in a home directory under
    // git) must not report that repository's revision: the manifest has to be tracked.
    git(dir, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    watch(dir);
    let rev = git(dir, &["rev-parse", "--short", "HEAD"])?;
    let hex = !rev.is_empty() && rev.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then_some(rev)
}

/// Reruns the script when HEAD or the ref it points to changes. Only files that exist are
/// named: cargo reruns a script on every build while a watched path is missing.
fn watch(dir: &Path) {
    let Some(head) = git(dir, &["rev-parse", "--git-path", "HEAD"]) else {
        return;
    };
    rerun_if_exists(dir, &head);
    // Detached HEAD: the HEAD file holds the revision itself, nothing more to watch.
    let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) else {
        return;
    };
    if let Some(loose) = git(dir, &["rev-parse", "--git-path", &branch]) {
        if rerun_if_exists(dir, &loose) {
            return;
        }
    }
    if let Some(packed) = git(dir, &["rev-parse", "--git-path", "packed-refs"]) {
        rerun_if_exists(dir, &packed);
    }
}

fn rerun_if_exists(dir: &Path, path: &str) -> bool {
    let path = dir.join(path); // git prints paths relative to `dir` inside a plain checkout
    let exists = path.is_file();
    if exists {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    exists
}

/// Runs git in `dir`; its trimmed stdout, or None when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_owned())
}
