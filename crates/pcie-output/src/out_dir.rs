//! A directory pcieperf fills (a snapshot, a bench run, man pages, SVG charts) cannot be turned
//! against its user: it is created by pcieperf, or, when it already exists, it must be empty and
//! the caller's own, so nothing pcieperf did not write is mixed in or replaced (a pcie-bench
//! result directory given as `--out`). The directory is then held open and every file and
//! subdirectory in it is made relative to its descriptor with `O_NOFOLLOW` and `O_EXCL`
//! (`mkdirat`, `openat`, `renameat`): a symlink planted inside it while a command runs is never
//! written through. A dangling symlink named as the directory is refused rather than followed to
//! create its target.

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, BufWriter, ErrorKind, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// An output directory held open.
#[derive(Debug)]
pub struct OutDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn c_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!("{name:?}: not a file name"),
        ));
    }
    CString::new(name).map_err(|_| io::Error::new(ErrorKind::InvalidInput, "a name with a NUL byte"))
}

fn fd_or_error(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the open directory `fd` has no entries.
fn is_empty(fd: BorrowedFd<'_>) -> io::Result<bool> {
    // fdopendir takes the descriptor it is given, so it gets a copy.
    let copy = fd.try_clone_to_owned()?;
    // SAFETY: `copy` is an open directory descriptor, handed over to the stream (closedir
    // closes it).
    let stream = unsafe { libc::fdopendir(copy.as_raw_fd()) };
    if stream.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(copy);
    let mut empty = true;
    loop {
        // SAFETY: `stream` is an open directory stream.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            break;
        }
        // SAFETY: readdir returns a valid entry whose name is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            empty = false;
            break;
        }
    }
    // SAFETY: `stream` is open and closed once.
    unsafe { libc::closedir(stream) };
    Ok(empty)
}

/// An existing directory, opened, accepted only when it is empty and ours.
fn existing(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(ErrorKind::InvalidInput, "a path with a NUL byte"))?;
    // SAFETY: `c` is a NUL-terminated path.
    let fd = fd_or_error(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) })
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound if fs::symlink_metadata(path).is_ok() => io::Error::new(
                ErrorKind::InvalidInput,
                "a dangling symlink: name a directory to create, not a link to one",
            ),
            ErrorKind::NotADirectory => io::Error::new(ErrorKind::NotADirectory, "is not a directory"),
            _ => e,
        })?;
    let meta = File::from(fd.try_clone()?).metadata()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(io::Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "exists and belongs to user {}, not to you (user {me}); name a new directory",
                meta.uid()
            ),
        ));
    }
    if !is_empty(fd.as_fd())? {
        return Err(io::Error::new(
            ErrorKind::AlreadyExists,
            "exists and is not empty: pcieperf fills only a directory it creates or an empty one; name a new directory",
        ));
    }
    Ok(fd)
}

/// Whether `path` can be an output directory: a name that does not exist yet (its parents may
/// be missing too), or an existing empty directory of the caller's. Checked before any work
/// starts; [`OutDir::create`] checks again as it opens.
pub fn check_dir(path: &Path) -> io::Result<()> {
    if path.as_os_str() == "-" {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            "a directory cannot be standard output",
        ));
    }
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => match path.parent().map(fs::metadata) {
            Some(Ok(m)) if !m.is_dir() => Err(io::Error::new(ErrorKind::NotADirectory, "is not a directory")),
            _ => Ok(()),
        },
        Err(e) => Err(e),
        Ok(_) => existing(path).map(|_| ()),
    }
}

impl OutDir {
    /// Creates `path` (and missing parents), or opens it when it exists, empty and the caller's
    /// ([`check_dir`]).
    pub fn create(path: &Path) -> io::Result<OutDir> {
        check_dir(path)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)?;
        }
        let fd = match fs::create_dir(path) {
            Ok(()) => existing(path)?,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => existing(path)?,
            Err(e) => return Err(e),
        };
        Ok(OutDir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Creates `path`, which must not exist (`mkdir` fails on any existing name, links
    /// included): `None` when the name is taken.
    pub fn create_new(path: &Path) -> io::Result<Option<OutDir>> {
        match fs::create_dir(path) {
            Ok(()) => existing(path).map(|fd| {
                Some(OutDir {
                    fd,
                    path: path.to_path_buf(),
                })
            }),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The directory's path, as named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The subdirectory `rel` (components separated by `/`), each made if missing; an existing
    /// component must be a real directory (a symlink is refused: `O_NOFOLLOW`).
    pub fn subdir(&self, rel: &str) -> io::Result<OutDir> {
        let mut fd = self.fd.try_clone()?;
        let mut path = self.path.clone();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            let c = c_name(part)?;
            // SAFETY: `fd` is an open directory, `c` a NUL-terminated name.
            if unsafe { libc::mkdirat(fd.as_raw_fd(), c.as_ptr(), 0o777) } < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: as above.
            fd = fd_or_error(unsafe { libc::openat(fd.as_raw_fd(), c.as_ptr(), flags) })?;
            path.push(part);
        }
        Ok(OutDir { fd, path })
    }

    /// The directory and name of `rel`'s file, its parents made ([`OutDir::subdir`]).
    fn parent_of<'a>(&self, rel: &'a str) -> io::Result<(Option<OutDir>, &'a str)> {
        Ok(match rel.rsplit_once('/') {
            Some((dir, name)) => (Some(self.subdir(dir)?), name),
            None => (None, rel),
        })
    }

    /// Writes the file `rel` (may hold `/`) whole: [`OutDir::replace`], written and finished.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        let (sub, name) = self.parent_of(rel)?;
        let dir = sub.as_ref().unwrap_or(self);
        let mut f = dir.replace(name)?;
        f.write_all(bytes)?;
        f.finish()
    }

    /// Writes the new file `rel` (may hold `/`) once: created under its own name with `O_EXCL`
    /// and `O_NOFOLLOW` (an existing name, a planted link included, is an error), not synced.
    /// For trees of many small files written once (a snapshot), where a temporary file and a
    /// sync per file would cost more than the copy.
    pub fn write_new(&self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        let (sub, name) = self.parent_of(rel)?;
        let dir = sub.as_ref().unwrap_or(self);
        let c = c_name(name)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `dir.fd` is an open directory, `c` a NUL-terminated name.
        let fd = fd_or_error(unsafe { libc::openat(dir.fd.as_raw_fd(), c.as_ptr(), flags, 0o666) })?;
        File::from(fd).write_all(bytes)
    }

    /// A file `name` written piece by piece: into a new temporary file made with `O_EXCL` and
    /// `O_NOFOLLOW` (under the first free name: a planted one is skipped), renamed over `name` at
    /// [`DirFile::finish`] (`renameat` replaces whatever `name` is, a planted link included,
    /// without following it); dropped unfinished, the temporary file is removed.
    pub fn replace(&self, name: &str) -> io::Result<DirFile<'_>> {
        let target = c_name(name)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let (tmp, fd) = crate::replace::create_first(name, |tmp| {
            let tmp = c_name(tmp)?;
            // SAFETY: `self.fd` is an open directory, `tmp` a NUL-terminated name.
            let fd = fd_or_error(unsafe { libc::openat(self.fd.as_raw_fd(), tmp.as_ptr(), flags, 0o666) })?;
            Ok((tmp, fd))
        })?;
        Ok(DirFile {
            dir: self,
            out: Some(BufWriter::new(File::from(fd))),
            tmp,
            target,
        })
    }

    /// A symbolic link `rel` (may hold `/`; parents made) to `target`, as sysfs has its bus
    /// entries (`symlinkat` makes the link itself and follows nothing).
    pub fn symlink(&self, rel: &str, target: &str) -> io::Result<()> {
        let (sub, name) = self.parent_of(rel)?;
        let dir = sub.as_ref().unwrap_or(self);
        let (c, t) = (
            c_name(name)?,
            CString::new(target).map_err(|_| io::Error::from(ErrorKind::InvalidInput))?,
        );
        // SAFETY: `dir.fd` is an open directory; both strings NUL-terminated.
        if unsafe { libc::symlinkat(t.as_ptr(), dir.fd.as_raw_fd(), c.as_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// A file this directory holds, opened for reading without following a link.
    pub fn open(&self, name: &str) -> io::Result<File> {
        let c = c_name(name)?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY: `self.fd` is an open directory, `c` a NUL-terminated name.
        Ok(File::from(fd_or_error(unsafe {
            libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags)
        })?))
    }
}

/// A file of an [`OutDir`] being written; see [`OutDir::replace`].
pub struct DirFile<'a> {
    dir: &'a OutDir,
    out: Option<BufWriter<File>>,
    tmp: CString,
    target: CString,
}

impl DirFile<'_> {
    /// Flushes and syncs the file and renames it into place.
    pub fn finish(mut self) -> io::Result<()> {
        let out = self.out.take().expect("finished once");
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let dir = self.dir.fd.as_raw_fd();
        // SAFETY: `dir` is an open directory and both names NUL-terminated.
        if unsafe { libc::renameat(dir, self.tmp.as_ptr(), dir, self.target.as_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Write for DirFile<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.as_mut().expect("not finished").write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().expect("not finished").flush()
    }
}

impl Drop for DirFile<'_> {
    fn drop(&mut self) {
        if self.out.is_some() {
            // SAFETY: `dir` is an open directory and `tmp` NUL-terminated.
            unsafe { libc::unlinkat(self.dir.fd.as_raw_fd(), self.tmp.as_ptr(), 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::scratch;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_dangling_link_a_full_or_foreign_directory_is_refused_untouched() {
        let d = scratch("outdir-refused");
        symlink(d.join("made"), d.join("dangling")).unwrap();
        let e = OutDir::create(&d.join("dangling")).unwrap_err();
        assert!(e.to_string().contains("dangling symlink"), "{e}");
        assert!(!d.join("made").exists(), "the link's target was not created");

        fs::create_dir(d.join("full")).unwrap();
        fs::write(d.join("full/lat_dma_sizes.csv"), "measured\n").unwrap();
        let e = check_dir(&d.join("full")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
        assert!(OutDir::create(&d.join("full")).is_err());
        assert_eq!(
            fs::read_to_string(d.join("full/lat_dma_sizes.csv")).unwrap(),
            "measured\n"
        );

        fs::write(d.join("file"), "x").unwrap();
        assert_eq!(
            check_dir(&d.join("file")).unwrap_err().to_string(),
            "is not a directory"
        );
        assert_eq!(
            check_dir(&d.join("file/sub")).unwrap_err().kind(),
            ErrorKind::NotADirectory
        );
        assert!(check_dir(Path::new("-")).is_err());
        if unsafe { libc::geteuid() } != 0 {
            // /usr is root's: empty or not, a directory of another user is refused.
            assert!(check_dir(Path::new("/usr")).is_err());
        }
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn files_are_made_inside_and_planted_links_are_not_followed() {
        let d = scratch("outdir-files");
        let out = OutDir::create(&d.join("a/b/run")).unwrap();
        out.write("run.json", b"{}\n").unwrap();
        out.write("sys/bus/pci/x", b"1\n").unwrap();
        out.symlink("sys/bus/link", "pci/x").unwrap();
        assert_eq!(fs::read_to_string(d.join("a/b/run/sys/bus/link")).unwrap(), "1\n");
        assert_eq!(fs::read_to_string(d.join("a/b/run/sys/bus/pci/x")).unwrap(), "1\n");
        // A link planted for a subdirectory and one for a file.
        fs::create_dir(d.join("elsewhere")).unwrap();
        symlink(d.join("elsewhere"), d.join("a/b/run/proc")).unwrap();
        assert!(out.write("proc/cpuinfo", b"cpu\n").is_err());
        symlink(d.join("elsewhere/victim"), d.join("a/b/run/planted")).unwrap();
        assert_eq!(
            out.write_new("planted", b"x").unwrap_err().kind(),
            ErrorKind::AlreadyExists
        );
        out.write_new("sys/new", b"once").unwrap();
        assert_eq!(
            out.write_new("sys/new", b"twice").unwrap_err().kind(),
            ErrorKind::AlreadyExists
        );
        fs::remove_file(d.join("a/b/run/planted")).unwrap();
        symlink(d.join("elsewhere/victim"), d.join("a/b/run/lat.csv")).unwrap();
        out.write("lat.csv", b"ours\n").unwrap();
        assert!(!d.join("elsewhere/victim").exists(), "no write through the link");
        assert_eq!(fs::read_dir(d.join("elsewhere")).unwrap().count(), 0);
        let mut back = String::new();
        out.open("lat.csv").unwrap().read_to_string(&mut back).unwrap();
        assert_eq!(back, "ours\n");
        // Unfinished: nothing left behind.
        let mut f = out.replace("half.csv").unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        let names: Vec<_> = fs::read_dir(d.join("a/b/run"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        // An empty existing directory of ours is taken; the same name is no new one.
        fs::create_dir(d.join("empty")).unwrap();
        OutDir::create(&d.join("empty")).unwrap();
        assert!(OutDir::create_new(&d.join("empty")).unwrap().is_none());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn planted_temporary_names_are_skipped_and_two_writers_of_one_name_each_get_their_own() {
        let d = scratch("outdir-temporaries");
        let out = OutDir::create(&d.join("run")).unwrap();
        fs::create_dir(d.join("elsewhere")).unwrap();
        // Someone who can write the directory plants links at the next temporary names this
        // process will try.
        let pid = std::process::id();
        let next = crate::replace::peek_next();
        for n in next..next + 64 {
            symlink(d.join("elsewhere/victim"), d.join(format!("run/.a.csv.{pid}-{n}.tmp"))).unwrap();
        }
        let mut first = out.replace("a.csv").unwrap();
        let mut second = out.replace("a.csv").unwrap();
        first.write_all(b"first\n").unwrap();
        second.write_all(b"second\n").unwrap();
        first.finish().unwrap();
        assert_eq!(fs::read_to_string(d.join("run/a.csv")).unwrap(), "first\n");
        second.finish().unwrap();
        assert_eq!(fs::read_to_string(d.join("run/a.csv")).unwrap(), "second\n");
        assert_eq!(
            fs::read_dir(d.join("elsewhere")).unwrap().count(),
            0,
            "no write through a link"
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
