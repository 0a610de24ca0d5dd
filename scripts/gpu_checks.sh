#!/usr/bin/env bash
# Every GPU check of the CUDA backend in one command, for a session that is lent a
# GPU (the GPU machine has CUDA, PyTorch and python3 but no MLIR and no mpirun).
#
#   scripts/gpu_checks.sh prepare data/gpu-checks   # here (build/ from scripts/setup.sh);
#                                                   # writes data/gpu-checks.tar.xz (~28 MB)
#   tar -C data -xJf data/gpu-checks.tar.xz && scripts/gpu_checks.sh run data/gpu-checks
#                                                   # there, from the repository root
#
# prepare: compiles GPT-2 tiny steps (fp32, bf16, fused linear cross-entropy) and the
#   GPT-2 124M / 1.5B benchmark steps (bench/build_gpu_steps.sh, which also packs the
#   runtime libraries), copies the GPU test binaries and the token file into DIR.
# run: 1. the kernel tests against the CPU library (shardc_cuda_tests) and the backend
#   test; 2. each tiny step on the GPU against the CPU backend for 20 steps (fp32
#   1e-4, bf16 1e-2) and CUDA graphs against eager launches (check_compiled.py gpu);
#   3. the benchmarks: bench/gpu_step.sh (shardc vs PyTorch, tokens/s and MFU), the
#   attention and fused linear cross-entropy kernels against PyTorch.
# Everything is logged under DIR/results-*; a summary is printed last.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode=${1:-}
dir=${2:-}
[[ ($mode == prepare || $mode == run) && -n $dir ]] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
TRAIN=(--lr 2e-3 --min-lr 2e-4 --warmup 5 --decay-steps 20 --weight-decay 0.1)

if [[ $mode == prepare ]]; then
  set -e
  build=${BUILD_DIR:-$root/build}
  shardc=$build/tools/shardc/shardc
  "$shardc" compile "$root/models/gpt2-tiny.mlir" -o "$dir/tiny_fp32" "${TRAIN[@]}"
  "$shardc" compile "$root/models/gpt2-tiny.mlir" -o "$dir/tiny_bf16" --precision bf16 "${TRAIN[@]}"
  "$shardc" compile "$root/models/gpt2-tiny.mlir" -o "$dir/tiny_fused" --fuse-linear-ce "${TRAIN[@]}"
  for t in test/cuda/shardc_cuda_tests test/cuda/shardc_cuda_backend_test test/cuda/shardc_gpu_probe \
           bench/attention_bench bench/linear_ce_bench; do
    cp "$build/$t" "$dir/"
  done
  "$root/bench/build_gpu_steps.sh" -o "$dir" # 124M/1.5B steps, steps.tsv, tokens.bin, libraries
  # What travels: stripped binaries, packed (the device tool carries 64 MiB a call).
  rm -f "$dir"/*.o "$dir"/*.mlir
  for f in "$dir"/*; do
    [[ -x $f && ! -d $f && $f != *.sh ]] && strip "$f" 2>/dev/null || true
  done
  tar -C "$(dirname "$dir")" -cJf "$dir.tar.xz" "$(basename "$dir")"
  echo "prepared $dir.tar.xz ($(du -h "$dir.tar.xz" | cut -f1)); on the GPU machine (carry it):"
  echo "  tar -C $(dirname "$dir") -xJf $dir.tar.xz && scripts/gpu_checks.sh run $dir"
  exit 0
fi

# run
py=${PYTHON:-python3}
stepdir=$dir
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-checks.XXXXXX")
trap 'rm -rf "$work"' EXIT # scratch; every log goes to $out
libdir=$work/lib
mkdir -p "$libdir"
# shellcheck source=bench/gpu_libs.sh
source "$root/bench/gpu_libs.sh"
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=$dir/results-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
summary=()
check() { # name command... : runs, logs, records PASS/FAIL/SKIP
  local name=$1 rc
  shift
  echo "== $name"
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  tail -5 "$out/$name.log"
  case $rc in 0) summary+=("PASS $name") ;; 77) summary+=("SKIP $name") ;; *) summary+=("FAIL($rc) $name") ;; esac
}
for b in shardc_cuda_tests shardc_cuda_backend_test attention_bench linear_ce_bench tiny_fp32 tiny_bf16 tiny_fused; do
  resolve_libs "$dir/$b" >/dev/null || echo "warning: $b still misses libraries"
done
check gpu-probe "$dir/shardc_gpu_probe"
check kernel-tests "$dir/shardc_cuda_tests"
check backend-test "$dir/shardc_cuda_backend_test"
for s in fp32:1e-4 bf16:1e-2 fused:1e-4; do
  name=${s%%:*} rtol=${s#*:}
  check "step-$name" "$py" "$root/test/compiled/check_compiled.py" gpu --exe "$dir/tiny_$name" \
    --mpirun none --gpu-probe "$dir/shardc_gpu_probe" --data "$dir/tokens.bin" \
    --workdir "$out/step-$name" --rtol "$rtol"
done
check attention-bench "$dir/attention_bench"
check attention-torch "$py" "$root/bench/torch_attention.py"
check linear-ce-bench "$dir/linear_ce_bench"
check linear-ce-torch "$py" "$root/bench/torch_linear_ce.py"
check gpt2-vs-torch bash "$root/bench/gpu_step.sh" "$dir" --steps 30 --warmup 10 --out "$out/gpt2"
echo
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
