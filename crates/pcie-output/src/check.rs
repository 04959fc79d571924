//! Checks made before any work starts, so a command that cannot write its output says so at once
//! (the CLI's exit 2), and the output directories that commands create.

use crate::target::{classify, resolve};
use std::fs;
use std::io::{self, ErrorKind};
use std::path::Path;

/// Whether [`crate::Output::create`] would accept `path` as a file: not a directory, in a
/// directory that exists. Opens nothing (a FIFO's reader is not waited for).
pub fn check_file(path: &Path) -> io::Result<()> {
    classify(path).map(|_| ())
}

/// Whether `path` can be an output directory: one that exists, or a name that can be created
/// (a dangling symlink's target included). A file, a device or `-` is refused.
pub fn check_dir(path: &Path) -> io::Result<()> {
    if path.as_os_str() == "-" {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            "a directory cannot be standard output",
        ));
    }
    match fs::metadata(resolve(path)?) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::new(ErrorKind::NotADirectory, "is not a directory")),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates the directory `path` and its parents if missing (through a dangling symlink: at its
/// target, the link staying a link), after [`check_dir`].
pub fn create_dir(path: &Path) -> io::Result<()> {
    check_dir(path)?;
    fs::create_dir_all(resolve(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::scratch;
    use std::os::unix::fs::symlink;

    #[test]
    fn directories_are_created_through_links_and_files_refused() {
        let d = scratch("dirs");
        symlink("made/here", d.join("dangling")).unwrap();
        create_dir(&d.join("dangling")).unwrap();
        assert!(d.join("made/here").is_dir());
        assert!(fs::symlink_metadata(d.join("dangling"))
            .unwrap()
            .file_type()
            .is_symlink());
        create_dir(&d.join("dangling")).unwrap();
        create_dir(&d.join("a/b")).unwrap();
        assert!(d.join("a/b").is_dir());

        fs::write(d.join("f"), "x").unwrap();
        let refused = |p: &Path| check_dir(p).unwrap_err().to_string();
        assert_eq!(refused(&d.join("f")), "is not a directory");
        assert_eq!(refused(Path::new("/dev/null")), "is not a directory");
        assert_eq!(refused(Path::new("-")), "a directory cannot be standard output");
        assert!(create_dir(&d.join("f")).is_err());
        assert_eq!(fs::read_to_string(d.join("f")).unwrap(), "x");
        assert_eq!(
            check_dir(&d.join("f/sub")).unwrap_err().kind(),
            ErrorKind::NotADirectory
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
