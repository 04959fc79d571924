#!/usr/bin/env python3
"""The targets of issues 20 and 36 from what scripts/gpu-check.sh wrote under OUT (standard library only).

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
  - the gpu suite's sm BW_RD and BW_WR in windows of 256 KiB and more, at the sweep's largest
    size, within 85-100 % of the model (issue 36);
  - the verdict `bench report` gives the gpu suite's run says "normal" (report-gpu-sm.json);
  - the GPU's PCIe byte counters (NVML, as `check -I` samples them in check-watched.json) within
    5 % of the bytes the ce copy inside the window moved (ce-during-check.json), in the copy's
    direction (host to device: the GPU's RX). No NVIDIA document says whether these counters
    include TLP headers, so the payload is judged and the ratio printed: a ratio steady at
    1 + header/payload would show they count headers;
  - `check --wake` on the GPU (check-wake.json): the path trains to what its ends can do;
  - the whole script within 6 minutes (ELAPSED_S).
The last four need a GPU the machine's sysfs and NVML show: without one they are UNKNOWN.
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
SM_WINDOW_SHARE = (0.85, 1.0)
SM_MIN_WINDOW = 256 << 10
COUNTER_TOLERANCE_PCT = 5.0


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


def load_json(out, name):
    try:
        with open(path(out, name)) as f:
            return json.load(f)
    except ValueError as e:
        raise Unknown(f"{name}: not JSON ({e})")


def suite_rows(out, run, tests):
    """(file, test, window, size, Gb/s) of a suite run's rows of `tests` (pcie-bench's CSV
    names)."""
    d = os.path.join(out, run)
    if not os.path.isdir(d):
        raise Unknown(f"{run}/ missing")
    rows = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".csv") or name.endswith(("_cdf.csv", "_raw.csv")):
            continue
        with open(os.path.join(d, name)) as f:
            for r in csv.DictReader(f):
                if r.get("Test") in tests:
                    rows.append((name, r["Test"], int(r["WinSZ"]), int(r["SZ"]), float(r["BW (Gb/s)"])))
    return rows


def suite_writes(out, run):
    """(what, size, Gb/s) of every write row of a suite's run directory (pcie-bench's CSV
    names the test BW_DMA_WR)."""
    return [(f"{run}/{name} {size} B", size, gbps) for name, _, _, size, gbps in suite_rows(out, run, ("BW_DMA_WR", "BW_WR"))]


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

    def sm_windows():
        m = model(out)
        rows = [r[1:] for r in suite_rows(out, "gpu-sm", ("BW_DMA_RD", "BW_DMA_WR")) if r[2] >= SM_MIN_WINDOW]
        if not rows:
            raise Unknown("gpu-sm/ has no BW_DMA_RD or BW_DMA_WR row in a window of 256 KiB or more")
        size = max(r[2] for r in rows)
        lo, hi = SM_WINDOW_SHARE
        ok, parts = True, []
        for test, col in (("BW_DMA_RD", 0), ("BW_DMA_WR", 1)):
            picked = [r for r in rows if r[0] == test and r[2] == size]
            if not picked:
                raise Unknown(f"gpu-sm/ has no {test} row at {size} B")
            ref = model_at(m, size)[col]
            for _, window, _, gbps in picked:
                share = gbps / ref
                ok &= lo <= share <= hi
                parts.append(f"{test} {window >> 10} KiB window {gbps:.1f} = {share * 100:.1f} % of {ref:.1f}")
        return ok, f"sm at {size} B in windows of 256 KiB+: {'; '.join(parts)} (within {lo * 100:g}-{hi * 100:g} %)"

    def verdict():
        v = load_json(out, "report-gpu-sm.json").get("verdict")
        if not v:
            raise Unknown("report-gpu-sm.json has no verdict (the run's device is not a GPU)")
        figures = "; ".join(
            f"{f['figure']} {f['word']}" + (f" ({f['of_model'] * 100:.1f} % of the model)" if f.get("of_model") else "")
            for f in v.get("figures", [])
        )
        causes = "; ".join(v.get("causes", []))
        text = f"the gpu suite's verdict on {v.get('gpu')} ({v.get('link')}): {v.get('word')}: {figures}"
        return v.get("word") == "normal", text + (f"; causes: {causes}" if causes else "")

    def gpu_counters():
        watched = load_json(out, "check-watched.json")
        seconds = watched.get("sampled_seconds")
        gpus = [g for g in watched.get("gpus", []) if g.get("rx_gbps") is not None]
        if not gpus or not seconds:
            why = watched.get("nvml") or f"NVML gave {len(watched.get('gpus', []))} GPUs"
            raise Unknown(f"check-watched.json: no GPU with sampled PCIe byte counters ({why})")
        copied = bench_json(out, "ce-during-check.json")["bytes"]
        # The GPU the copy ran on is the one whose counters moved most.
        g = max(gpus, key=lambda g: g["rx_gbps"])
        rx = g["rx_gbps"] * 1e9 / 8 * seconds
        tx = (g.get("tx_gbps") or 0) * 1e9 / 8 * seconds
        diff = (rx / copied - 1) * 100
        replays = g.get("replays_per_s")
        return abs(diff) <= COUNTER_TOLERANCE_PCT, (
            f"GPU {g['bdf']} PCIe RX over {seconds:.2f} s {rx / 2**30:.3f} GiB against {copied / 2**30:.3f} GiB copied "
            f"host to device: ratio {rx / copied:.4f} ({diff:+.2f} %, within {COUNTER_TOLERANCE_PCT:g} %); "
            f"TX {tx / 2**30:.3f} GiB (read requests and other traffic); replays {replays if replays is not None else 'unknown'}/s"
        )

    def wake():
        entries = load_json(out, "check-wake.json").get("wake", [])
        if not entries:
            raise Unknown("check-wake.json has no wake entry")
        w = entries[0]
        if w.get("trains") is None:
            raise Unknown(f"check --wake did not load {w.get('bdf')}: {w.get('error') or w.get('verdict')}")
        return bool(w["trains"]), (
            f"check --wake on {w['bdf']} ({w.get('load')}): {w.get('verdict')}; idle {w.get('idle_gts')} GT/s x{w.get('idle_width')}, "
            f"loaded {w.get('loaded_gts')} GT/s x{w.get('loaded_width')}, capable {w.get('capable_gts')} GT/s x{w.get('capable_width')}"
        )

    def duration():
        # The selftest on a debug build (GPU_CHECK_TIME_SCALE) gives every step K times its budget.
        scale = int(os.environ.get("GPU_CHECK_TIME_SCALE", "1"))
        limit = f"{SCRIPT_LIMIT_S} s" + (f" x {scale}, GPU_CHECK_TIME_SCALE" if scale != 1 else "")
        return elapsed <= SCRIPT_LIMIT_S * scale, f"the whole script took {elapsed} s (at most {limit})"

    checks = [
        lambda: ce_vs_torch("BW_RD", "h2d"),
        lambda: ce_vs_torch("BW_WR", "d2h"),
        sm_read,
        writes,
        latency,
        sm_windows,
        verdict,
        gpu_counters,
        wake,
        duration,
    ]
    names = [
        "ce read vs PyTorch",
        "ce write vs PyTorch",
        "sm read vs model",
        "writes vs model",
        "LAT_RD repeatable",
        "sm in 256 KiB+ windows vs model",
        "verdict",
        "GPU PCIe byte counters",
        "check --wake",
        "duration",
    ]
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
