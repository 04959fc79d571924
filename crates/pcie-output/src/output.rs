//! [`Output`]: one file being written, whatever the path names. Data reaches a device, a FIFO,
//! a socket or standard output as it is written (in order, nothing renamed); a regular file
//! appears whole at [`Output::finish`], or, for a writer with no end ([`Output::live`]), grows
//! in place.

use crate::replace::Replacement;
use crate::target::{classify, Target};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once an [`Output`] writes to standard output.
static STDOUT_TAKEN: AtomicBool = AtomicBool::new(false);

/// Whether an output file of this process is standard output (`-`, `/dev/stdout`): everything
/// else it prints then belongs on standard error.
pub fn stdout_taken() -> bool {
    STDOUT_TAKEN.load(Ordering::Relaxed)
}

/// A file being written; see the crate documentation for what each kind of path gets.
#[derive(Debug)]
pub struct Output {
    sink: Sink,
}

#[derive(Debug)]
enum Sink {
    Stdout(io::Stdout),
    Stderr(io::Stderr),
    Direct(BufWriter<File>),
    Socket(BufWriter<UnixStream>),
    Replace(Replacement),
}

impl Output {
    /// Opens `path`: standard output for `-`, a device, FIFO or socket directly (a FIFO's open
    /// waits for its reader), a regular file or a new name as a temporary file beside it that
    /// [`Output::finish`] renames into place. A directory, or a name in a directory that does
    /// not exist, is refused.
    pub fn create(path: &Path) -> io::Result<Output> {
        Output::open(path, false)
    }

    /// Like [`Output::create`], but a regular file is truncated now and written in place as data
    /// comes: for writers that run until stopped (`pmu record` until Ctrl-C), whose file must
    /// hold what was written so far even if the process is killed.
    pub fn live(path: &Path) -> io::Result<Output> {
        Output::open(path, true)
    }

    fn open(path: &Path, live: bool) -> io::Result<Output> {
        let sink = match classify(path)? {
            Target::Stdout => {
                STDOUT_TAKEN.store(true, Ordering::Relaxed);
                Sink::Stdout(io::stdout())
            }
            Target::Stderr => Sink::Stderr(io::stderr()),
            Target::InPlace { path, append } => Sink::Direct(BufWriter::new(
                OpenOptions::new().write(true).append(append).open(path)?,
            )),
            Target::Socket(path) => Sink::Socket(BufWriter::new(UnixStream::connect(path)?)),
            Target::Regular { path, .. } if live => Sink::Direct(BufWriter::new(File::create(path)?)),
            Target::Regular { path, existing } => Sink::Replace(Replacement::start(path, existing.as_ref())?),
        };
        Ok(Output { sink })
    }

    /// Writes out what is buffered and, for a replaced file, renames it into place. An error
    /// here (a full device, a reader that went away) means the data did not all arrive.
    pub fn finish(mut self) -> io::Result<()> {
        match self.sink {
            Sink::Replace(r) => r.commit(),
            Sink::Direct(ref mut w) => {
                w.flush()?;
                // A regular file (a live one, one behind /dev/fd/N) or a disk is synced; other
                // devices and FIFOs have nothing to sync (/dev/null answers EINVAL).
                let file = w.get_ref();
                let kind = file.metadata()?.file_type();
                if kind.is_file() || kind.is_block_device() {
                    file.sync_data()?;
                }
                Ok(())
            }
            _ => self.flush(),
        }
    }

    fn writer(&mut self) -> &mut dyn Write {
        match &mut self.sink {
            Sink::Stdout(w) => w,
            Sink::Stderr(w) => w,
            Sink::Direct(w) => w,
            Sink::Socket(w) => w,
            Sink::Replace(r) => r.writer(),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    /// Sends what is buffered on to the path (a replaced file still appears only at `finish`).
    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

/// Writes `contents` to `path` as [`Output::create`] and [`Output::finish`] do.
pub fn write_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut out = Output::create(path)?;
    out.write_all(contents)?;
    out.finish()
}
