#!/usr/bin/env python3
"""The targets of issue 20 from what scripts/gpu-check.sh wrote under OUT (standard library only).

    gpu-check-summary.py OUT ELAPSED_S

Prints one line per target, PASS, FAIL or UNKNOWN (an input missing or unreadable, with the
reason), and exits 0 only when every target passes:
  - ce BW_RD / BW_WR at 2 MiB within 3 % of PyTorch's pinned 256 MiB H2D / D2H median: each
    round's ce figure against the mean of the PyTorch runs just before and after it (seconds
    apart), and the median of the rounds' differences is the one judged;
  - sm BW_RD at 4 KiB at least 85 % of the model's read bandwidth for the link run.json records;
  - no write figure (sm 4 KiB, ce 2 MiB, every BW_WR row of the suite runs) above the link's
    model write bandwidth (its best, at full-size TLPs): more would be bytes that never crossed
    the link. Figures above the model at their own size (one TLP per DMA) but below that are
    listed, not failed: the GPU may combine small writes into fewer, larger TLPs;
  - LAT_RD 64 B median within 2 % across the two runs;
  - the whole script within 6 minutes (ELAPSED_S).
"""
import csv
import json
import os
import statistics
import sys

CE_TOLERANCE_PCT = 3.0
SM_READ_SHARE = 0.85
LAT_TOLERANCE_PCT = 2.0
SCRIPT_LIMIT_S = 360


class Unknown(Exception):
    """An input the target needs is missing or unreadable."""


def path(out, name):
    p = os.path.join(out, name)
    if not os.path.isfile(p):
        raise Unknown(f"{name} missing")
    return p


def bench_json(out, name):
    """The one result line `bench run --format json` printed."""
    try:
        with open(path(out, name)) as f:
            lines = [json.loads(l) for l in f if l.startswith("{")]
    except ValueError as e:
        raise Unknown(f"{name}: not JSON lines ({e})")
    if not lines or "result" not in lines[-1]:
        raise Unknown(f"{name}: no result (the step's .stderr says why)")
    return lines[-1]["result"]


def torch_gbps(out, direction, run):
    name = f"torch-copy-bw-{run}.json"
    try:
        with open(path(out, name)) as f:
            return float(json.load(f)[direction]["median_gbps"])
    except (ValueError, KeyError, TypeError) as e:
        raise Unknown(f"{name}: no {direction} median ({e!r})")


def rounds(out):
    """How many ce rounds ran: ce-BW_RD-2m-1.json, -2, ... (at least one)."""
    n = 0
    while os.path.isfile(os.path.join(out, f"ce-BW_RD-2m-{n + 1}.json")):
        n += 1
    if n == 0:
        raise Unknown("ce-BW_RD-2m-1.json missing")
    return n


def model(out):
    """size -> (rd_gbps, wr_gbps) from model.csv."""
    try:
        with open(path(out, "model.csv")) as f:
            return {int(r["size"]): (float(r["rd_gbps"]), float(r["wr_gbps"])) for r in csv.DictReader(f)}
    except (ValueError, KeyError) as e:
        raise Unknown(f"model.csv unreadable ({e!r})")


def model_at(m, size):
    if size not in m:
        raise Unknown(f"model.csv has no size {size}")
    return m[size]


def suite_writes(out, run):
    """(what, size, Gb/s) of every write row of a suite's run directory (pcie-bench's CSV
    names the test BW_DMA_WR)."""
    d = os.path.join(out, run)
    if not os.path.isdir(d):
        raise Unknown(f"{run}/ missing")
    rows = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".csv") or name.endswith(("_cdf.csv", "_raw.csv")):
            continue
        with open(os.path.join(d, name)) as f:
            for r in csv.DictReader(f):
                if r.get("Test") in ("BW_DMA_WR", "BW_WR"):
                    rows.append((f"{run}/{name} {r['SZ']} B", int(r["SZ"]), float(r["BW (Gb/s)"])))
    return rows


def targets(out, elapsed):
    def ce_vs_torch(test, direction):
        n = rounds(out)
        torch = [torch_gbps(out, direction, r) for r in range(1, n + 2)]
        diffs, parts = [], []
        for r in range(1, n + 1):
            ce = bench_json(out, f"ce-{test}-2m-{r}.json")["gbps"]
            ref = (torch[r - 1] + torch[r]) / 2
            diffs.append((ce - ref) / ref * 100)
            parts.append(f"{ce:.1f} vs {ref:.1f} ({diffs[-1]:+.1f} %)")
        diff = statistics.median(diffs)
        spread = (max(torch) - min(torch)) / min(torch) * 100
        return abs(diff) <= CE_TOLERANCE_PCT, (
            f"ce {test} 2 MiB vs PyTorch {direction} around it, Gb/s: {'; '.join(parts)}; "
            f"median {diff:+.1f} % (within {CE_TOLERANCE_PCT:g} %); PyTorch's {n + 1} runs spread {spread:.1f} %"
        )

    def sm_read():
        bw = bench_json(out, "sm-BW_RD-4k.json")["gbps"]
        rd, _ = model_at(model(out), 4096)
        return bw >= SM_READ_SHARE * rd, f"sm BW_RD 4 KiB {bw:.1f} Gb/s = {bw / rd * 100:.1f} % of the model's {rd:.1f} Gb/s (at least {SM_READ_SHARE * 100:g} %)"

    def writes():
        m = model(out)
        figures = [("sm BW_WR 4 KiB", 4096, bench_json(out, "sm-BW_WR-4k.json")["gbps"])]
        figures += [
            (f"ce BW_WR 2 MiB round {r}", 2 << 20, bench_json(out, f"ce-BW_WR-2m-{r}.json")["gbps"])
            for r in range(1, rounds(out) + 1)
        ]
        for run in ("quick-sm", "gpu-sm", "quick-ce"):
            figures += suite_writes(out, run)
        link = max(wr for _, wr in m.values())
        above = [f"{n} {g:.1f} > {link:.1f}" for n, _, g in figures if g > link]
        combined = [f"{n} {g:.1f} > {model_at(m, s)[1]:.1f}" for n, s, g in figures if model_at(m, s)[1] < g <= link]
        text = f"no write figure above the link's model {link:.1f} Gb/s ({len(figures)} figures"
        if above:
            text += f"; above: {'; '.join(above)}"
        if combined:
            text += f"; above one TLP per DMA at their size, so combined by the GPU: {'; '.join(combined)}"
        return not above, text + ")"

    def latency():
        a = bench_json(out, "lat-rd-64-run1.json")["ns"]["median"]
        b = bench_json(out, "lat-rd-64-run2.json")["ns"]["median"]
        diff = (b - a) / a * 100
        return abs(diff) <= LAT_TOLERANCE_PCT, f"LAT_RD 64 B median {a:.1f} ns then {b:.1f} ns: {diff:+.2f} % (within {LAT_TOLERANCE_PCT:g} %)"

    def duration():
        return elapsed <= SCRIPT_LIMIT_S, f"the whole script took {elapsed} s (at most {SCRIPT_LIMIT_S} s)"

    checks = [
        lambda: ce_vs_torch("BW_RD", "h2d"),
        lambda: ce_vs_torch("BW_WR", "d2h"),
        sm_read,
        writes,
        latency,
        duration,
    ]
    names = ["ce read vs PyTorch", "ce write vs PyTorch", "sm read vs model", "writes vs model", "LAT_RD repeatable", "duration"]
    results = []
    for name, check in zip(names, checks):
        try:
            ok, text = check()
            results.append(("PASS" if ok else "FAIL", text))
        except Unknown as e:
            results.append(("UNKNOWN", f"{name}: {e}"))
    return results


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gpu-check-summary.py OUT ELAPSED_S")
    results = targets(sys.argv[1], int(sys.argv[2]))
    for verdict, text in results:
        print(f"target {verdict}: {text}")
    missed = sum(v != "PASS" for v, _ in results)
    if missed:
        print(f"{missed} of {len(results)} targets not met or not known", file=sys.stderr)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
