//! Every file pcieperf reads that is not a stream by design, read bounded: a sysfs attribute,
//! a profile or a suite has a size it never reaches, so reading stops one byte past it and the
//! file is refused (a symlink to `/dev/zero` or a 10 GB file is not read until memory runs
//! out). A file is opened non-blocking and its type checked before the first read, so a FIFO
//! or a device where a file is expected is refused at once instead of waited on.
//!
//! Errors are `io::Error`s without the path (the caller adds it, as for writes); a refusal
//! ([`is_refusal`]) says what the file is or the limit it passed:
//! `a FIFO, not a regular file`, `more than 4096 bytes (the most a sysfs attribute has)`.

use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// How much of a kind of file is read, and the kind's name for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    pub what: &'static str,
}

impl Limit {
    /// A sysfs attribute: the kernel prints at most a page.
    pub const ATTRIBUTE: Limit = Limit {
        bytes: 4096,
        what: "a sysfs attribute",
    };
    /// A PCI function's `config` file: 4 KiB of extended configuration space.
    pub const CONFIG_SPACE: Limit = Limit {
        bytes: 4096,
        what: "a config space",
    };
    /// A `/proc` file pcieperf reads (`cpuinfo` of 1,024 CPUs is about 1.5 MB).
    pub const PROC_FILE: Limit = Limit {
        bytes: 16 << 20,
        what: "a /proc file",
    };
    /// A profile, suite or event catalog (TOML): ours are at most a few tens of KB.
    pub const DEFINITION: Limit = Limit {
        bytes: 1 << 20,
        what: "a profile, suite or catalog",
    };
    /// An `lspci -vvv` dump (10,000 functions at 5 KB each is 50 MB).
    pub const LSPCI_DUMP: Limit = Limit {
        bytes: 64 << 20,
        what: "an lspci dump",
    };
    /// A result table (CSV, pcie-bench `.dat`): a run of a few thousand tests is a few MB.
    pub const RESULT_TABLE: Limit = Limit {
        bytes: 256 << 20,
        what: "a result table",
    };
    /// A run directory's `run.json` (ours are a few KB) or another small JSON/text report.
    pub const RUN_INFO: Limit = Limit {
        bytes: 16 << 20,
        what: "a run.json or report",
    };
}

/// Why a file was refused unread or read no further.
#[derive(Debug)]
struct Refusal(String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

fn refuse(kind: ErrorKind, text: String) -> io::Error {
    io::Error::new(kind, Refusal(text))
}

/// Whether `e` is this module's refusal of a file (not regular, too large) rather than an error
/// of the file system (missing, no permission).
pub fn is_refusal(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Refusal>())
}

/// `what`, named for a message.
fn type_name(t: std::fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// `file` itself when it is a regular file; else a refusal naming its type (a directory is the
/// system's own `EISDIR`: a wrong path, not a hostile file).
fn regular(file: File) -> io::Result<File> {
    let t = file.metadata()?.file_type();
    if t.is_file() {
        Ok(file)
    } else if t.is_dir() {
        Err(io::Error::from_raw_os_error(libc::EISDIR))
    } else {
        Err(refuse(
            ErrorKind::InvalidInput,
            format!("{}, not a regular file", type_name(t)),
        ))
    }
}

/// Flags of every open here: a FIFO or a device opens without waiting for a writer or a
/// carrier, and is refused before any read.
const FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;

fn owned(fd: libc::c_int) -> io::Result<File> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    regular(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

fn c_path(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// `path` opened for reading if it is a regular file (links followed); a FIFO, a device, a
/// socket or a directory is refused without blocking.
pub fn open(path: &Path) -> io::Result<File> {
    let c = c_path(path.as_os_str().as_bytes())?;
    // SAFETY: `c` is a NUL-terminated path.
    owned(unsafe { libc::open(c.as_ptr(), FLAGS) })
}

/// [`open`] of `name` (relative, may hold `/`) in the open directory `dir` (`openat`).
pub fn open_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<File> {
    let c = c_path(name.as_bytes())?;
    // SAFETY: `dir` is an open descriptor and `c` a NUL-terminated relative path.
    owned(unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), FLAGS) })
}

/// At most `limit` bytes of `reader`; one byte more is a refusal. For a stream (standard
/// input) as for an open file.
pub fn read_stream(reader: impl Read, limit: Limit) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit.bytes.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit.bytes {
        return Err(refuse(
            ErrorKind::InvalidData,
            format!("more than {} bytes (the most {} has)", limit.bytes, limit.what),
        ));
    }
    Ok(bytes)
}

/// The bytes of a regular file at `path`, at most `limit`.
pub fn read(path: &Path, limit: Limit) -> io::Result<Vec<u8>> {
    read_stream(open(path)?, limit)
}

/// Text for readers of text files: not UTF-8 is an error (`InvalidData`).
pub fn text(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, limit: Limit) -> io::Result<String> {
    text(read(path, limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{mkfifo, scratch};
    use proptest::prelude::*;
    use std::fs;
    use std::time::{Duration, Instant};

    const SMALL: Limit = Limit {
        bytes: 100,
        what: "a test file",
    };

    #[test]
    fn devices_fifos_and_directories_are_refused_without_blocking() {
        let d = scratch("read-types");
        mkfifo(&d.join("fifo"));
        std::os::unix::fs::symlink("/dev/zero", d.join("zero")).unwrap();
        let start = Instant::now();
        for (name, says) in [
            ("fifo", "a FIFO, not a regular file"),
            ("zero", "a character device, not a regular file"),
        ] {
            let e = read(&d.join(name), SMALL).unwrap_err();
            assert!(is_refusal(&e), "{name}: {e}");
            assert_eq!(e.to_string(), says);
        }
        assert!(start.elapsed() < Duration::from_secs(5), "no open waited for a writer");
        let dir = read(&d, SMALL).unwrap_err();
        assert_eq!(
            (dir.kind(), dir.to_string().as_str()),
            (ErrorKind::IsADirectory, "Is a directory (os error 21)")
        );
        let missing = read(&d.join("none"), SMALL).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert!(!is_refusal(&missing));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn files_relative_to_a_directory() {
        let d = scratch("read-at");
        fs::create_dir(d.join("sub")).unwrap();
        fs::write(d.join("sub/a"), "value\n").unwrap();
        mkfifo(&d.join("sub/fifo"));
        let dir = File::open(&d).unwrap();
        let fd = std::os::fd::AsFd::as_fd(&dir);
        assert_eq!(read_stream(open_at(fd, "sub/a").unwrap(), SMALL).unwrap(), b"value\n");
        assert!(is_refusal(&open_at(fd, "sub/fifo").unwrap_err()));
        assert_eq!(open_at(fd, "none").unwrap_err().kind(), ErrorKind::NotFound);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_endless_stream_stops_one_byte_past_the_limit() {
        let e = read_stream(io::repeat(b'y'), Limit::LSPCI_DUMP).unwrap_err();
        assert_eq!(e.to_string(), "more than 67108864 bytes (the most an lspci dump has)");
        assert_eq!(e.kind(), ErrorKind::InvalidData);
        let e = text(vec![b'a', 0xff]).unwrap_err();
        assert_eq!(e.to_string(), "not UTF-8 text (byte 1)");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// A file of any length up to the limit reads whole and byte for byte; any longer one is
        /// a refusal, however much longer.
        #[test]
        fn a_file_reads_whole_exactly_up_to_its_limit(len in 0usize..300, limit in 0u64..200, byte: u8) {
            let d = scratch(&format!("read-prop-{len}-{limit}-{byte}"));
            let f = d.join("f");
            fs::write(&f, vec![byte; len]).unwrap();
            let got = read(&f, Limit { bytes: limit, what: "x" });
            if len as u64 <= limit {
                prop_assert_eq!(got.unwrap(), vec![byte; len]);
            } else {
                let e = got.unwrap_err();
                prop_assert!(is_refusal(&e));
                prop_assert_eq!(e.to_string(), format!("more than {limit} bytes (the most x has)"));
            }
            fs::remove_dir_all(&d).unwrap();
        }
    }
}
