//! Regular files appear complete or not at all: written to a hidden temporary file in the same
//! directory, synced, then renamed over the target, so a reader sees the old file or the new
//! one, never half of one. A replacement dropped before [`Replacement::commit`] removes its
//! temporary file and leaves the old file as it was.

use crate::target::parent;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, BufWriter, ErrorKind};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Numbers this process's temporary files, so two writers of one name never share one.
static NEXT: AtomicU32 = AtomicU32::new(0);

#[derive(Debug)]
pub(crate) struct Replacement {
    target: PathBuf,
    tmp: PathBuf,
    /// `None` once committed.
    file: Option<BufWriter<File>>,
}

impl Replacement {
    /// A temporary file beside `target` (the end of its symlinks), with the permissions and,
    /// where this process may set it, the owner of `existing`, the file it will replace.
    pub(crate) fn start(target: PathBuf, existing: Option<&Metadata>) -> io::Result<Replacement> {
        let (tmp, file) = create_temporary(&target)?;
        let r = Replacement {
            target,
            tmp,
            file: Some(BufWriter::new(file)),
        };
        if let Some(old) = existing {
            let file = r.file.as_ref().expect("not committed").get_ref();
            file.set_permissions(old.permissions())?;
            let new = file.metadata()?;
            if (new.uid(), new.gid()) != (old.uid(), old.gid()) {
                // Only root may give a file away: others get a file of their own, as any editor's
                // save does, rather than no file.
                let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
            }
        }
        Ok(r)
    }

    /// Syncs the temporary file, renames it over the target and syncs the directory, so the new
    /// contents survive a crash once this returns.
    pub(crate) fn commit(mut self) -> io::Result<()> {
        let w = self.file.take().expect("a replacement is committed once");
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&self.tmp, &self.target)?;
        File::open(parent(&self.target))?.sync_all()
    }

    pub(crate) fn writer(&mut self) -> &mut BufWriter<File> {
        self.file.as_mut().expect("writes stop at commit")
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// `dir/.name.PID-N.tmp`, created new (never an existing file, nor one another process made
/// there): hidden, and not a `.csv` or `.json` that a reader of the directory would pick up.
fn create_temporary(target: &Path) -> io::Result<(PathBuf, File)> {
    let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let dir = parent(target);
    create_first(&name, |tmp| {
        let tmp = dir.join(tmp);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map(|f| (tmp, f))
    })
}

/// The number the next temporary name will carry, for tests that plant names ahead of it.
#[cfg(test)]
pub(crate) fn peek_next() -> u32 {
    NEXT.load(Ordering::Relaxed)
}

/// How many names [`create_first`] tries before giving up.
const TRIES: u32 = 1000;

/// Creates a temporary file beside `name` with `create`, exclusive, under the first free name of
/// `.name.PID-N.tmp`, N from this process's counter: two writers of one name never share one,
/// and a name already taken (another process's, or one planted in a directory others may write)
/// is skipped for the next rather than failing the write. After [`TRIES`] taken names it fails,
/// saying so.
pub(crate) fn create_first<T>(name: &str, mut create: impl FnMut(&str) -> io::Result<T>) -> io::Result<T> {
    for _ in 0..TRIES {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        match create(&format!(".{name}.{}-{n}.tmp", std::process::id())) {
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            other => return other,
        }
    }
    Err(io::Error::new(
        ErrorKind::AlreadyExists,
        format!("no free temporary name beside {name}: {TRIES} names .{name}.PID-N.tmp taken"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::scratch;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_whole_file_keeping_its_permissions_and_leaves_no_temporary() {
        let d = scratch("replace");
        let f = d.join("a.csv");
        fs::write(&f, "old\n").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        let old = fs::metadata(&f).unwrap();
        let mut r = Replacement::start(f.clone(), Some(&old)).unwrap();
        r.writer().write_all(b"new\n").unwrap();
        assert_eq!(
            fs::read_to_string(&f).unwrap(),
            "old\n",
            "nothing shows before the commit"
        );
        r.commit().unwrap();
        let new = fs::metadata(&f).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new\n");
        assert_eq!(new.permissions().mode() & 0o7777, 0o640);
        assert_ne!(new.ino(), old.ino(), "a new file renamed into place");
        assert_eq!(names(&d), ["a.csv"]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn dropped_before_commit_keeps_the_old_file() {
        let d = scratch("drop");
        let f = d.join("a.csv");
        fs::write(&f, "complete\n").unwrap();
        let mut r = Replacement::start(f.clone(), None).unwrap();
        r.writer().write_all(b"half").unwrap();
        r.writer().flush().unwrap();
        assert_eq!(names(&d).len(), 2, "the temporary file exists while writing");
        drop(r);
        assert_eq!(fs::read_to_string(&f).unwrap(), "complete\n");
        assert_eq!(names(&d), ["a.csv"]);
        fs::remove_dir_all(&d).unwrap();
    }
}
