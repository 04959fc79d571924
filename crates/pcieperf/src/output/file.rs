//! The command line's side of `pcie-output`, which writes every file: a path that cannot be an
//! output is refused naming the option (exit 2, checked before any work starts), and a write
//! that fails names the path (exit 1).

use crate::error::CliError;
use std::io;
use std::path::Path;

/// The output files of a command, as (option, path): each must be able to be written, and at
/// most one may be standard output (`-`).
pub fn check_files(files: &[(&str, Option<&Path>)]) -> Result<(), CliError> {
    let mut stdout: Option<&str> = None;
    for &(opt, path) in files {
        let Some(path) = path else { continue };
        pcie_output::check_file(path).map_err(|e| refused(opt, path, e))?;
        if path.as_os_str() == "-" {
            if let Some(first) = stdout {
                return Err(CliError::Usage(format!(
                    "{opt} -: {first} already writes to standard output; give one of them a file"
                )));
            }
            stdout = Some(opt);
        }
    }
    Ok(())
}

/// An output directory (`--out`, `--svg-dir`): a name that can be created, or an empty
/// directory of the caller's.
pub fn check_dir(opt: &str, path: &Path) -> Result<(), CliError> {
    pcie_output::check_dir(path).map_err(|e| refused(opt, path, e))
}

/// Makes the output directory `path` and writes each (file name, contents) into it, every file
/// made inside it without following links (see `pcie_output::OutDir`).
pub fn write_dir(path: &Path, files: &[(String, Vec<u8>)]) -> Result<(), CliError> {
    let dir = pcie_output::OutDir::create(path).map_err(|e| write_failed(path, e))?;
    for (name, bytes) in files {
        dir.write(name, bytes).map_err(|e| write_failed(&path.join(name), e))?;
    }
    Ok(())
}

fn refused(opt: &str, path: &Path, e: io::Error) -> CliError {
    CliError::Usage(format!("{opt} {}: {e}", path.display()))
}

/// Writes a whole file (see `pcie-output` for what each kind of path gets).
pub fn write_file(path: &Path, contents: &str) -> Result<(), CliError> {
    pcie_output::write_file(path, contents.as_bytes()).map_err(|e| write_failed(path, e))
}

/// A failed write, naming where it went.
pub fn write_failed(path: &Path, e: io::Error) -> CliError {
    CliError::Runtime(format!("cannot write {}: {e}", shown(path)))
}

/// A path as messages name it: `-` is standard output.
pub fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_option_and_only_one_output_is_stdout() {
        let dash = Some(Path::new("-"));
        let e = check_files(&[("-o", dash), ("--svg", None), ("--html", dash)]).unwrap_err();
        assert!(
            matches!(&e, CliError::Usage(m) if m == "--html -: -o already writes to standard output; give one of them a file"),
            "{e}"
        );
        let e = check_files(&[("--plot", Some(Path::new("/tmp")))]).unwrap_err();
        assert!(
            matches!(&e, CliError::Usage(m) if m == "--plot /tmp: is a directory"),
            "{e}"
        );
        let e = check_dir("--out", Path::new("/dev/null")).unwrap_err();
        assert!(
            matches!(&e, CliError::Usage(m) if m == "--out /dev/null: is not a directory"),
            "{e}"
        );
        let e = write_file(Path::new("/dev/full"), "x").unwrap_err();
        assert!(
            matches!(&e, CliError::Runtime(m) if m.starts_with("cannot write /dev/full: ")),
            "{e}"
        );
    }
}
