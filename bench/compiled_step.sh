#!/usr/bin/env bash
# Compiled training steps on the CPU (issue 5's numbers):
#  1. compile time of GPT-2 1.5B for dp=8 x tp=8 (propagation, partitioning,
#     memory planning, rt and LLVM lowering, object file, link);
#  2. planned peak memory per rank (the arenas) against the measured peak RSS
#     of each rank, for GPT-2 tiny on dp=2 x tp=2 and a wider GPT-2 on dp=2;
#  3. the executable's step time against the sum of its kernel and collective
#     times (--profile): the runtime's own overhead;
#  4. scheduling: the same dp=2 step with buckets + start/wait (default)
#     against blocking per-gradient all-reduces (--no-overlap --bucket-mb 0).
# Usage: bench/compiled_step.sh [build-dir]   (after scripts/setup.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
shardc="$build/tools/shardc/shardc"
work="${TMPDIR:-/tmp}/shardc-bench-compiled"
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1

tokens="$work/fortunes.bin"
[[ -f $tokens ]] || find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' | sort |
  xargs "$shardc" tokenize -o "$tokens" >/dev/null

echo "== 1. compile time: GPT-2 1.5B (B=64, T=1024), dp=8 x tp=8 (dp+tp), bf16"
"$shardc" gen --preset gpt2-1.5b --batch 64 -o "$work/gpt2-1.5b.mlir" >/dev/null
/usr/bin/time -f "wall %e s, max RSS %M KiB" "$shardc" compile "$work/gpt2-1.5b.mlir" \
  --mesh dp=8,tp=8 --strategy dp+tp --precision bf16 -o "$work/step-1.5b" 2>&1 | tail -3

run() { # name ranks model mesh strategy [compile flags...]
  local name=$1 np=$2 model=$3 mesh=$4 strategy=$5
  shift 5
  local args=(compile "$model" -o "$work/step-$name" --hardware cpu-mpi "$@")
  [[ -n $mesh ]] && args+=(--mesh "$mesh" --strategy "$strategy")
  "$shardc" "${args[@]}" >/dev/null
  echo "-- $name: $np ranks, mesh ${mesh:-one rank} ${strategy}"
  mpirun -np "$np" "$work/step-$name" --data "$tokens" --steps 10 --profile |
    grep -E "^step .*= kernels|^memory per rank|^done"
}

echo "== 2+3. planned memory vs peak RSS, step time vs kernels + collectives"
"$shardc" gen --preset gpt2-tiny -o "$work/gpt2-tiny.mlir" >/dev/null
"$shardc" gen gpt2 --hidden 256 --layers 4 --heads 8 --seq 256 --batch 8 -o "$work/gpt2-wide.mlir" >/dev/null
run tiny-1 1 "$work/gpt2-tiny.mlir" "" ""
run tiny-dp2-tp2 4 "$work/gpt2-tiny.mlir" dp=2,tp=2 dp+tp
run wide-1 1 "$work/gpt2-wide.mlir" "" ""
run wide-dp2 2 "$work/gpt2-wide.mlir" dp=2 dp
run wide-zero3 2 "$work/gpt2-wide.mlir" dp=2 zero3
echo "== 4. scheduling: buckets + overlap (default) against blocking per-gradient all-reduces"
run wide-dp2-blocking 2 "$work/gpt2-wide.mlir" dp=2 dp --no-overlap --bucket-mb 0
run tiny-dp2 2 "$work/gpt2-tiny.mlir" dp=2 dp
run tiny-dp2-blocking 2 "$work/gpt2-tiny.mlir" dp=2 dp --no-overlap --bucket-mb 0
# The resident memory of a rank that allocates no arenas: the binary, its
# libraries (OpenBLAS, OpenMP, MPI) and MPI's buffers.
echo "-- baseline: a 1-rank binary that exits before allocating (--describe)"
/usr/bin/time -f "max RSS %M KiB" "$work/step-tiny-1" --describe >/dev/null
