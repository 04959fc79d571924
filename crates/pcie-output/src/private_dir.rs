//! A private temporary directory (fio's report, a single test's scratch run directory, a
//! simulated host's sysfs tree): a fixed or guessable name under a shared `/tmp` lets another
//! user plant a directory or symlink there first and have our files written through it, or
//! refuse us the name. This one has a random name, is created by `mkdir` (which fails on an
//! existing name, symlinks included) with mode 0700, and is removed with its contents on drop.

use std::fs::DirBuilder;
use std::hash::{BuildHasher, RandomState};
use std::io;
#[cfg(unix)]
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Names tried before giving up: each is taken only if someone else made it first.
const TRIES: u32 = 100;

#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// A new empty directory `PREFIX-<random>` in the temporary directory (`TMPDIR`, else `/tmp`).
    pub fn new(prefix: &str) -> io::Result<PrivateDir> {
        PrivateDir::new_in(&std::env::temp_dir(), prefix)
    }

    /// A new empty directory `PREFIX-<random>` in `base`.
    pub fn new_in(base: &Path, prefix: &str) -> io::Result<PrivateDir> {
        let mut builder = DirBuilder::new();
        #[cfg(unix)]
        builder.mode(0o700);
        for n in 0..TRIES {
            // RandomState's keys come from the OS's random source, once per process and thread.
            let random = RandomState::new().hash_one((std::process::id(), n, SystemTime::now()));
            let path = base.join(format!("{prefix}-{random:016x}"));
            match builder.create(&path) {
                Ok(()) => return Ok(PrivateDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{}: {TRIES} names under it were taken", base.display()),
        ))
    }

    /// A new directory `PREFIX-<random>` for a tree of many small files, in the first of
    /// [`tree_bases`] that takes it.
    pub fn for_tree(prefix: &str) -> io::Result<PrivateDir> {
        let mut last = None;
        for base in tree_bases() {
            match PrivateDir::new_in(&base, prefix) {
                Ok(d) => return Ok(d),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("the temporary directory is always tried"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Where a tree of many small files goes, best first: memory-backed `/dev/shm` when it exists
/// and `TMPDIR` is not set (creating 100,000 files there takes a fraction of the time a disk
/// does), then the temporary directory.
pub fn tree_bases() -> Vec<PathBuf> {
    let shm = Path::new("/dev/shm");
    let mut bases = vec![std::env::temp_dir()];
    if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
        bases.insert(0, shm.to_path_buf());
    }
    bases
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn new_directories_are_private_distinct_and_removed_with_their_contents() {
        let (a, b) = (
            PrivateDir::new("pcie-output-test").unwrap(),
            PrivateDir::new("pcie-output-test").unwrap(),
        );
        assert_ne!(a.path(), b.path());
        for d in [&a, &b] {
            assert_eq!(d.path().parent(), Some(std::env::temp_dir().as_path()));
            let meta = std::fs::symlink_metadata(d.path()).unwrap();
            assert!(meta.is_dir());
            assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{}", d.path().display());
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        }
        let path = a.path().to_path_buf();
        std::fs::create_dir(path.join("sub")).unwrap();
        std::fs::write(path.join("sub/report.json"), "{}").unwrap();
        drop(a);
        assert!(!path.exists());
        assert!(b.path().is_dir());
    }
}
