#!/usr/bin/env bash
# The GPU backend's acceptance measurements, for a machine with an NVIDIA GPU (run from the
# repository root with a release build: PCIEPERF=path/to/pcieperf). Writes everything under
# $OUT (default gpu-check/): nvidia-smi -q, PyTorch's pinned copy bandwidth (256 MiB), the quick
# suite with both engines, LAT_RD 64 B twice, sm BW at 4 KiB and ce BW at 2 MiB, and the model
# for the link run.json records.
set -u
OUT=${OUT:-gpu-check}
B=${PCIEPERF:-target/release/pcieperf}
mkdir -p "$OUT"
run() { echo "+ $*" >>"$OUT/commands.txt"; "$@"; }

nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>&1
awk '/PCI$/,/Bridge Chip|Fan Speed/' "$OUT/nvidia-smi-q.txt" >"$OUT/nvidia-smi-pcie.txt"
run python3 scripts/torch-copy-bw.py 256 >"$OUT/torch-copy-bw.json" 2>&1

for engine in sm ce; do
    start=$(date +%s.%N)
    run "$B" bench run --backend cuda --engine "$engine" --suite quick --out "$OUT/quick-$engine" \
        >"$OUT/quick-$engine.txt" 2>&1
    echo "quick $engine: rc $? in $(echo "$(date +%s.%N) - $start" | bc) s" >>"$OUT/summary.txt"
done
for i in 1 2; do
    run "$B" bench run --backend cuda --test LAT_RD --size 64 --window 8k --format json \
        >"$OUT/lat-rd-64-run$i.json" 2>&1
done
for t in BW_RD BW_WR BW_RDWR; do
    run "$B" bench run --backend cuda --engine sm --test $t --size 4096 --window 64M --format json \
        >"$OUT/sm-$t-4k.json" 2>&1
done
for t in BW_RD BW_WR; do
    run "$B" bench run --backend cuda --engine ce --test $t --size 2097152 --window 64M --samples 512 \
        --format json >"$OUT/ce-$t-2m.json" 2>&1
done
link=$(python3 -c 'import json,sys; l=json.load(open(sys.argv[1]))["link"]; print(l["gen"], l["lanes"], l["mps"], l["mrrs"])' \
    "$OUT/quick-sm/run.json" 2>/dev/null)
if [ -n "$link" ]; then
    set -- $link
    run "$B" model bw --gen "${1#Gen}" --lanes "$2" --mps "$3" --mrrs "$4" --sizes 64,256,1024,4096 --format csv \
        >"$OUT/model.csv" 2>&1
fi
run "$B" bench report "$OUT/quick-sm" --compare "$OUT/quick-ce" --html "$OUT/report.html" >"$OUT/report.txt" 2>&1
echo "done: $OUT"
