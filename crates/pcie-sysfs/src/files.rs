//! Reading sysfs files the way the kernel writes them: one value per file ending in a newline,
//! hexadecimal ids with `0x`, directories listed in a stable order. Shared by this crate's
//! readers and by other sysfs readers (pcie-pmu's PMU directories).

use crate::error::SysfsError;
use std::fs;
use std::io::{self, Read};
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

/// A sysfs attribute is at most a page, which one read returns whole.
const ATTR_READ: usize = 4096;

/// A file's contents with surrounding whitespace removed (sysfs files end in a newline, some
/// old drivers print none or pad with spaces); `None` when the file does not exist. One read
/// where it comes back short of a page (the end of the file), so a check of a large host opens,
/// reads and closes each file and nothing more; a full page reads on to the end.
pub fn read_attr(path: &Path) -> Result<Option<String>, SysfsError> {
    let mut file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, e)),
    };
    let mut bytes = vec![0; ATTR_READ];
    let n = loop {
        match file.read(&mut bytes) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => break r.map_err(|e| io_error(path, e))?,
        }
    };
    bytes.truncate(n);
    if n == ATTR_READ {
        file.read_to_end(&mut bytes).map_err(|e| io_error(path, e))?;
    }
    Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string()))
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
    fn attributes_of_any_length_read_whole() {
        let dir = std::env::temp_dir().join(format!("pcie-sysfs-attr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for len in [0, 1, 4095, 4096, 4097, 10_000] {
            let text: String = (0..len).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            std::fs::write(dir.join("a"), format!("{text}\n")).unwrap();
            assert_eq!(super::read_attr(&dir.join("a")).unwrap(), Some(text), "{len} bytes");
        }
        assert_eq!(super::read_attr(&dir.join("none")).unwrap(), None);
        assert!(super::read_attr(&dir).is_err(), "a directory is not an attribute");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("0x1f"), Some(31));
        assert_eq!(parse_u64(" 27\n"), Some(27));
        assert_eq!(parse_u64("zz"), None);
    }
}
