#!/usr/bin/env python3
"""How close can a host with one state come to the Xeon E3-1226 v3's reads?

The E3's size sweep (bw_dma_sz_sweep, BW_RD, 40 sizes) holds reads below 512 B at two levels
from one run to the next (docs/simulator.md, "The E3's DMA writes": 32, 64, 128, 129 and 384 B
near the E5's figure, 16, 63, 65, 127 and 192-320 B at 0.42-0.72 of it). This asks what MAPE
the best host of the simulator's read-pipeline form could reach on it, independent of the
simulator: a DMA read takes the longest of

  - what the NFP-6000 and a fast host take: the E5-2637 v3's measured time per DMA at that
    size (the same device, same firmware, same link width; MPS 256 there),
  - the link at MPS 128 (the E3's): `pcieperf model bw --mps 128` at that size,
  - the E3's read pipeline: a + b x lines per DMA (`root_complex.request_ns`, `line_ns`),

searched over a grid of a and b. A second form lets the pipeline cost hold only below a size
threshold (a host whose slow state depended on the read size alone), to show what that would
buy. Run from the repository root after `cargo build --release`:

  python3 scripts/e3-read-floor.py [PCIEPERF]
"""
import csv
import subprocess
import sys

REF = "data/reference/pcie-bench"
E3 = f"{REF}/nfp6000-1.2GHz_hsw-Xeon-E3-1226v3_fujitsu-tx1310/bw_dma_sz_sweep.csv"
E5 = f"{REF}/nfp6000-1.2GHz_hsw-Xeon-E5-2637v3_supermicro/bw_dma_sz_sweep.csv"


def reads(path):
    """BW_RD Gb/s by size, 8 KB window, offsets 0 (pcie-bench's "GB/s" column is Gb/s)."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["Test"] == "BW_DMA_RD" and (r["WinSZ"], r["HO"], r["DO"]) == ("8192", "0", "0"):
                out[int(r["SZ"])] = float(r["BW (GB/s)"])
    return out


def link(binary, sizes):
    """The model's read Gb/s at MPS 128 (Gen3 x8, MRRS 512, RCB 64), by size."""
    text = subprocess.run(
        [binary, "model", "bw", "--gen", "3", "--lanes", "8", "--mps", "128", "--mrrs", "512",
         "--op", "rd", "--format", "csv", "--sizes", ",".join(map(str, sizes))],
        check=True, capture_output=True, text=True).stdout
    return {int(r["size"]): float(r["rd_gbps"]) for r in csv.DictReader(text.splitlines())}


def mape(e3, floor_ns, a, b, below):
    """MAPE (%) of the form with pipeline cost a + b x lines on reads smaller than `below`."""
    total = 0.0
    for size, measured in e3.items():
        lines = (size + 63) // 64  # the sweep's reads start on a line (offset 0)
        t = floor_ns[size]
        if size < below:
            t = max(t, a + b * lines)
        total += abs(size * 8 / t / measured - 1)
    return 100 * total / len(e3)


def best(e3, floor_ns, below):
    grid = ((mape(e3, floor_ns, a, b / 4, below), a, b / 4) for a in range(0, 80) for b in range(0, 121))
    return min(grid)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/pcieperf"
    e3, e5 = reads(E3), reads(E5)
    model = link(binary, sorted(e3))
    # ns per DMA that no E3 pipeline can beat: the device's (E5-measured) and the link's.
    floor_ns = {s: max(s * 8 / e5[s], s * 8 / model[s]) for s in e3}
    err, a, b = best(e3, floor_ns, 1 << 30)
    print(f"one state at every size: BW_RD MAPE {err:.1f} % at best (a {a} ns per request, {b} ns per line)")
    print(f"  without any pipeline cost (device and link alone): {mape(e3, floor_ns, 0, 0, 0):.1f} %")
    for below in (129, 192, 257, 384, 511, 513):
        err, a, b = best(e3, floor_ns, below)
        print(f"pipeline cost only below {below} B: {err:.1f} % (a {a}, b {b})")


if __name__ == "__main__":
    main()
