//! Reading sysfs files the way the kernel writes them: one value per file ending in a newline,
//! hexadecimal ids with `0x`, directories listed in a stable order. Shared by this crate's
//! readers and by other sysfs readers (pcie-pmu's PMU directories).

use crate::error::SysfsError;
use std::fs;
use std::io;
use std::path::Path;

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
/// old drivers print none or pad with spaces); `None` when the file does not exist.
pub fn read_attr(path: &Path) -> Result<Option<String>, SysfsError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
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
    fn numbers() {
        assert_eq!(parse_u64("0x1f"), Some(31));
        assert_eq!(parse_u64(" 27\n"), Some(27));
        assert_eq!(parse_u64("zz"), None);
    }
}
