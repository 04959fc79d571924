#!/usr/bin/env bash
# `sim fit` on a host it has not seen: simulate pcie-bench's paper suite on HOST with the NFP-6000
# (IOMMU off and 4 KB pages, with CDFs), fit the two runs as a user would (`--base auto`), and
# print each key the fit moved beside HOST's own value, and the criteria met. The measured
# E5-2637 v3 is what the fit's method was built on; this checks that it does not only work there.
#
#   scripts/fit-generality.sh [PCIEPERF] [HOST.toml] [OUTDIR]
#
# Defaults: target/release/pcieperf, data/fit-check/unseen-host.toml, a new temporary directory.
# Samples: SAMPLES (20,000 per test measured), SEARCH (10,000) and FINAL (20,000) for the fit.
# About 5 minutes on 2 cores.
set -euo pipefail
bin=${1:-target/release/pcieperf}
host=${2:-data/fit-check/unseen-host.toml}
out=${3:-$(mktemp -d)}
samples=${SAMPLES:-20000}
[[ -x $bin ]] || { echo "$bin: not an executable (cargo build --release first)" >&2; exit 2; }
[[ -f $host ]] || { echo "$host: no such host profile" >&2; exit 2; }
mkdir -p "$out"
for mode in off 4k; do
    "$bin" bench run --suite paper --backend "sim:$host,nfp6000" --iommu "$mode" --cdf \
        --samples "$samples" --seed 11 --out "$out/measured-$mode" >/dev/null
done
"$bin" sim fit "$out/measured-off" "$out/measured-4k" --device nfp6000 \
    --search-samples "${SEARCH:-10000}" --samples "${FINAL:-20000}" --format json \
    -o "$out/fitted.toml" >"$out/fit.json"
python3 - "$host" "$out/fit.json" <<'EOF'
import json, re, sys, tomllib
truth = tomllib.load(open(sys.argv[1], "rb"))
fit = json.load(open(sys.argv[2]))

def value(profile, dotted):
    v = profile
    for part in dotted.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v["mode_ns"] if isinstance(v, dict) else v

scores = ", ".join(f"{b['name']} {b['loss']:.2f}" for b in fit["base_scores"])
print(f"base: {fit['base']} (losses: {scores})")
print(f"{'key':<30} {'base':>10} {'fitted':>10} {'host':>10} {'off':>8}")
for k in fit["keys"]:
    if k["fitted"] is None:
        continue
    t = value(truth, k["name"])
    off = f"{100 * (k['fitted'] - t) / t:+.1f} %" if t else "-"
    print(f"{k['name']:<30} {k['base']:>10.4g} {k['fitted']:>10.4g} {t if t is not None else '-':>10} {off:>8}")
met = lambda v: sum(1 for x in v if x["met"])
print(f"criteria met: {met(fit['verdicts_before'])} of {len(fit['verdicts_before'])} from the base, "
      f"{met(fit['verdicts_after'])} fitted; {fit['simulations']} simulations")
kinds = {}
for u in fit["unreached"]:
    key = (f"{u['run']}/{u['base']}", re.sub(r" \d+ B \d+ \w+$", "", u["what"]))
    kinds[key] = kinds.get(key, 0) + 1
for (base, what), n in sorted(kinds.items(), key=lambda x: -x[1]):
    print(f"  not reached: {n:>4} x {what} in {base}")
EOF
echo "results: $out"
