//! Deterministic transaction-level simulator of host + PCIe link + DMA device.
