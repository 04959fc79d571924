//! NVIDIA GPUs' PCIe facts as the GPU itself reports them, through NVML
//! (`libnvidia-ml.so.1`, loaded at run time with dlopen as the CUDA driver is, so nothing of
//! NVIDIA's is needed to build or to run where there is no GPU).
//!
//! Owned here:
//! - [`nvml`]: the calls, bound with dlsym: a GPU's link generation and width, current and
//!   maximum, as nvidia-smi prints them.
//! - [`link`]: the GPU's link for a benchmark's `run.json`, from sysfs's
//!   [`pcie_sysfs::DeviceRecord`] with NVML's figures beside (pure functions over what the
//!   readers returned).
//!
//! Left to others: the CUDA backend that measures a GPU's link (`pcie-gpu`), and what the
//! figures mean for the link's health (`pcie-health`).

pub mod link;
pub mod nvml;

pub use link::NvmlLink;
