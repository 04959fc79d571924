//! The file-system edge: every file pcieperf writes (records, charts, HTML, CSV/JSON, run
//! directories, man pages, profiles, snapshots) goes through this crate, so what is already at
//! the path is safe, and every file it reads that is not a stream by design is read through
//! [`read`], bounded and never blocked on. Named output files:
//!
//! | the path names | it gets |
//! |---|---|
//! | a regular file, or nothing yet | a temporary file in the same directory, synced, renamed over it: a reader sees the old file or the new one, never half; the old file's permissions (and, for root, owner) are kept |
//! | a symlink | followed (a dangling one too): the write above happens at its target, the link stays a link |
//! | a character or block device, a FIFO, a socket, `/dev/std*`, `/dev/fd/N` | written directly, in order; no temporary file, no rename |
//! | `-` | standard output ([`stdout_taken`] then tells the program to print everything else on standard error) |
//! | a directory | refused (`is a directory`) |
//!
//! Errors are `io::Error`s without the path, which the caller adds along with the option that
//! named it. A write error (ENOSPC on `/dev/full`, EPIPE from a reader that left) comes back
//! from the write or from [`Output::finish`]: a command has written its file only once
//! `finish` returned `Ok`.
//!
//! The API, for every writer:
//! - [`check_file`] / [`check_dir`]: before any work starts, whether a path can be an output file
//!   (directory) at all; the CLI turns a refusal into exit 2.
//! - [`write_file`]: a whole file from memory.
//! - [`Output::create`] → `impl Write` → [`Output::finish`]: a file written piece by piece;
//!   [`Output::live`] for a writer that runs until stopped, whose regular file grows in place.
//! - [`OutDir`]: a directory pcieperf fills, created by it or empty and the caller's, held open;
//!   its files are made relative to it with no-follow and exclusive create ([`check_dir`] first).
//! - [`read`]: bounded reads of regular files (a [`read::Limit`] per kind of file), FIFOs and
//!   devices refused without blocking.
//! - [`PrivateDir`]: a scratch directory no other user can name in advance, removed on drop.
//!
//! ```
//! use pcie_output::read::{self, Limit};
//! let dir = std::env::temp_dir().join(format!("pcie-output-doc-{}", std::process::id()));
//! let out = pcie_output::OutDir::create(&dir).unwrap();
//! out.write("chart.svg", b"<svg/>").unwrap();
//! assert_eq!(read::read_text(&dir.join("chart.svg"), Limit::DEFINITION).unwrap(), "<svg/>");
//! assert!(read::read(std::path::Path::new("/dev/zero"), Limit::ATTRIBUTE).is_err());
//! pcie_output::write_file(std::path::Path::new("/dev/null"), b"gone").unwrap();
//! assert!(pcie_output::check_file(&dir).is_err()); // a directory is no file
//! assert!(pcie_output::check_dir(&dir).is_err()); // and no longer empty
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod check;
mod out_dir;
mod output;
mod private_dir;
pub mod read;
mod replace;
mod target;

pub use check::check_file;
pub use out_dir::{check_dir, DirFile, OutDir};
pub use output::{stdout_taken, write_file, Output};
pub use private_dir::{tree_bases, PrivateDir};

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::{ErrorKind, Read, Write};
    use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt};
    use std::os::unix::net::UnixListener;
    use std::path::{Path, PathBuf};

    /// An empty directory under the temp directory, unique to this test process.
    pub(crate) fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pcie-output-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// Makes a FIFO at `path`.
    pub(crate) fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
            0,
            "mkfifo {}",
            path.display()
        );
    }

    /// A FIFO at `path` whose reader thread returns all it read.
    fn fifo_with_reader(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
        mkfifo(path);
        let p = path.to_path_buf();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            fs::File::open(p).unwrap().read_to_end(&mut got).unwrap();
            got
        })
    }

    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let d = scratch("links");
        fs::write(d.join("target.csv"), "old").unwrap();
        symlink("target.csv", d.join("link.csv")).unwrap();
        symlink("made.csv", d.join("dangling")).unwrap();
        for (link, target) in [("link.csv", "target.csv"), ("dangling", "made.csv")] {
            write_file(&d.join(link), b"new").unwrap();
            let kind = fs::symlink_metadata(d.join(link)).unwrap().file_type();
            assert!(kind.is_symlink(), "{link}");
            assert_eq!(fs::read_to_string(d.join(target)).unwrap(), "new");
        }
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_fifo_gets_the_data_in_order_and_stays_a_fifo() {
        let d = scratch("fifo");
        let fifo = d.join("pipe");
        let reader = fifo_with_reader(&fifo);
        let mut out = Output::create(&fifo).unwrap();
        for i in 0..1000 {
            writeln!(out, "line {i}").unwrap();
        }
        out.finish().unwrap();
        let expected: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(String::from_utf8(reader.join().unwrap()).unwrap(), expected);
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1, "no temporary file");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_socket_is_connected_to() {
        let d = scratch("socket");
        let sock = d.join("s");
        let listener = UnixListener::bind(&sock).unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = String::new();
            listener.accept().unwrap().0.read_to_string(&mut got).unwrap();
            got
        });
        write_file(&sock, b"over the socket\n").unwrap();
        assert_eq!(reader.join().unwrap(), "over the socket\n");
        assert!(fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_are_written_in_place_and_a_full_one_is_an_error() {
        let null = fs::metadata("/dev/null").unwrap();
        write_file(Path::new("/dev/null"), b"discarded").unwrap();
        let after = fs::metadata("/dev/null").unwrap();
        assert!(after.file_type().is_char_device());
        assert_eq!((after.ino(), after.rdev()), (null.ino(), null.rdev()));
        if Path::new("/dev/full").exists() {
            let e = write_file(Path::new("/dev/full"), &[b'x'; 10_000]).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(28), "ENOSPC: {e}");
            assert!(fs::metadata("/dev/full").unwrap().file_type().is_char_device());
        }
    }

    #[test]
    fn a_reader_never_sees_half_a_file() {
        let d = scratch("reader");
        let f = d.join("big.csv");
        let versions: Vec<Vec<u8>> = (b'a'..=b'e').map(|c| vec![c; 1 << 20]).collect();
        write_file(&f, &versions[0]).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (f, stop) = (f.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let got = fs::read(&f).unwrap();
                    assert_eq!(got.len(), 1 << 20, "a whole file");
                    assert!(got.iter().all(|&b| b == got[0]), "one version");
                    reads += 1;
                }
                reads
            })
        };
        for v in versions.iter().cycle().take(20) {
            write_file(&f, v).unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_live_file_grows_in_place_and_a_created_one_appears_at_finish() {
        let d = scratch("live");
        let (live, whole) = (d.join("live.csv"), d.join("whole.csv"));
        let mut l = Output::live(&live).unwrap();
        let mut w = Output::create(&whole).unwrap();
        for out in [&mut l, &mut w] {
            out.write_all(b"row\n").unwrap();
            out.flush().unwrap();
        }
        assert_eq!(fs::read_to_string(&live).unwrap(), "row\n");
        assert_eq!(fs::read(&whole).unwrap_err().kind(), ErrorKind::NotFound);
        l.finish().unwrap();
        w.finish().unwrap();
        assert_eq!(fs::read_to_string(&whole).unwrap(), "row\n");
        fs::remove_dir_all(&d).unwrap();
    }
}
