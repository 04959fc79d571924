//! `pcieperf snapshot`: the files `check` and the `pmu` commands read, copied into a new
//! directory for `--sysfs DIR` offline, or the host an `lspci -vvv` dump describes laid out the
//! same way (pcie-sysfs does the work).

use crate::error::CliError;
use crate::host_selection::read_lspci;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The new (or empty) directory to write the snapshot into
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Root of the tree to copy (/ on this host)
    #[arg(long, value_name = "ROOT", default_value = "/")]
    pub sysfs: PathBuf,
    /// Lay out the host an `lspci -vvv` dump describes (FILE, or - for stdin) instead of
    /// copying files
    #[arg(long, value_name = "FILE", conflicts_with = "sysfs")]
    pub lspci: Option<PathBuf>,
}

pub fn run(a: &SnapshotArgs) -> Result<String, CliError> {
    use pcie_sysfs::snapshot::SnapshotError;
    crate::output::check_dir("-o", &a.output)?;
    let refused = |e: SnapshotError| match e {
        SnapshotError::Refused(..) => CliError::Usage(format!("-o {e}")),
        SnapshotError::Io(..) => CliError::Runtime(e.to_string()),
    };
    if let Some(file) = &a.lspci {
        let functions = read_lspci(file)?;
        let s = pcie_sysfs::lspci::write_snapshot(&functions, &a.output).map_err(refused)?;
        if let Some(gaps) = s.gaps() {
            eprintln!("warning: {gaps}");
        }
        return Ok(format!(
            "{}: {} PCI functions from {} (config space: {} from hex dumps, {} from decoded registers, \
             {} header only); read it with --sysfs {}\n",
            a.output.display(),
            s.functions,
            file.display(),
            s.dumped,
            s.decoded,
            s.header_only,
            a.output.display()
        ));
    }
    let s = pcie_sysfs::snapshot::snapshot(&a.sysfs, &a.output).map_err(refused)?;
    for u in &s.unreadable {
        eprintln!("warning: not copied: {u}");
    }
    Ok(format!(
        "{}: {} PCI functions, {} PMUs, {} block devices and interfaces, {} files ({} serial numbers blanked); read it with --sysfs {}\n",
        a.output.display(),
        s.functions,
        s.pmus,
        s.devices,
        s.files,
        s.serials_blanked,
        a.output.display()
    ))
}
