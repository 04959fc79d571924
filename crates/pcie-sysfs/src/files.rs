//! Reading sysfs files the way the kernel writes them: one value per file ending in a newline,
//! hexadecimal ids with `0x`, directories listed in a stable order. Shared by this crate's
//! readers and by other sysfs readers (pcie-pmu's PMU directories).

use crate::error::SysfsError;
use pcie_output::read::{self, Limit};
use std::ffi::{CString, OsStr};
use std::fs;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn io_error(path: &Path, e: io::Error) -> SysfsError {
    SysfsError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Sorted entry names of a directory; a missing directory has none.
pub fn list_dir(dir: &Path) -> Result<Vec<String>, SysfsError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(dir, e)),
    };
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// A file's contents with surrounding whitespace removed (sysfs files end in a newline, some
/// old drivers print none or pad with spaces); `None` when the file does not exist. A file that
/// is no attribute (a FIFO, a device, more than the 4096 bytes the kernel prints) reads as a
/// value no reader accepts ([`refused_value`]): "cannot tell", as for any garbage.
pub fn read_attr(path: &Path) -> Result<Option<String>, SysfsError> {
    attr_text(read::open(path), path)
}

/// An opened attribute's text, trimmed, read bounded (one read of at most a page and a byte).
fn attr_text(file: io::Result<fs::File>, path: &Path) -> Result<Option<String>, SysfsError> {
    match file.and_then(|f| read::read_stream(f, Limit::ATTRIBUTE)) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if read::is_refusal(&e) => Ok(Some(refused_value(&e))),
        Err(e) => Err(io_error(path, e)),
    }
}

/// The value a refused attribute reads as: angle brackets no sysfs value has, and the reason
/// short enough to survive the 40 characters a "cannot tell" message quotes.
fn refused_value(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::InvalidData => format!("<over {} bytes>", Limit::ATTRIBUTE.bytes),
        _ => format!("<{}>", e.to_string().trim_end_matches(", not a regular file")),
    }
}

/// A whole file that is no attribute (`/proc/cpuinfo`), at most `limit` bytes; `None` when it
/// does not exist. A refusal is an error naming the path and the limit.
pub fn read_text(path: &Path, limit: Limit) -> Result<Option<String>, SysfsError> {
    match read::read(path, limit) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

/// A directory held open, whose files are opened by name relative to it (`openat`): the kernel
/// then walks one path component per file instead of every component of the directory's path
/// (a function below a switch is ten deep, and `check` opens twenty files of each of 10,000
/// functions).
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens `path`; `None` when it does not exist.
    pub fn open(path: &Path) -> Result<Option<Dir>, SysfsError> {
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| io_error(path, e.into()))?;
        // SAFETY: `c` is a NUL-terminated path; the flags ask for a directory only.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::NotFound => Ok(None),
                _ => Err(io_error(path, e)),
            };
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Some(Dir {
            fd,
            path: path.to_path_buf(),
        }))
    }

    /// The directory's path, as opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `name` (relative, may hold `/`) for reading if it is a regular file (a FIFO or a
    /// device is refused without blocking); `None` when it does not exist.
    pub(crate) fn file(&self, name: &str) -> Result<Option<fs::File>, SysfsError> {
        match read::open_at(self.fd.as_fd(), name) {
            Ok(f) => Ok(Some(f)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&self.path.join(name), e)),
        }
    }

    /// [`read_attr`] of a file in this directory.
    pub fn attr(&self, name: &str) -> Result<Option<String>, SysfsError> {
        attr_text(read::open_at(self.fd.as_fd(), name), &self.path.join(name))
    }

    /// The last component of a symbolic link's target (`driver` -> `mlx5_core`); `None` where
    /// `name` is no link.
    pub fn link_name(&self, name: &str) -> Option<String> {
        let c = CString::new(name).ok()?;
        let mut buf = [0u8; 4096];
        // SAFETY: `self.fd` is an open directory, `c` NUL-terminated, `buf` writable for its length.
        let n = unsafe { libc::readlinkat(self.fd.as_raw_fd(), c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        let n = usize::try_from(n).ok().filter(|&n| n < buf.len())?;
        let target = Path::new(OsStr::from_bytes(&buf[..n]));
        Some(target.file_name()?.to_string_lossy().into_owned())
    }
}

/// A decimal or `0x` hexadecimal unsigned integer.
pub fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_u64;

    #[test]
    fn attributes_up_to_a_page_read_whole_and_hostile_files_read_as_garbage() {
        let dir = std::env::temp_dir().join(format!("pcie-sysfs-attr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for len in [0, 1, 4094, 4095] {
            let text: String = (0..len).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            std::fs::write(dir.join("a"), format!("{text}\n")).unwrap();
            assert_eq!(super::read_attr(&dir.join("a")).unwrap(), Some(text), "{len} bytes");
        }
        std::fs::write(dir.join("big"), "x".repeat(4097)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        let fifo = std::ffi::CString::new(dir.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let start = std::time::Instant::now();
        let read = |name: &str| super::read_attr(&dir.join(name)).unwrap().unwrap();
        assert_eq!(read("big"), "<over 4096 bytes>");
        assert_eq!(read("zero"), "<a character device>");
        assert_eq!(read("fifo"), "<a FIFO>");
        assert!(start.elapsed().as_secs() < 5, "the FIFO was not waited on");
        assert_eq!(parse_u64(&read("zero")), None, "no number: cannot tell");
        assert_eq!(super::read_attr(&dir.join("none")).unwrap(), None);
        assert!(super::read_attr(&dir).is_err(), "a directory is not an attribute");
        let e = super::read_text(&dir.join("zero"), pcie_output::read::Limit::PROC_FILE).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("{}: a character device", dir.join("zero").display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_of_an_open_directory() {
        let root = std::env::temp_dir().join(format!("pcie-sysfs-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("f/power")).unwrap();
        std::fs::write(root.join("f/power/runtime_status"), "active\n").unwrap();
        std::fs::write(root.join("f/config"), [7u8; 300]).unwrap();
        std::os::unix::fs::symlink("../../drivers/nvme", root.join("f/driver")).unwrap();
        assert!(super::Dir::open(&root.join("none")).unwrap().is_none());
        assert!(
            super::Dir::open(&root.join("f/config")).is_err(),
            "a file is no directory"
        );
        let d = super::Dir::open(&root.join("f")).unwrap().unwrap();
        assert_eq!(d.path(), root.join("f"));
        assert_eq!(d.attr("power/runtime_status").unwrap().as_deref(), Some("active"));
        assert_eq!(d.attr("vendor").unwrap(), None);
        let e = d.attr("power").unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", root.join("f/power").display())), "{e}");
        let config = d.file("config").unwrap().unwrap();
        assert_eq!(config.metadata().unwrap().len(), 300);
        assert!(d.file("none").unwrap().is_none());
        assert_eq!(d.link_name("driver").as_deref(), Some("nvme"));
        assert_eq!(d.link_name("config"), None, "no link");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("0x1f"), Some(31));
        assert_eq!(parse_u64(" 27\n"), Some(27));
        assert_eq!(parse_u64("zz"), None);
    }
}
