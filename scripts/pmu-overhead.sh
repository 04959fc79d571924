#!/usr/bin/env bash
# CPU cost of monitoring, printed as figures:
#  1. `pcieperf pmu stat -I 100` against `perf stat -I 100` on the same software and msr events
#     (both system-wide on CPU 0), each for SECONDS, and the ratio of their CPU times;
#  2. `pcieperf pmu stat -I 100` on the simulated Yitian 710 (18 root ports x Rx and Tx payload,
#     multiplexed), paced to wall-clock time with no workload, as a share of one core. This
#     includes the PMU emulation; `cargo bench -p pcie-pmu --bench monitor_share` gives the
#     monitor's own share with busy ports and the simulation left out.
#
# usage: scripts/pmu-overhead.sh [SECONDS]     (PCIEPERF=path/to/pcieperf to use another build)
set -euo pipefail
secs=${1:-10}
cd "$(dirname "$0")/.."
bin=${PCIEPERF:-target/release/pcieperf}
[ -x "$bin" ] || cargo build --release --locked -p pcieperf >&2
command -v perf >/dev/null || { echo "perf not found (install linux-tools / perf)" >&2; exit 1; }

# CPU seconds (user + system) of a command, from getrusage of the waited-for child.
cpu() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.4f}")
PY
}

events="cpu-clock task-clock tsc"
[ -e /sys/bus/event_source/devices/msr/events/aperf ] && events="$events aperf mperf"
perf_events=$(for e in $events; do case $e in *-clock) echo -n "$e,";; *) echo -n "msr/$e/,";; esac; done)
ours=$(for e in $events; do case $e in *-clock) echo -n "software/$e/,";; *) echo -n "msr/$e/,";; esac; done)
perf_events=${perf_events%,}
ours=${ours%,}

echo "events: $ours, read every 100 ms for $secs s on CPU 0"
ours_cpu=$(cpu "$bin" pmu stat -e "$ours" -I 100 --duration "$secs")
perf_cpu=$(cpu perf stat -C 0 -I 100 -e "$perf_events" -- sleep "$secs")
python3 - "$ours_cpu" "$perf_cpu" "$secs" <<'PY'
import sys
ours, perf, secs = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"pcieperf pmu stat -I 100: {ours:.3f} s CPU ({100 * ours / secs:.3f} % of one core)")
print(f"perf stat -I 100:         {perf:.3f} s CPU ({100 * perf / secs:.3f} % of one core)")
print(f"ratio pcieperf / perf:    {ours / perf:.2f}" if perf > 0 else "ratio: perf used no measurable CPU")
PY

sim_cpu=$(cpu "$bin" pmu stat --source sim \
  -e dwc_rootport/rx_pcie_tlp_data_payload/,dwc_rootport/tx_pcie_tlp_data_payload/ -I 100 --duration "$secs")
python3 - "$sim_cpu" "$secs" <<'PY'
import sys
cpu, secs = float(sys.argv[1]), float(sys.argv[2])
print(f"simulated Yitian 710, 18 ports x 2 events, -I 100: {cpu:.3f} s CPU = {100 * cpu / secs:.3f} % of one core "
      "(start-up and PMU emulation included)")
PY
