#!/usr/bin/env python3
"""PyTorch's own pinned copy bandwidth, the independent reference for `--backend cuda --engine ce`:
256 MiB pinned host buffer (torch.empty(..., pin_memory=True)), host-to-device and device-to-host
with copy_(non_blocking=True) between it and a device tensor allocated once, timed with CUDA
events, best and median of 20 copies after 3 warm-ups. Prints one JSON object on stdout (Gb/s
and GB/s); PyTorch's warnings go to stderr, which gpu-check.sh keeps apart."""
import json
import statistics
import sys

import torch

MIB = 1 << 20


def timed(copy, n=20, warm=3):
    times = []
    for i in range(warm + n):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        copy()
        end.record()
        end.synchronize()
        if i >= warm:
            times.append(start.elapsed_time(end) / 1000.0)
    return times


def main():
    size = int(sys.argv[1]) * MIB if len(sys.argv) > 1 else 256 * MIB
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    out = {"bytes": size, "device": torch.cuda.get_device_name(0)}
    for name, copy in (
        ("h2d", lambda: dev.copy_(host, non_blocking=True)),
        ("d2h", lambda: host.copy_(dev, non_blocking=True)),
    ):
        t = timed(copy)
        out[name] = {
            "best_gbps": size * 8 / min(t) / 1e9,
            "median_gbps": size * 8 / statistics.median(t) / 1e9,
            "median_gb_s": size / statistics.median(t) / 1e9,
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
