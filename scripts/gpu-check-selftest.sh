#!/usr/bin/env bash
# Checks scripts/gpu-check.sh's control flow on a machine without a GPU, so that the one run a
# device session allows is not spent on the script's own bugs:
#
#     PCIEPERF=target/release/pcieperf scripts/gpu-check-selftest.sh
#
# 1. a missing binary: exit 2 and a summary line naming it;
# 2. the real binary with no CUDA driver (fake nvidia-smi and PyTorch on PATH): every GPU step
#    fails with the driver's message, the targets are UNKNOWN, exit 1;
# 3. the real binary with the simulator in the GPU's place (cuda -> sim, no --engine, 2 MiB
#    copies -> 4 KiB DMAs, PyTorch's figures those of the simulator's 4 KiB DMAs): every step
#    runs, every target that needs no GPU is computed and passes, the three that need one
#    (verdict, NVML's byte counters, check --wake) are UNKNOWN, exit 1; the same run with those
#    three inputs written as a GPU host would give them passes (summary exit 0), and with the
#    counters 10 % short or the link staying idle under load fails, naming the figures;
# 4. the real binary and its real commands on the stand-in driver the CLI tests use
#    (crates/pcieperf/tests/cli/fake_driver/libcuda.rs and libnvml.rs, built with rustc; a
#    Gen5 x16 GPU in virtual time, its link from its NVML, its copies counted by that NVML's
#    PCIe byte counters): every step runs, every target passes but check --wake's (the fake
#    GPU has no sysfs entry to wake), exit 1.
# Prints one line per case and exits non-zero at the first case that does not hold.
set -u
REAL=$(realpath "${PCIEPERF:-target/release/pcieperf}")
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$REAL" ] || { echo "selftest: $REAL is not an executable pcieperf (cargo build --release)"; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() {
    echo "selftest FAILED: $*"
    echo "--- $OUT/summary.txt:"
    cat "$OUT/summary.txt"
    exit 1
}

mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-smi" <<'EOF'
#!/bin/sh
cat <<'Q'
==============NVSMI LOG==============
Attached GPUs                             : 1
GPU 00000000:19:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    PCI
        Bus                               : 0x19
        GPU Link Info
            PCIe Generation
                Max                       : 5
                Current                   : 5
            Link Width
                Max                       : 16x
                Current                   : 16x
        Tx Throughput                     : 0 KB/s
    Fan Speed                             : N/A
Q
EOF
# PyTorch: H2D/D2H medians from TORCH_H2D/TORCH_D2H (Gb/s), a warning on stderr; any other
# script runs with the real python3.
REAL_PYTHON=$(command -v python3)
cat >"$TMP/bin/python3" <<EOF
#!/bin/sh
case "\$1" in
*torch-copy-bw.py)
    echo "UserWarning: a PyTorch warning on stderr" >&2
    echo "{\"bytes\": 268435456, \"device\": \"fake\", \"h2d\": {\"median_gbps\": \$TORCH_H2D}, \"d2h\": {\"median_gbps\": \$TORCH_D2H}}"
    ;;
*) exec "$REAL_PYTHON" "\$@" ;;
esac
EOF
cat >"$TMP/bin/pcieperf-sim" <<EOF
#!/usr/bin/env bash
args=()
skip=0
for a in "\$@"; do
    if [ "\$skip" = 1 ]; then skip=0; continue; fi
    case "\$a" in
    cuda) args+=(sim) ;;
    --engine) skip=1 ;;
    2097152) args+=(4096) ;;
    *) args+=("\$a") ;;
    esac
done
exec "$REAL" "\${args[@]}"
EOF
chmod +x "$TMP/bin/"*
export PATH="$TMP/bin:$PATH"

# 1. No binary.
OUT=$TMP/missing
OUT=$OUT PCIEPERF=$TMP/no-such-pcieperf "$HERE/gpu-check.sh" >/dev/null
rc=$?
[ "$rc" = 2 ] || fail "missing binary: exit $rc, not 2"
grep -q "^FAILED: pcieperf binary $TMP/no-such-pcieperf missing" "$OUT/summary.txt" || fail "missing binary: no summary line"
echo "ok 1: a missing binary fails at once (exit 2)"

# 2. No CUDA driver.
if [ -e /dev/nvidiactl ]; then
    echo "skipped 2: this machine has an NVIDIA driver"
else
    OUT=$TMP/nodriver
    OUT=$OUT PCIEPERF=$REAL TORCH_H2D=400 TORCH_D2H=400 "$HERE/gpu-check.sh" >/dev/null
    rc=$?
    [ "$rc" = 1 ] || fail "no driver: exit $rc, not 1"
    for s in quick-sm gpu-sm quick-ce lat-rd-64-run1 lat-rd-64-run2 sm-BW_RD-4k sm-BW_WR-4k sm-BW_RDWR-4k \
        ce-BW_RD-2m-1 ce-BW_WR-2m-1 ce-BW_RD-2m-3 ce-BW_WR-2m-3; do
        grep -q "^FAILED  $s (exit 2, .*no NVIDIA driver found" "$OUT/summary.txt" || fail "no driver: $s"
    done
    grep -q "^FAILED  model: no link" "$OUT/summary.txt" || fail "no driver: model"
    grep -q "^ok      nvidia-smi" "$OUT/summary.txt" || fail "no driver: nvidia-smi"
    grep -q "Fan Speed" "$OUT/nvidia-smi-pcie.txt" && fail "the PCI section runs past its end"
    grep -q "Current                   : 5" "$OUT/nvidia-smi-pcie.txt" || fail "the PCI section is not kept"
    grep -q "UserWarning" "$OUT/torch-copy-bw-1.json" && fail "PyTorch's stderr is in its JSON"
    [ "$(grep -c '^target UNKNOWN' "$OUT/summary.txt")" = 9 ] || fail "no driver: 9 targets unknown"
    tail -n 1 "$OUT/summary.txt" | grep -q "^FAILED (19 failed steps" || fail "no driver: last line"
    echo "ok 2: without a driver every GPU step fails with its reason (exit 1)"
fi

# 3. The simulator in the GPU's place; PyTorch's figures are the simulator's own.
gbps() {
    "$REAL" bench run --test "$1" --size 4096 --window 64M --samples 512 --format json |
        "$REAL_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["result"]["gbps"])'
}
OUT=$TMP/sim
OUT=$OUT PCIEPERF=$TMP/bin/pcieperf-sim TORCH_H2D=$(gbps BW_RD) TORCH_D2H=$(gbps BW_WR) "$HERE/gpu-check.sh" >/dev/null
rc=$?
[ "$rc" = 1 ] || fail "simulator: exit $rc, not 1"
[ "$(grep -c '^ok ' "$OUT/summary.txt")" = 23 ] || fail "simulator: 23 steps ok"
[ "$(grep -c '^target PASS' "$OUT/summary.txt")" = 7 ] || fail "simulator: 7 targets pass"
for t in "verdict: report-gpu-sm.json has no verdict" "GPU PCIe byte counters: check-watched.json: no GPU" \
    "check --wake: check-wake.json missing"; do
    grep -q "^target UNKNOWN: $t" "$OUT/summary.txt" || fail "simulator: target UNKNOWN: $t"
done
tail -n 1 "$OUT/summary.txt" | grep -q "^FAILED (1 failed steps" || fail "simulator: last line"
# The three GPU inputs as a GPU host gives them: the ce copy's bytes as the GPU's RX.
gpu_facts() { # DIR RX_SHARE TRAINS
    "$REAL_PYTHON" - "$@" <<'PY'
import json, sys
out, share, trains = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "true"
copied = json.loads(open(f"{out}/ce-during-check.json").read().splitlines()[-1])["result"]["bytes"]
seconds = 5.0
gpu = {"bdf": "0000:19:00.0", "rx_gbps": copied * share * 8 / 1e9 / seconds, "tx_gbps": 0.5, "replays_per_s": 0.0}
json.dump({"sampled_seconds": seconds, "gpus": [gpu]}, open(f"{out}/check-watched.json", "w"))
wake = {"bdf": "0000:19:00.0", "load": "cuda", "trains": trains, "idle_gts": 2.5, "idle_width": 16,
        "loaded_gts": 32.0 if trains else 2.5, "loaded_width": 16, "capable_gts": 32.0, "capable_width": 16,
        "verdict": "trains to Gen5 x16 under load" if trains else "stays at Gen1 x16 under load"}
json.dump({"wake": [wake]}, open(f"{out}/check-wake.json", "w"))
figure = {"figure": "H2D", "word": "normal", "of_model": 0.92}
json.dump({"verdict": {"gpu": "NVIDIA H200", "link": "Gen5 x16", "word": "normal", "figures": [figure], "causes": []}},
          open(f"{out}/report-gpu-sm.json", "w"))
PY
}
cp -r "$OUT" "$TMP/gpu"
gpu_facts "$TMP/gpu" 1.0 true
"$REAL_PYTHON" "$HERE/gpu-check-summary.py" "$TMP/gpu" 60 >"$TMP/gpu/targets.txt" 2>/dev/null ||
    fail "a GPU host's inputs do not pass: $(cat "$TMP/gpu/targets.txt")"
grep -q "^target PASS: GPU 0000:19:00.0 PCIe RX over 5.00 s .* ratio 1.0000 (+0.00 %" "$TMP/gpu/targets.txt" || fail "counters: $(cat "$TMP/gpu/targets.txt")"
gpu_facts "$TMP/gpu" 0.9 false
"$REAL_PYTHON" "$HERE/gpu-check-summary.py" "$TMP/gpu" 60 >"$TMP/gpu/targets.txt" 2>/dev/null && fail "short counters and an idle link pass"
grep -q "^target FAIL: GPU 0000:19:00.0 PCIe RX .* ratio 0.9000 (-10.00 %, within 5 %)" "$TMP/gpu/targets.txt" || fail "short counters not named: $(cat "$TMP/gpu/targets.txt")"
grep -q "^target FAIL: check --wake on 0000:19:00.0 (cuda): stays at Gen1 x16 under load" "$TMP/gpu/targets.txt" || fail "idle link not named: $(cat "$TMP/gpu/targets.txt")"
# Every write figure is checked: sm 4 KiB, 3 ce rounds, the quick suite's 12 sizes twice and
# the gpu suite's 13; one suite row above the model fails the target, named.
grep -q "^target PASS: no write figure above the link's model [0-9.]* Gb/s (41 figures)" "$OUT/summary.txt" || fail "simulator: 41 write figures"
cp -r "$OUT" "$TMP/above"
"$REAL_PYTHON" - "$TMP/above/gpu-sm/bw_dma_sz_sweep.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    if r["Test"] == "BW_DMA_WR" and r["SZ"] == "2048":
        r["BW (Gb/s)"] = "9999"
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=rows[0].keys())
w.writeheader()
w.writerows(rows)
PY
"$REAL_PYTHON" "$HERE/gpu-check-summary.py" "$TMP/above" 60 >"$TMP/above/targets.txt" 2>/dev/null && fail "a write above the model passes"
grep -q "^target FAIL: no write figure above the link's model [0-9.]* Gb/s (41 figures; above: gpu-sm/bw_dma_sz_sweep.csv 2048 B 9999.0 > [0-9.]*)" \
    "$TMP/above/targets.txt" || fail "the write above the model is not named: $(cat "$TMP/above/targets.txt")"
echo "ok 3: with the simulator every step runs and every target that needs no GPU passes (exit 1: three need one), a write row above the model fails, a GPU host's counters and wake are judged; step times:"
grep '^ok ' "$OUT/summary.txt" | sed 's/^/    /'

# 4. The real commands on the stand-in driver; PyTorch's figures its copy engines' at 256 MiB.
if ! command -v rustc >/dev/null; then
    echo "skipped 4: no rustc to build the stand-in driver"
    exit 0
fi
mkdir -p "$TMP/fake"
rustc --edition 2021 --crate-type cdylib -o "$TMP/fake/libcuda.so.1" \
    "$HERE/../crates/pcieperf/tests/cli/fake_driver/libcuda.rs" || fail "the stand-in driver does not build"
ln -s libcuda.so.1 "$TMP/fake/libcuda.so"
rustc --edition 2021 --crate-type cdylib -o "$TMP/fake/libnvidia-ml.so.1" \
    "$HERE/../crates/pcieperf/tests/cli/fake_driver/libnvml.rs" || fail "the stand-in NVML does not build"
OUT=$TMP/fake-gpu
# 512 copies of 2 MiB inside check -I's window: the stand-in really copies the memory.
LD_LIBRARY_PATH=$TMP/fake FAKE_NVML_GPUS=c0de:c1:00.0 FAKE_GPU_PCIE_BYTES=$TMP/fake/pcie-bytes WATCH_COPIES=512 \
    OUT=$OUT PCIEPERF=$REAL TORCH_H2D=429.9 TORCH_D2H=429.9 "$HERE/gpu-check.sh" >/dev/null
rc=$?
[ "$rc" = 1 ] || fail "stand-in driver: exit $rc, not 1"
[ "$(grep -c '^ok ' "$OUT/summary.txt")" = 23 ] || fail "stand-in driver: 23 steps ok"
[ "$(grep -c '^target PASS' "$OUT/summary.txt")" = 9 ] || fail "stand-in driver: 9 targets pass"
grep -q "^target UNKNOWN: check --wake: check-wake.json missing" "$OUT/summary.txt" || fail "stand-in driver: wake not unknown"
grep -q "^target PASS: GPU c0de:c1:00.0 PCIe RX over .* 1.000 GiB against 1.000 GiB copied host to device: ratio 1.0000" "$OUT/summary.txt" ||
    fail "stand-in driver: NVML's counters against the copy"
# Its threads write 420 Gb/s at every size: above one TLP per DMA at 16-257 B, listed.
grep -q "so combined by the GPU: gpu-sm/bw_dma_sz_sweep.csv 16 B 420.0 > 167.6;" "$OUT/summary.txt" || fail "stand-in driver: combined writes not listed"
echo "ok 4: the real commands on the stand-in driver run every step and pass every target but --wake's (exit 1); step times:"
grep '^ok ' "$OUT/summary.txt" | sed 's/^/    /'
