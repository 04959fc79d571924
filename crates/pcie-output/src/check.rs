//! Checks made before any work starts, so a command that cannot write its output says so at once
//! (the CLI's exit 2).

use crate::target::classify;
use std::io;
use std::path::Path;

/// Whether [`crate::Output::create`] would accept `path` as a file: not a directory, in a
/// directory that exists. Opens nothing (a FIFO's reader is not waited for).
pub fn check_file(path: &Path) -> io::Result<()> {
    classify(path).map(|_| ())
}
