#!/usr/bin/env bash
# Every `pcieperf pmu ... --source sim` command, deterministic (--fast, fixed seed), each output
# into its own file, so two builds can be compared byte for byte:
#
#   scripts/pmu-sim-outputs.sh OLD/pcieperf old/ && scripts/pmu-sim-outputs.sh NEW/pcieperf new/
#   diff -r old/ new/          # no output: the simulated PMU commands did not change
#
# Wall-clock columns (unix_time) are masked. `pmu serve` runs at wall-clock pace, so only the
# names and labels of its series are kept from one scrape; `pmu top` runs its non-terminal form
# (its terminal view has pty tests).
set -euo pipefail
bin=${1:?usage: $0 PCIEPERF OUTDIR}
out=${2:?usage: $0 PCIEPERF OUTDIR}
mkdir -p "$out"
read_w=(--workload port=00:02.0,rw=read,bs=1M,iodepth=64,numjobs=4)
nic_w=(--workload port=b0:00.0,rx=40,tx=10,pkt=1500)
sim=(--fast --duration 3)
run() { # NAME ARGS...: stdout to NAME.out, stderr to NAME.err, exit status to NAME.rc
    local name=$1; shift
    set +e
    "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo $? >"$out/$name.rc"
    set -e
}
for p in yitian710 yitian710-narrow yitian710-nvme; do
    for f in table json csv; do run "list-$p-$f" pmu list --source "sim:$p" --format "$f"; done
done
for f in table json csv; do
    run "stat-$f" pmu stat --source sim "${sim[@]}" "${read_w[@]}" -e dwc_rootport/rx_pcie_tlp_data_payload/ --format "$f"
    run "stat-interval-$f" pmu stat --source sim:yitian710-narrow "${sim[@]}" "${read_w[@]}" -I 500 \
        -e pcie_bdf/Rx_PCIe_TLP_Data_Payload/,pcie_bdf/Tx_PCIe_TLP_Data_Payload/ --format "$f"
done
for f in json csv; do
    run "top-$f" pmu top --source sim "${sim[@]}" "${read_w[@]}" "${nic_w[@]}" --sort total --format "$f"
done
for f in csv json; do
    run "record-$f" pmu record --source sim "${sim[@]}" "${read_w[@]}" "${nic_w[@]}" -I 250 \
        -o "$out/record.$f" --format "$f" --svg "$out/record-$f.svg" --html "$out/record-$f.html"
done
for rw in read write readwrite; do
    for f in table json csv; do
        run "validate-$rw-$f" pmu validate --source sim --port 00:02.0 --rw "$rw" --runtime 2s --format "$f"
    done
    run "validate-$rw-narrow-rx" pmu validate --source sim:yitian710-narrow --port 00:02.0 --rw "$rw" \
        --runtime 2s --events rx --format json
done
# serve: one scrape of /metrics after the first interval, then stop.
log="$out/serve.err"
: >"$log"
"$bin" pmu serve --source sim "${read_w[@]}" -I 200 --listen 127.0.0.1:0 --duration 5 2>"$log" &
pid=$!
addr=""
for _ in $(seq 50); do
    addr=$(grep -o '127\.0\.0\.1:[0-9]*' "$log" | head -1 || true)
    [ -n "$addr" ] && break
    sleep 0.1
done
sleep 1
curl -s "http://$addr/metrics" | grep -v '^#' | sed 's/ [0-9.e+-]*$//' >"$out/serve-metrics-names.out" || true
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
sed -i 's/127\.0\.0\.1:[0-9]*/ADDR/' "$log"
# unix_time: the CSV column of that name and the JSON key
for f in "$out"/*; do
    if head -1 "$f" | grep -q ',unix_time,'; then
        awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "unix_time") c = i }
                          NR > 1 && NF >= c { $c = "UNIX_TIME" } { print }' "$f" >"$f.tmp" && mv "$f.tmp" "$f"
    fi
    sed -i -E 's/("unix_time": ?)[0-9.e+]+/\1UNIX_TIME/g' "$f"
done
# and the output directory, named in messages
grep -rlF "$out/" "$out" | xargs -r sed -i "s|$out/|OUT/|g"
ls "$out" | wc -l
