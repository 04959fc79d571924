//! Files are written to a temporary name beside the target and renamed into place, so a
//! reader never sees half a file.

use crate::error::CliError;
use std::fs;
use std::path::Path;

pub fn write_atomically(path: &Path, contents: &str) -> Result<(), CliError> {
    let fail = |what: &str, e: std::io::Error| CliError::Runtime(format!("cannot {what} {}: {e}", path.display()));
    let name = path
        .file_name()
        .ok_or_else(|| CliError::Usage(format!("{}: not a file name", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    fs::write(&tmp, contents).map_err(|e| fail("write", e))?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        fail("replace", e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("pcieperf-file-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("out.svg");
        write_atomically(&target, "<svg/>").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "<svg/>");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        let missing = dir.join("no/such/dir/out.svg");
        assert!(matches!(write_atomically(&missing, "x"), Err(CliError::Runtime(_))));
        fs::remove_dir_all(&dir).unwrap();
    }
}
