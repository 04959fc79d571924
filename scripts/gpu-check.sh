#!/usr/bin/env bash
# The GPU backend's acceptance run (issue 20), for a machine with an NVIDIA GPU. One command,
# from the repository root, with a release build:
#
#     OUT=gpu-check PCIEPERF=target/release/pcieperf scripts/gpu-check.sh
#
# Measures, each result under $OUT (default gpu-check/):
#   nvidia-smi-q.txt, nvidia-smi-pcie.txt   nvidia-smi -q and its PCI section
#   quick-sm/, quick-ce/                    the quick suite on the GPU's threads and copy engines
#                                           (sm leaves out its bandwidth tests in 4-8 KiB windows)
#   gpu-sm/                                 the gpu suite's bandwidth sweeps (256 KiB windows and
#                                           up) on the GPU's threads
#   lat-rd-64-run{1,2}.json                 LAT_RD 64 B, twice
#   sm-BW_{RD,WR,RDWR}-4k.json              sm bandwidth at 4 KiB
#   torch-copy-bw-{1..4}.json (+ .stderr)   PyTorch's pinned 256 MiB H2D/D2H copies (CUDA events),
#   ce-BW_{RD,WR}-2m-{1..3}.json            and ce bandwidth at 2 MiB between them: each ce figure
#                                           is compared with the PyTorch runs just before and after
#                                           it, seconds apart (PyTorch's own figure moved 6-8 %
#                                           between two runs of this script minutes apart)
#   model.csv                               `model bw` for the link quick-sm/run.json records
#   check-idle.json, check-wake.json        `check` before any load and with `--wake` on the GPU
#   check-watched.json, ce-during-check.json  `check -I 250 --duration 5` while a ce copy of known
#                                           size runs inside its window: NVML's PCIe byte counters
#                                           (gpus[].tx_bytes/rx_bytes rates) against the bytes copied
#                                           (judged: within 5 % of the bytes copied)
#   report-{quick-sm,gpu-sm,quick-ce}.html  bench report of each suite run (.json: the same with
#                                           the verdict, judged for gpu-sm)
#   host/snapshot.tar.gz, lspci-vvv.txt,    the host as `pcieperf snapshot` and `lspci -vvv -nn -D`
#   host/lspci-xxxx.txt                     (-xxxx: config space) see it: issue 21's fixtures of a
#                                           GPU machine; not counted as steps (lspci may be missing)
#   <step>.stderr, commands.txt             each step's stderr, every command run
#   summary.txt                             one line per step, the targets, a last line
# and exits 0 only when every step ran and every target passed (scripts/gpu-check-summary.py).
#
# Time: every step runs under `timeout` with its budget below (seconds; the kill after the
# grace is inside the budget), so the script ends within BUDGET = 333 s plus a few seconds of
# its own, inside the 6 minutes a device session can give one run, with room for a rerun.
# On an H100 (2026-11-27) the whole script took 57-61 s: quick-sm 27 s, quick-ce 16 s, PyTorch
# 4.7 s, each one-test step 1-1.4 s. With the stand-in driver on the 2-core VM
# (gpu-check-selftest.sh case 4) the suites take longest: mostly pcie-bench's 64 MB cache thrash
# before each test (0.37 s here), so they get the most room.
T_HOST=6 T_SMI=6 T_TORCH=11 T_QUICK_SM=60 T_GPU_SM=50 T_QUICK_CE=40 T_LAT=7 T_SM_BW=8 T_CE_BW=6 T_MODEL=8 T_REPORT=5 T_SUMMARY=7
# The GPU's link as `check` sees it: idle, woken (--wake), and watched during a copy (issue 36).
T_CHECK_IDLE=6 T_CHECK_WAKE=8 T_CHECK_WATCHED=8
ROUNDS=3
BUDGET=$((T_HOST + T_SMI + (ROUNDS + 1) * T_TORCH + T_QUICK_SM + T_GPU_SM + T_QUICK_CE + 2 * T_LAT + 3 * T_SM_BW + 2 * ROUNDS * T_CE_BW + T_MODEL + 3 * T_REPORT + T_SUMMARY + T_CHECK_IDLE + T_CHECK_WAKE + T_CHECK_WATCHED))
MAX_BUDGET=335
GRACE=2
# GPU_CHECK_TIME_SCALE=K (default 1) gives every step K times its budget: only for the selftest
# on a debug build (CI), never for a device run, whose 6 minutes are the budgets above.
SCALE=${GPU_CHECK_TIME_SCALE:-1}
# Sizes of the model: the suites' bandwidth sizes, sm's 4 KiB and ce's 2 MiB.
MODEL_SIZES=16,64,65,128,129,256,257,512,513,1024,1025,2048,4096,2097152

set -u
OUT=${OUT:-gpu-check}
B=${PCIEPERF:-target/release/pcieperf}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
: >"$OUT/commands.txt"
FAILED=0
START_NS=$(date +%s%N)

say() { echo "$*" | tee -a "$SUMMARY"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# step NAME BUDGET STDOUT_FILE COMMAND...: runs COMMAND under timeout, stdout to STDOUT_FILE,
# stderr to $OUT/NAME.stderr; one summary line, ok or FAILED with the exit status.
step() {
    local name=$1 budget=$(($2 * SCALE)) stdout=$3
    shift 3
    echo "+ [$name, ${budget} s] $*" >>"$OUT/commands.txt"
    local t0 rc
    t0=$(now_ms)
    timeout -k "$GRACE" "$((budget - GRACE))" "$@" >"$stdout" 2>"$OUT/$name.stderr"
    rc=$?
    local ms=$(($(now_ms) - t0))
    local took
    took="$((ms / 1000)).$(printf %03d $((ms % 1000))) s"
    if [ "$rc" -eq 0 ]; then
        say "ok      $name ($took)"
    else
        FAILED=$((FAILED + 1))
        local why="exit $rc"
        if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="timed out after $((budget - GRACE)) s"; fi
        say "FAILED  $name ($why, $took): $(tail -n 1 "$OUT/$name.stderr" 2>/dev/null)"
    fi
    return "$rc"
}

finish() {
    local elapsed=$((($(date +%s%N) - START_NS) / 1000000000))
    say "$1 ($FAILED failed steps, $elapsed s, budget $BUDGET s): $OUT"
    exit "$2"
}

if [ "$BUDGET" -gt "$MAX_BUDGET" ]; then
    say "FAILED: the steps' budgets add up to $BUDGET s, over $MAX_BUDGET s"
    finish "FAILED" 2
fi
if [ ! -x "$B" ]; then
    say "FAILED: pcieperf binary $B missing or not executable (cargo build --release, or set PCIEPERF)"
    finish "FAILED" 2
fi

# capture NAME FILE COMMAND...: the host's tree for issue 21, 2 s at most each, a summary line
# either way; a missing lspci or a refusal does not fail the run.
capture() {
    local name=$1 file=$2
    shift 2
    echo "+ [host $name, 2 s] $*" >>"$OUT/commands.txt"
    if timeout -k 1 1 "$@" >"$file" 2>"$OUT/host/$name.stderr"; then
        say "host    $name captured"
    else
        say "host    $name not captured (exit $?): $(tail -n 1 "$OUT/host/$name.stderr" 2>/dev/null)"
    fi
}
mkdir -p "$OUT/host"
capture snapshot "$OUT/host/snapshot.txt" "$B" snapshot -o "$OUT/host/snapshot"
# One archive: the device tool does not bring back symbolic links, and a snapshot is made of them.
if [ -d "$OUT/host/snapshot" ]; then
    tar -C "$OUT/host" -czf "$OUT/host/snapshot.tar.gz" snapshot && rm -rf "$OUT/host/snapshot"
fi
capture lspci-vvv "$OUT/host/lspci-vvv.txt" lspci -vvv -nn -D
capture lspci-xxxx "$OUT/host/lspci-xxxx.txt" lspci -vvv -nn -D -xxxx

# The link state first, before anything loads the GPU.
if step nvidia-smi "$T_SMI" "$OUT/nvidia-smi-q.txt" nvidia-smi -q; then
    awk '/^    PCI$/ { p = 1; print; next } p && /^    [^ ]/ { exit } p { print }' \
        "$OUT/nvidia-smi-q.txt" >"$OUT/nvidia-smi-pcie.txt"
    if [ ! -s "$OUT/nvidia-smi-pcie.txt" ]; then
        FAILED=$((FAILED + 1))
        say "FAILED  nvidia-smi PCI section: not found in nvidia-smi-q.txt"
    fi
fi
# The GPU's NUMA node (the first NVIDIA display or 3D function's numa_node in sysfs; 0 where it
# has none), named on every cuda step: pcieperf's own default is the same local case, and the
# line in the summary says which node the run used.
node=0
gpu_bdf=
for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] || continue
    case "$(cat "$d/class" 2>/dev/null)" in 0x0300* | 0x0302*) ;; *) continue ;; esac
    n=$(cat "$d/numa_node" 2>/dev/null)
    if [ -n "$n" ] && [ "$n" -ge 0 ] 2>/dev/null; then node=$n; fi
    gpu_bdf=${d##*/}
    say "host    GPU ${d##*/} on NUMA node ${n:-unknown}: --numa dev=$node,mem=$node,cpu=$node"
    break
done
# PyTorch's pinned buffer on the same node as pcieperf's, where numactl is there to bind it.
bind=()
if command -v numactl >/dev/null; then bind=(numactl "--cpunodebind=$node" "--membind=$node"); fi

# probe NAME BUDGET FILE COMMAND...: a `check` reading kept for the record; exit 3 (findings
# at warning) is an answer, not a failure, and a missing NVML or driver fails nothing.
probe() {
    local name=$1 budget=$(($2 * SCALE)) file=$3
    shift 3
    echo "+ [probe $name, ${budget} s] $*" >>"$OUT/commands.txt"
    timeout -k "$GRACE" "$((budget - GRACE))" "$@" >"$file" 2>"$OUT/$name.stderr"
    local rc=$?
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; then
        say "probe   $name captured (exit $rc)"
    else
        say "probe   $name not captured (exit $rc): $(tail -n 1 "$OUT/$name.stderr" 2>/dev/null)"
    fi
}
probe check-idle "$T_CHECK_IDLE" "$OUT/check-idle.json" "$B" check --format json
if [ -n "$gpu_bdf" ]; then
    probe check-wake "$T_CHECK_WAKE" "$OUT/check-wake.json" "$B" check --wake "$gpu_bdf" --format json
fi

# `timeout` runs programs, not shell functions: every step names the binary.
cuda=("$B" bench run --backend cuda --numa "dev=$node,mem=$node,cpu=$node")
step quick-sm "$T_QUICK_SM" "$OUT/quick-sm.txt" "${cuda[@]}" --engine sm --suite quick --out "$OUT/quick-sm"
step gpu-sm "$T_GPU_SM" "$OUT/gpu-sm.txt" "${cuda[@]}" --engine sm --suite gpu \
    --only bw_dma_sz_sweep,bw_dma_win_sweep_rd_rnd_64 --out "$OUT/gpu-sm"
# ce: 50,000 copies per point (queueing takes the host about 1 ms per 512 copies).
step quick-ce "$T_QUICK_CE" "$OUT/quick-ce.txt" "${cuda[@]}" --engine ce --suite quick --samples 50000 --out "$OUT/quick-ce"
for i in 1 2; do
    step "lat-rd-64-run$i" "$T_LAT" "$OUT/lat-rd-64-run$i.json" \
        "${cuda[@]}" --engine sm --test LAT_RD --size 64 --window 8k --samples 200000 --format json
done
for t in BW_RD BW_WR BW_RDWR; do
    step "sm-$t-4k" "$T_SM_BW" "$OUT/sm-$t-4k.json" \
        "${cuda[@]}" --engine sm --test "$t" --size 4096 --window 64M --samples 2000000 --format json
done
# ce at 2 MiB between PyTorch's runs: round r's copies sit between torch-copy-bw-r and -(r+1).
torch() {
    step "torch-copy-bw-$1" "$T_TORCH" "$OUT/torch-copy-bw-$1.json" "${bind[@]}" python3 "$HERE/torch-copy-bw.py" 256
}
torch 1
for r in $(seq "$ROUNDS"); do
    for t in BW_RD BW_WR; do
        step "ce-$t-2m-$r" "$T_CE_BW" "$OUT/ce-$t-2m-$r.json" \
            "${cuda[@]}" --engine ce --test "$t" --size 2097152 --window 64M --samples 512 --format json
    done
    torch $((r + 1))
done

# The GPU's PCIe byte counters against a copy of known size: check watches 5 s, the copy
# (ce BW_RD, 16,384 x 2 MiB = 32 GiB host to device) starts 1 s in and ends inside the window.
# WATCH_COPIES (default 16,384) is for the selftest, whose stand-in driver really copies memory.
probe check-watched "$T_CHECK_WATCHED" "$OUT/check-watched.json" "$B" check -I 250 --duration $((5 * SCALE)) --format json &
watched=$!
sleep 1
timeout -k 1 $((5 * SCALE)) "${cuda[@]}" --engine ce --test BW_RD --size 2097152 --window 64M --samples "${WATCH_COPIES:-16384}" \
    --format json >"$OUT/ce-during-check.json" 2>"$OUT/ce-during-check.stderr"
wait "$watched"

# The model for the link the sm run recorded (3 s of T_MODEL to read it; a null link fails the
# step with the reason run.json gives).
if link=$(timeout $((3 * SCALE)) python3 - "$OUT/quick-sm/run.json" 2>"$OUT/link.stderr" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))
l = info.get("link")
if not l:
    device = info.get("backend", {}).get("description", {}).get("device", {})
    sys.exit("run.json records no link: " + str(device.get("link", {}).get("note", "no reason recorded")))
print("--gen", str(l["gen"]).removeprefix("Gen"), "--lanes", l["lanes"], "--mps", l["mps"], "--mrrs", l["mrrs"])
EOF
); then
    # shellcheck disable=SC2086 # the link's options, split into words on purpose
    step model "$((T_MODEL - 3))" "$OUT/model.csv" "$B" model bw $link --sizes "$MODEL_SIZES" --format csv
else
    FAILED=$((FAILED + 1))
    say "FAILED  model: no link in quick-sm/run.json: $(tail -n 1 "$OUT/link.stderr")"
fi
for run in quick-sm gpu-sm quick-ce; do
    step "report-$run" "$T_REPORT" "$OUT/report-$run.json" "$B" bench report "$OUT/$run" --html "$OUT/report-$run.html" --format json
done

elapsed=$((($(date +%s%N) - START_NS) / 1000000000))
step summary "$T_SUMMARY" "$OUT/targets.txt" python3 "$HERE/gpu-check-summary.py" "$OUT" "$elapsed"
cat "$OUT/targets.txt" >>"$SUMMARY"
cat "$OUT/targets.txt"
if [ "$FAILED" -gt 0 ]; then
    finish "FAILED" 1
fi
finish "PASSED" 0
