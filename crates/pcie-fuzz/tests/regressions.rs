//! Inputs the long fuzz runs found failing, each kept once fixed: the target must accept it.

use pcie_fuzz::{targets, Verdict};

fn run(target: &str, input: &str) -> Verdict {
    let t = targets::all()
        .into_iter()
        .find(|t| t.name == target)
        .expect("the target");
    (t.run)(input.as_bytes())
}

/// A `Kernel driver in use:` line a paste ran into the next register line (here past the 255
/// bytes a file name may have): `check --lspci` failed laying out the tree ("File name too
/// long"); the driver is the line's first word.
#[test]
fn a_driver_line_run_into_others_names_the_driver_alone() {
    let tail = "MT28908 Family [ConnectX-6] ".repeat(12);
    let dump = format!(
        "00:01.0 PCI bridge: Intel Corporation Device 347a (rev 04) (prog-if 00 [Normal decode])\n\
         \tBus: primary=00, secondary=01, subordinate=01, sec-latency=0\n\
         \tKernel driver in use: pcieport\t\tDevCap2: Completion Timeout: Not Supported {tail}\n\n\
         01:00.0 Ethernet controller: Mellanox Technologies MT28908 Family [ConnectX-6]\n\
         \tKernel driver in use: ../../mlx5_core\n"
    );
    assert_eq!(run("lspci", &dump), Verdict::Accepted);
    let functions = pcie_sysfs::lspci::parse(&dump).unwrap();
    let drivers: Vec<_> = functions.iter().map(|f| f.driver.as_deref()).collect();
    assert_eq!(drivers, [Some("pcieport"), None]);
}

/// A NUL byte inside the driver's name (the short run's mutation of a real paste, the Quadro
/// P1000's `lspci -v -x`): laying out the tree failed ("a name with a NUL byte"); such a name
/// names no driver.
#[test]
fn a_driver_name_with_a_nul_byte_names_no_driver() {
    let dump = "04:00.0 VGA compatible controller: NVIDIA Corporation GP107GL [Quadro P1000] (rev a1)\n\
                \tKernel driver in use: nou\0veau\n\n\
                05:00.0 Audio device: NVIDIA Corporation GP107GL High Definition Audio Controller (rev a1)\n\
                \tKernel driver in use: snd_hda_intel\n";
    assert_eq!(run("lspci", dump), Verdict::Accepted);
    let functions = pcie_sysfs::lspci::parse(dump).unwrap();
    let drivers: Vec<_> = functions.iter().map(|f| f.driver.as_deref()).collect();
    assert_eq!(drivers, [None, Some("snd_hda_intel")]);
}
