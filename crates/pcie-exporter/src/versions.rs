//! Which version of each file a web config was read from, so a running server notices a changed
//! web config, certificate or key with one `stat` per file instead of reading and parsing them
//! per request: a file replaced by a rename has a new inode, one rewritten in place a new size
//! or change time. Two writes within one tick of the file system's clock can leave the same
//! stamp, so a file read less than [`SETTLE`] after its last change is read once more when
//! that time has passed (as git re-reads a "racily clean" file).

use pcie_output::read::Limit;
use ring::digest::{Context, SHA256};
use std::fs::Metadata;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Longer than any file system's timestamp tick (FAT's is 2 s, ext4's and tmpfs's a few ms).
const SETTLE: Duration = Duration::from_secs(2);

/// A file's identity and version as `stat` tells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }

    /// `path`'s stamp now (links followed), `None` when it cannot be stat'ed. `stat` opens
    /// nothing, so a FIFO planted there is not waited on.
    fn now(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }
}

/// The files one load of a web config read, as they are read.
pub(crate) struct Reading {
    files: Vec<(PathBuf, Option<Stamp>)>,
    digest: Context,
    recheck_at: Option<SystemTime>,
}

impl Reading {
    pub(crate) fn new() -> Reading {
        Reading {
            files: Vec::new(),
            digest: Context::new(&SHA256),
            recheck_at: None,
        }
    }

    /// `path` whole through the bounded reader (at most `limit`; a FIFO or a device refused
    /// without waiting), remembering the version read: the stamp of the descriptor read, so a
    /// file replaced between the read and a later check reads as changed.
    pub(crate) fn read(&mut self, path: &Path, limit: Limit) -> io::Result<Vec<u8>> {
        let read = match pcie_output::read::open(path).and_then(|f| f.metadata().map(|m| (f, m))) {
            Ok((f, m)) => {
                self.files.push((path.to_path_buf(), Some(Stamp::of(&m))));
                if let Ok(changed) = m.modified() {
                    let settled = changed + SETTLE;
                    if settled > SystemTime::now() {
                        self.recheck_at = self.recheck_at.max(Some(settled));
                    }
                }
                pcie_output::read::read_stream(f, limit)
            }
            Err(e) => {
                // Not opened (missing, no permission, not a regular file): whatever it
                // becomes is a change.
                self.files.push((path.to_path_buf(), Stamp::now(path)));
                Err(e)
            }
        };
        let path_bytes = path.as_os_str().as_encoded_bytes();
        self.digest.update(&(path_bytes.len() as u64).to_le_bytes());
        self.digest.update(path_bytes);
        match &read {
            Ok(bytes) => {
                self.digest.update(&(bytes.len() as u64).to_le_bytes());
                self.digest.update(bytes);
            }
            Err(e) => self.digest.update(format!("unread: {e}").as_bytes()),
        }
        read
    }

    pub(crate) fn done(self) -> Versions {
        Versions {
            files: self.files,
            digest: self.digest.finish().as_ref().to_vec(),
            recheck_at: self.recheck_at,
        }
    }
}

/// The files a load read, the version of each, and a digest of what was read.
#[derive(Debug)]
pub(crate) struct Versions {
    files: Vec<(PathBuf, Option<Stamp>)>,
    digest: Vec<u8>,
    recheck_at: Option<SystemTime>,
}

impl Versions {
    /// Whether a file read has changed since (a `stat` each), or one read too soon after its
    /// last change is due to be read again.
    pub(crate) fn stale(&self) -> bool {
        self.recheck_at.is_some_and(|t| SystemTime::now() >= t)
            || self.files.iter().any(|(path, stamp)| Stamp::now(path) != *stamp)
    }

    /// Whether `other` read the same files with the same contents (a file touched or
    /// rewritten with what it held is no change).
    pub(crate) fn same_contents(&self, other: &Versions) -> bool {
        self.digest == other.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const LIMIT: Limit = Limit {
        bytes: 100,
        what: "a test file",
    };

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pcie-exporter-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// Write `text` to `path`, dated a minute ago (past the settling time).
    fn write_settled(path: &Path, text: &str) {
        fs::write(path, text).unwrap();
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
    }

    fn versions(paths: &[&Path]) -> Versions {
        let mut r = Reading::new();
        for p in paths {
            let _ = r.read(p, LIMIT);
        }
        r.done()
    }

    #[test]
    fn a_rewritten_replaced_or_created_file_is_a_change_and_a_touch_no_new_contents() {
        let d = scratch("versions");
        let (a, b) = (d.join("a"), d.join("b"));
        write_settled(&a, "one");
        let first = versions(&[&a, &b]);
        assert!(!first.stale(), "nothing changed: {first:?}");
        // b appears.
        write_settled(&b, "two");
        assert!(first.stale());
        let second = versions(&[&a, &b]);
        assert!(!second.stale() && !second.same_contents(&first));
        // Rewritten in place with other text of the same length, dated as before.
        let before = fs::metadata(&a).unwrap().modified().unwrap();
        fs::write(&a, "eno").unwrap();
        fs::File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(before)
            .unwrap();
        assert!(second.stale(), "the change time moved");
        // Replaced by a rename.
        let third = versions(&[&a, &b]);
        write_settled(&d.join("new"), "eno");
        fs::rename(d.join("new"), &a).unwrap();
        assert!(third.stale(), "a new inode");
        // Same contents read again: no change to act on.
        let fourth = versions(&[&a, &b]);
        assert!(fourth.same_contents(&third) && !fourth.same_contents(&second));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_file_read_just_after_a_change_is_read_again_once_settled() {
        let d = scratch("versions-racy");
        let a = d.join("a");
        fs::write(&a, "one").unwrap();
        let v = versions(&[&a]);
        let at = v.recheck_at.expect("changed moments ago");
        assert!(at > SystemTime::now() && at <= SystemTime::now() + SETTLE);
        assert!(Versions {
            recheck_at: Some(SystemTime::now()),
            ..v
        }
        .stale());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_fifo_is_refused_unread_and_watched() {
        let d = scratch("versions-fifo");
        let f = d.join("fifo");
        let c = std::ffi::CString::new(f.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut r = Reading::new();
        let e = r.read(&f, LIMIT).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let v = r.done();
        assert!(!v.stale());
        fs::remove_file(&f).unwrap();
        assert!(v.stale(), "gone is a change");
        fs::remove_dir_all(&d).unwrap();
    }
}
