//! What an output path names, decided before anything is written (and before any work starts,
//! through [`crate::check_file`]): standard output, something written in place (a device, a
//! FIFO, a socket, a descriptor's path), or a regular file, existing or new, at the end of its
//! symlinks.

use std::fs::{self, Metadata};
use std::io::{self, ErrorKind};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Symlinks followed before giving up (Linux's own limit, `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

#[derive(Debug)]
pub(crate) enum Target {
    Stdout,
    Stderr,
    /// Written directly, no temporary file: a character or block device, a FIFO, or the path of
    /// an open descriptor (`/dev/fd/N`, `/proc/self/fd/N`), which `append` keeps from
    /// overwriting what a regular file behind it already holds.
    InPlace {
        path: PathBuf,
        append: bool,
    },
    /// A Unix socket: connected to, and written as a stream.
    Socket(PathBuf),
    /// A regular file or a new name (`path` is the end of any symlinks), replaced atomically;
    /// `existing` is the file being replaced, whose permissions the new one keeps.
    Regular {
        path: PathBuf,
        existing: Option<Metadata>,
    },
}

/// Sorts `path` into one of the kinds above, or refuses it: a directory, a name in a directory
/// that does not exist, a path ending in `/`.
pub(crate) fn classify(path: &Path) -> io::Result<Target> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(io::Error::new(ErrorKind::IsADirectory, "names a directory (ends in /)"));
    }
    let end = resolve(path)?;
    match descriptor(&end) {
        Some(1) => return Ok(Target::Stdout),
        Some(2) => return Ok(Target::Stderr),
        _ => {}
    }
    match fs::metadata(&end) {
        Ok(m) if m.is_dir() => Err(io::Error::new(ErrorKind::IsADirectory, "is a directory")),
        Ok(m) if m.is_file() && descriptor(&end).is_none() => Ok(Target::Regular {
            path: end,
            existing: Some(m),
        }),
        Ok(m) if m.file_type().is_socket() => Ok(Target::Socket(end)),
        Ok(m) => Ok(Target::InPlace {
            append: m.is_file(),
            path: end,
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let dir = parent(&end);
            if !dir.is_dir() {
                let msg = format!("directory {} does not exist", dir.display());
                return Err(io::Error::new(ErrorKind::NotFound, msg));
            }
            Ok(Target::Regular {
                path: end,
                existing: None,
            })
        }
        Err(e) => Err(e),
    }
}

/// `path` with the symlinks of its last component followed (a dangling one to the name it
/// points at), stopping at a descriptor's path, whose link the kernel resolves itself (a
/// pipe's reads `pipe:[1234]`).
pub(crate) fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if descriptor(&p).is_some() {
            return Ok(p);
        }
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&p)?;
                p = parent(&p).join(to);
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The directory holding `path` (`.` for a bare name).
pub(crate) fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The descriptor number a path names: `/dev/stdout` (1), `/dev/stderr` (2), `/dev/stdin` (0),
/// `/dev/fd/N`, `/proc/self/fd/N`.
fn descriptor(path: &Path) -> Option<u32> {
    let s = path.to_str()?;
    match s {
        "/dev/stdin" => Some(0),
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        _ => s
            .strip_prefix("/dev/fd/")
            .or_else(|| s.strip_prefix("/proc/self/fd/"))?
            .parse()
            .ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::scratch;
    use std::os::unix::fs::symlink;

    #[test]
    fn kinds_of_path() {
        let d = scratch("classify");
        let file = d.join("f");
        fs::write(&file, "x").unwrap();
        symlink("f", d.join("to-file")).unwrap();
        symlink("sub/new", d.join("dangling")).unwrap();
        fs::create_dir(d.join("sub")).unwrap();
        symlink("sub", d.join("to-dir")).unwrap();
        symlink("loop", d.join("loop")).unwrap();

        assert!(matches!(classify(Path::new("-")).unwrap(), Target::Stdout));
        assert!(matches!(classify(Path::new("/dev/stdout")).unwrap(), Target::Stdout));
        assert!(matches!(
            classify(Path::new("/proc/self/fd/2")).unwrap(),
            Target::Stderr
        ));
        assert!(matches!(
            classify(Path::new("/dev/null")).unwrap(),
            Target::InPlace { append: false, .. }
        ));
        let regular = |p: &Path| match classify(p).unwrap() {
            Target::Regular { path, existing } => (path, existing.is_some()),
            t => panic!("{}: {t:?}", p.display()),
        };
        assert_eq!(regular(&file), (file.clone(), true));
        assert_eq!(regular(&d.join("to-file")), (d.join("f"), true));
        assert_eq!(regular(&d.join("dangling")), (d.join("sub/new"), false));
        assert_eq!(regular(&d.join("new")), (d.join("new"), false));

        let refused = |p: PathBuf| classify(&p).unwrap_err().to_string();
        assert_eq!(refused(d.join("sub")), "is a directory");
        assert_eq!(refused(d.join("to-dir")), "is a directory");
        assert_eq!(refused(d.join("sub/")), "names a directory (ends in /)");
        let missing = d.join("no/such");
        assert_eq!(
            refused(missing.join("f")),
            format!("directory {} does not exist", missing.display())
        );
        assert_eq!(refused(d.join("loop")), "too many levels of symbolic links");
        fs::remove_dir_all(&d).unwrap();
    }
}
