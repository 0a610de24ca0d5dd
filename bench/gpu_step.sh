#!/usr/bin/env bash
# The GPU benchmark: shardc's compiled training steps against PyTorch on the same
# GPT-2, the same batch, the same tokens, in one job on one GPU.
#
#   bench/gpu_step.sh STEPDIR [--steps N] [--warmup W] [--only NAME,...] [--out DIR]
#       [--step-args "--device cuda"] [--torch-args "..."] [--no-torch] [--no-shardc]
#       [--peak-tflops 989] [--timeout S] [--python python3]
#
# STEPDIR is what bench/build_gpu_steps.sh wrote (on a machine with MLIR): the step
# binaries, steps.tsv (name, model, B, T, precision, parameters, FLOPs/token, planned
# memory), tokens.bin (the token file both sides read) and runtime-libs.tar.xz (the
# shared libraries the binaries were linked with: Open MPI, OpenBLAS, ...).
#
# For each step in steps.tsv:
#   1. shardc: runs `STEPDIR/NAME --data tokens.bin --steps W+N <step-args>` as one
#      rank (no mpirun needed: an isolated Open MPI singleton) through
#      bench/step_timer.py, which times steps W+1..W+N by the arrival of their log
#      lines (each printed after the loss is read back) and samples nvidia-smi;
#   2. torch: bench/torch_gpt2.py on the same model, B, T and token file, W warm-up +
#      N timed steps (torch.compile, SDPA flash, fused AdamW, bf16 autocast);
#   3. prints both RESULT lines, then a table: tokens/s, MFU (6N + 6LhT per token, the
#      same N for both), median step time, GPU memory (nvidia-smi, max - idle), and
#      the ratio shardc/torch.
# Libraries the binaries need and this machine lacks are taken from
# runtime-libs.tar.xz, the CUDA toolkit (/usr/local/cuda) or the pip nvidia-*
# packages next to PyTorch, only for the missing ones. A binary that steps.tsv says
# links no CUDA library, or without the `--device` flag, is reported and skipped
# (FORCE_SHARDC=1 runs the first kind anyway).
# Everything goes to --out (default STEPDIR/results-<time>): logs, results.txt.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
[[ $# -ge 1 && $1 != -* ]] || usage
stepdir=$(cd "$1" && pwd) || exit 2
shift
steps=30 warmup=10 only="" out="" step_args="--device cuda" torch_args="" run_torch=1
run_shardc=1 peak=989 timeout=280 py=${PYTHON:-python3}
while [[ $# -gt 0 ]]; do
  case $1 in
    --steps) steps=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --only) only=$2; shift ;;
    --out) out=$2; shift ;;
    --step-args) step_args=$2; shift ;;
    --torch-args) torch_args=$2; shift ;;
    --no-torch) run_torch=0 ;;
    --no-shardc) run_shardc=0 ;;
    --peak-tflops) peak=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --python) py=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "gpu_step.sh: unknown option '$1'" >&2; usage ;;
  esac
  shift
done
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
manifest=$stepdir/steps.tsv
[[ -f $manifest ]] || { echo "error: $manifest missing (run bench/build_gpu_steps.sh)" >&2; exit 2; }
out=${out:-$stepdir/results-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" && out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-step.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$out/results.txt
: >"$results"

echo "== machine"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -1)
else
  echo "no nvidia-smi: no GPU memory sampling"; gpu_name=""
fi
"$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' || echo "warning: $py has no torch"
echo "steps: $warmup warm-up + $steps timed; shardc args: $step_args; peak ${peak} TFLOP/s"

# -- tokens: the file the binaries were built with, else random ids (llm.c format)
tokens=$stepdir/tokens.bin
if [[ ! -f $tokens ]]; then
  tokens=$work/random-tokens.bin
  "$py" - "$tokens" <<'EOF' || exit 2
import sys, numpy as np
n = 1 << 21
h = np.zeros(256, dtype="<i4"); h[:3] = (20240520, 1, n)
ids = np.random.default_rng(1234).integers(0, 50257, n).astype("<u2")
with open(sys.argv[1], "wb") as f:
    f.write(h.tobytes()); f.write(ids.tobytes())
EOF
  echo "tokens: $n random ids -> $tokens"
else
  echo "tokens: $tokens"
fi

# -- missing shared libraries: a directory of links to the first place each is found
libdir=$work/lib
mkdir -p "$libdir"
# Library resolution and the singleton environment (shared with scripts/gpu_checks.sh).
# shellcheck source=bench/gpu_libs.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu_libs.sh"

declare -A S_TPS S_MFU S_MS S_MEM S_NOTE T_TPS T_MFU T_MS T_MEM T_NOTE
names=()
get() { # RESULT-line key
  sed -n "s/.*[[:space:]]$2=\([^[:space:]]*\).*/\1/p" <<<"$1" | tail -1
}
while IFS=$'\t' read -r -u 3 name model B T precision params fpt planned_mib _cs _ls _devflag cuda_libs _rest; do
  [[ $name == name || -z $name || $name == \#* ]] && continue
  if [[ -n $only && ",$only," != *",$name,"* ]]; then continue; fi
  names+=("$name")
  bin=$stepdir/$name
  echo
  echo "== $name: GPT-2 $model, B=$B, T=$T, $precision, N=$params, FLOPs/token $fpt, planned $planned_mib MiB"
  if ((run_shardc)); then
    S_NOTE[$name]=""
    if [[ ! -x $bin ]]; then
      S_NOTE[$name]="no binary $bin"
    elif [[ $step_args == *"--device cuda"* && ${cuda_libs:-} == none && -z ${FORCE_SHARDC:-} ]]; then
      # Linked without the CUDA backend: --device cuda fails, or (a main from before
      # the flag) is ignored and the step runs on the CPU. FORCE_SHARDC=1 runs it anyway
      # (e.g. a binary with CUDA linked statically).
      S_NOTE[$name]="steps.tsv: the binary links no CUDA library (shardc built without the CUDA backend); FORCE_SHARDC=1 to run anyway"
    elif [[ ! -x $bin ]]; then
      S_NOTE[$name]="no binary $bin"
    elif ! resolve_libs "$bin"; then
      S_NOTE[$name]="missing shared libraries (see above)"
    elif [[ $step_args == *--device* ]] &&
      ! grep -q -- '--device' <<<"$(LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$bin" --help 2>&1)"; then
      S_NOTE[$name]="binary has no --device flag (linked before the CUDA backend): rebuild with bench/build_gpu_steps.sh"
    fi
    if [[ -n ${S_NOTE[$name]} ]]; then
      echo "SKIP shardc $name: ${S_NOTE[$name]}"
    else
      # shellcheck disable=SC2086
      LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$py" "$bench/step_timer.py" \
        --kind shardc --name "$name" --model "$model" --warmup "$warmup" \
        --flops-per-token "$fpt" --peak-tflops "$peak" --planned-mib "$planned_mib" \
        --log "$out/$name.log" --timeout "$timeout" -- \
        "$bin" --data "$tokens" --steps $((warmup + steps)) $step_args </dev/null |
        tee "$work/shardc.out"
      r=$(grep '^RESULT ' "$work/shardc.out" | tail -1)
      if [[ -n $r ]]; then
        [[ -n $gpu_name && $r == *device=unknown* ]] && r=${r/device=unknown/device=${gpu_name// /_}}
        echo "$r" >>"$results"
        S_TPS[$name]=$(get "$r" tokens_per_s) S_MFU[$name]=$(get "$r" mfu)
        S_MS[$name]=$(get "$r" step_ms) S_MEM[$name]=$(get "$r" peak_mem_gib)
      else
        S_NOTE[$name]=$(grep '^FAIL ' "$work/shardc.out" | tail -1)
        S_NOTE[$name]=${S_NOTE[$name]:-failed (see $out/$name.log)}
      fi
    fi
  fi
  if ((run_torch)); then
    # shellcheck disable=SC2086
    "$py" "$bench/step_timer.py" --kind passthrough --name "torch-$name" --echo some \
      --log "$out/torch-$name.log" --timeout "$timeout" -- \
      "$py" "$bench/torch_gpt2.py" --model "$model" --batch "$B" --seq "$T" --steps "$steps" \
      --warmup-steps "$warmup" --data "$tokens" --peak-tflops "$peak" \
      --json "$out/torch-$name.json" $torch_args </dev/null | tee "$work/torch.out"
    r=$(grep '^RESULT ' "$work/torch.out" | tail -1)
    if [[ -n $r ]]; then
      m=$(sed -n 's/^MEM .*smi_peak_gib=\([^ ]*\).*/\1/p' "$work/torch.out" | tail -1)
      echo "$r smi_peak_gib=${m:-nan}" >>"$results"
      T_TPS[$name]=$(get "$r" tokens_per_s) T_MFU[$name]=$(get "$r" mfu)
      T_MS[$name]=$(get "$r" step_ms) T_MEM[$name]=${m:-nan}
      [[ ${T_MEM[$name]} == nan ]] && T_MEM[$name]="$(get "$r" peak_mem_gib)*"
      [[ $(get "$r" fallbacks) != 0 ]] && T_NOTE[$name]="fallbacks: see $out/torch-$name.log"
    else
      T_NOTE[$name]="failed (see $out/torch-$name.log)"
      tail -5 "$out/torch-$name.log"
    fi
  fi
done 3<"$manifest"

echo
{
  echo "== summary (${gpu_name:-no GPU name}; $warmup warm-up + $steps timed steps; MFU of $peak TFLOP/s; memory: nvidia-smi max - idle, * = torch allocator peak)"
  printf '%-16s %-6s | %12s %7s %9s %8s | %12s %7s %9s %8s | %14s\n' step model \
    "shardc tok/s" MFU "step ms" "mem GiB" "torch tok/s" MFU "step ms" "mem GiB" "shardc/torch"
  for n in "${names[@]}"; do
    model=$(awk -F'\t' -v n="$n" '$1 == n {print $2}' "$manifest")
    ratio=-
    if [[ -n ${S_TPS[$n]:-} && -n ${T_TPS[$n]:-} ]]; then
      ratio=$(awk -v a="${S_TPS[$n]}" -v b="${T_TPS[$n]}" 'BEGIN {printf "%.3f", a / b}')
    fi
    pct() { [[ -n ${1:-} ]] && awk -v m="$1" 'BEGIN {printf "%.1f%%", 100 * m}' || echo -; }
    printf '%-16s %-6s | %12s %7s %9s %8s | %12s %7s %9s %8s | %14s\n' "$n" "$model" \
      "${S_TPS[$n]:--}" "$(pct "${S_MFU[$n]:-}")" "${S_MS[$n]:--}" "${S_MEM[$n]:--}" \
      "${T_TPS[$n]:--}" "$(pct "${T_MFU[$n]:-}")" "${T_MS[$n]:--}" "${T_MEM[$n]:--}" "$ratio"
    [[ -n ${S_NOTE[$n]:-} ]] && echo "    shardc: ${S_NOTE[$n]}"
    [[ -n ${T_NOTE[$n]:-} ]] && echo "    torch: ${T_NOTE[$n]}"
  done
  echo "RESULT lines: $results; logs: $out"
} | tee "$out/summary.txt"
