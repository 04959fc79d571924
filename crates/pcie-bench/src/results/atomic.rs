//! Files appear complete or not at all: written to a hidden temporary name beside the target,
//! synced, then renamed over it.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Replaces `path` with `contents` atomically.
pub(super) fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    replace_with(path, |w| w.write_all(contents))
}

/// Replaces `path` with what `fill` writes, atomically. `fill` may read the old file.
pub(super) fn replace_with(path: &Path, fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> io::Result<()> {
    let tmp = temp_name(path);
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        fill(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// `dir/.name.tmp`: hidden, and not a `.csv`/`.json` the reader would pick up.
fn temp_name(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pcie-bench-atomic-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let dir = scratch("replace");
        let f = dir.join("a.csv");
        write_atomic(&f, b"one\n").unwrap();
        write_atomic(&f, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "two\n");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.csv")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn failed_fill_keeps_old_contents() {
        let dir = scratch("fail");
        let f = dir.join("a.csv");
        write_atomic(&f, b"complete\n").unwrap();
        let err = replace_with(&f, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("interrupted"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "complete\n");
        assert!(!temp_name(&f).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
