#!/usr/bin/env bash
# Training-step benchmark on the CPU through the reference executor:
#   - forward + loss alone (@forward), best of N runs     -> t_fwd
#   - forward + backward (@grad_step from -xf-autodiff)   -> t_fb
#   - the whole step (shardc train: + clipping, AdamW), mean of N steps after one warm-up step
# and the ratio backward / forward = (t_fb - t_fwd) / t_fwd (expected near 2:
# every GEMM of the forward has two in the backward).
#
#   bench/train_step.sh <preset> <tokens.bin> [runs]
# e.g. bench/train_step.sh gpt2-tiny /tmp/f.bin 5
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
preset="${1:?preset}"; data="${2:?tokens.bin}"; runs="${3:-5}"
shardc="$build/tools/shardc/shardc"; opt="$build/tools/shardc-opt/shardc-opt"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

"$shardc" gen --preset "$preset" --dropout 0 -o "$work/model.mlir"
"$opt" "$work/model.mlir" -xf-autodiff=output=grad_step -o "$work/grad.mlir"
best() { sed -n 's/^tokens \([0-9]*\)  time \([0-9.]*\) s.*/\2/p'; }
t_fwd=$("$shardc" run "$work/grad.mlir" --function forward --data "$data" --repeat "$runs" | best)
t_fb=$("$shardc" run "$work/grad.mlir" --function grad_step --data "$data" --repeat "$runs" | best)
"$shardc" train "$work/model.mlir" --data "$data" --steps $((runs + 1)) --log-json "$work/log.jsonl" > /dev/null
/usr/bin/python3 - "$work/log.jsonl" "$t_fwd" "$t_fb" "$preset" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1])][1:]
tokens = None
t_fwd, t_fb, preset = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rates = [s["tokens_per_s"] for s in steps]
print(f"{preset}: forward {t_fwd:.4f} s, forward+backward {t_fb:.4f} s, "
      f"backward/forward {(t_fb - t_fwd) / t_fwd:.2f}")
mean_rate = sum(rates) / len(rates)
print(f"{preset}: whole training step (shardc train, mean of {len(rates)} steps): "
      f"{mean_rate:.0f} tokens/s")
PY
