#!/usr/bin/env bash
# Sharding benchmark (no GPU needed): for a model preset, the training step
# (bf16 mixed precision, fused logit GEMM + cross-entropy, autodiff, AdamW) is
# sharded under each strategy preset on a 64-device mesh (8 nodes x 8 GPUs),
# and the cost model's report gives the modelled step time (compute at the achievable rate
# + exposed ring collectives: gradient reductions and parameter gathers overlap compute) and the memory per device (arguments: fp32
# parameters, Adam moments; plus the peak of live activations, no
# recomputation). Also times propagation + partitioning on this machine.
#
#   bench/sharding_presets.sh <preset> <batch> [hardware]
# e.g. bench/sharding_presets.sh gpt2-1.5b 64
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
preset="${1:?preset}"; batch="${2:?batch}"; hw="${3:-h100-8x-nvlink-ib}"
shardc="$build/tools/shardc/shardc"; opt="$build/tools/shardc-opt/shardc-opt"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

"$shardc" gen --preset "$preset" --batch "$batch" --dropout 0 -o "$work/model.mlir" > /dev/null
"$opt" "$work/model.mlir" -xf-mixed-precision -xf-fuse-linear-cross-entropy -xf-autodiff -xf-adamw \
  -o "$work/step.mlir"

configs=("dp=64 dp" "dp=64 zero1" "dp=64 zero2" "dp=64 zero3" "dp=8,shard=8 mics"
         "dp=8,tp=8 dp+tp" "dp=8,tp=8 dp+sp" "dp=8,tp=8 zero1+tp" "dp=8,tp=8 zero3+tp")
printf "%-12s %-10s %10s %10s %10s %12s %12s %8s\n" mesh strategy "step (s)" "compute" "comm" \
  "mem (GiB)" "comm (GiB)" "compile"
for cfg in "${configs[@]}"; do
  set -- $cfg
  start=$(date +%s.%N)
  if ! "$opt" "$work/step.mlir" -mlir-print-op-on-diagnostic=false \
      -xf-grid="mesh=$1" -xf-propagate-sharding="strategy=$2 hardware=$hw" \
      -xf-report-sharding="hardware=$hw json=true output=$work/report.json" \
      -xf-partition -o /dev/null 2> "$work/err.txt"; then
    printf "%-12s %-10s %s\n" "$1" "$2" "error: $(head -c 150 "$work/err.txt" | head -1)"
    continue
  fi
  end=$(date +%s.%N)
  /usr/bin/python3 - "$work/report.json" "$1" "$2" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
mem = r["memory_bytes"]["total"] / 2**30
print(f"{sys.argv[2]:<12} {sys.argv[3]:<10} {r['step_seconds']:10.3f} {r['compute_seconds']:10.3f} "
      f"{r['communication_seconds']:10.3f} {mem:12.1f} {r['communication_bytes'] / 2**30:12.2f} "
      f"{float(sys.argv[5]) - float(sys.argv[4]):7.2f}s")
PY
done
