#!/usr/bin/env bash
# Every GPU check of the CUDA backend, in stages that fit short leases of a GPU
# machine (which has CUDA, PyTorch and python3 but no MLIR and no mpirun).
#
#   scripts/gpu_checks.sh prepare DIR         # here (build/ from scripts/setup.sh);
#                                             # writes DIR.tar.xz (~60 MB)
#   tar -C data -xJf DIR.tar.xz && scripts/gpu_checks.sh run DIR [options] [STAGE...]
#                                             # there, from the repository root
#
# run options:
#   --out OUTDIR   logs and results (default DIR/results-<time>); every check writes
#                  OUTDIR/<check>.log as it runs and appends to OUTDIR/summary.txt
#                  when it ends, so a run cut short leaves what ran
#   --pack FILE    after every check, OUTDIR packed into FILE (.tar.gz): one file to
#                  bring back from a machine that returns only a few files
#   --timeout S    scale every check's own timeout by S/100 (default 100)
#
# Stages (default: probe kernels backend tiny bench 124m), each well inside 10 minutes:
#   probe     GPU, driver, torch, compute-sanitizer (shardc_gpu_probe, nvidia-smi)
#   kernels   shardc_cuda_tests: every kernel against the CPU library
#   backend   shardc_cuda_backend_test: arenas, out-of-memory, call tables, graphs,
#             collective staging through the planned scratch
#   sanitize  compute-sanitizer memcheck, racecheck, synccheck on the attention,
#             norm, loss and optimizer tests
#   tiny      GPT-2 tiny steps, 20 steps on the GPU against the CPU backend (fp32
#             with the fused CE, the default, 1e-4; bf16 1e-2; unfused CE 1e-4;
#             --offload-activations on 4 layers, fp32 1e-4 and bf16 + full
#             recomputation 1e-2: the pinned host arena and the copy stream; BERT
#             tiny's masked LM 1e-4; every GPT-2 step with the padded vocabulary's
#             `classes`) and CUDA graphs against eager launches
#             (test/compiled/check_compiled.py gpu)
#   mpi       two ranks on the one GPU through --comm mpi (dp=2, tp=2), with the
#             bundled Open MPI's mpirun (NCCL needs two GPUs: not run)
#   export    shardc export output (GPT-2 tiny and LLaMA tiny with a 1000-token
#             vocabulary, trained two steps on the CPU by prepare) loaded by
#             transformers' AutoModelForCausalLM without changes; its loss equals
#             the step's validation loss (1e-5, bench/hf_export_check.py)
#   bench     attention and fused linear cross-entropy kernels against PyTorch
#   lce124m   the fused linear cross-entropy at GPT-2 124M's LM head over chunk sizes
#   124m      GPT-2 124M B=64 step against bench/torch_gpt2.py (bench/gpu_step.sh)
#   1.5b      GPT-2 1.5B B=8 step against bench/torch_gpt2.py
#   profile   --profile of the 124M step: ms per step per kernel family
# At the end, bench/gpu_results.py turns the figures into OUTDIR/gpu.jsonl (the rows
# of bench/results/gpu.jsonl) and prints them with their ratios.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode=${1:-}
dir=${2:-}
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
[[ ($mode == prepare || $mode == run) && -n $dir ]] || usage
shift 2
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
TRAIN=(--lr 2e-3 --min-lr 2e-4 --warmup 5 --decay-steps 20 --weight-decay 0.1)

if [[ $mode == prepare ]]; then
  set -e
  build=${BUILD_DIR:-$root/build}
  shardc=$build/tools/shardc/shardc
  tiny=$root/models/gpt2-tiny.mlir
  "$shardc" compile "$tiny" -o "$dir/tiny_fp32" "${TRAIN[@]}"
  "$shardc" compile "$tiny" -o "$dir/tiny_bf16" --precision bf16 "${TRAIN[@]}"
  "$shardc" compile "$tiny" -o "$dir/tiny_unfused" --no-fuse-linear-ce "${TRAIN[@]}"
  # One GEMM for Q, K and V: the packed attention (unpacked through scratch on the GPU).
  "$shardc" compile "$tiny" -o "$dir/tiny_fuse_qkv" --fuse-qkv "${TRAIN[@]}"
  "$shardc" compile "$tiny" -o "$dir/tiny_fuse_qkv_bf16" --fuse-qkv --precision bf16 "${TRAIN[@]}"
  # Activation offload: the pinned host arena and the copy stream (4 layers,
  # every activation offloaded), bf16 with full recomputation's layer inputs too.
  "$shardc" gen --preset gpt2-tiny --layers 4 -o "$dir/tiny4.mlir"
  "$shardc" compile "$dir/tiny4.mlir" -o "$dir/tiny_offload" --offload-activations \
    --offload-min-bytes 0 "${TRAIN[@]}"
  "$shardc" compile "$dir/tiny4.mlir" -o "$dir/tiny_offload_bf16" --precision bf16 \
    --recompute full --offload-activations --offload-min-bytes 0 "${TRAIN[@]}"
  # Masked LM (BERT tiny): token types, masked targets, the mask id row.
  "$shardc" gen --preset bert-tiny -o "$dir/bert.mlir"
  "$shardc" compile "$dir/bert.mlir" -o "$dir/tiny_bert" "${TRAIN[@]}"
  # shardc export -> Hugging Face (the export stage): two steps on the CPU, the
  # checkpoint exported with its config.json, beside it the tokens it trained on and
  # the step's validation loss. GPT-2 tiny with the padded 50257-row vocabulary;
  # LLaMA tiny with a 1000-token vocabulary (padded to 1024: its `classes` path too)
  # over the same text's ids modulo 1000, so its untied tables stay small (the
  # device tool carries 64 MiB a call).
  "$shardc" tokenize "$root/test/lit/Inputs/text.txt" -o "$dir/tokens-tiny.bin" >/dev/null
  "$shardc" gen --preset llama-tiny --vocab 1000 -o "$dir/llama.mlir"
  python3 -c 'import array, sys
b = open(sys.argv[1], "rb").read()
t = array.array("H", b[1024:])
assert sys.byteorder == "little"
open(sys.argv[2], "wb").write(b[:1024] + array.array("H", (x % 1000 for x in t)).tobytes())' \
    "$dir/tokens-tiny.bin" "$dir/tokens-vocab1000.bin"
  for m in gpt2:$tiny:tokens-tiny llama:$dir/llama.mlir:tokens-vocab1000; do
    IFS=: read -r name model tokens <<<"$m"
    hf=$dir/hf-$name work=$(mktemp -d)
    "$shardc" compile "$model" -o "$work/step" "${TRAIN[@]}" >/dev/null
    mkdir -p "$hf" && cp "$dir/$tokens.bin" "$hf/tokens.bin"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$work/step" \
      --data "$hf/tokens.bin" --val-data "$hf/tokens.bin" --steps 2 \
      --checkpoint-dir "$work/ckpt" --log-file "$work/log.jsonl" >/dev/null
    "$shardc" export "$work/ckpt" -o "$hf/model.safetensors" >/dev/null
    python3 -c 'import json, sys
v = [json.loads(l)["val_loss"] for l in open(sys.argv[1]) if "val_loss" in l][-1]
json.dump({"val_loss": v, "batch": 4, "seq": 32}, open(sys.argv[2], "w"))' \
      "$work/log.jsonl" "$hf/expected.json"
    rm -rf "$work"
  done
  rm -f "$dir/tokens-vocab1000.bin"
  "$shardc" compile "$tiny" -o "$dir/tiny_dp2" --mesh dp=2 --strategy dp "${TRAIN[@]}"
  "$shardc" compile "$tiny" -o "$dir/tiny_tp2" --mesh tp=2 --strategy tp "${TRAIN[@]}"
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
  tar -C "$(dirname "$dir")" -I "xz -T0" -cf "$dir.tar.xz" "$(basename "$dir")"
  echo "prepared $dir.tar.xz ($(du -h "$dir.tar.xz" | cut -f1)); on the GPU machine (carry it):"
  echo "  tar -C $(dirname "$dir") -xJf $dir.tar.xz && scripts/gpu_checks.sh run $dir"
  exit 0
fi

# run
out="" pack="" scale=100 stages=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift ;;
    --pack) pack=$2; shift ;;
    --timeout) scale=$2; shift ;;
    -h | --help) usage ;;
    -*) echo "gpu_checks.sh: unknown option '$1'" >&2; exit 2 ;;
    *) stages+=("$1") ;;
  esac
  shift
done
((${#stages[@]})) || stages=(probe kernels backend tiny bench 124m)
known=" probe kernels backend sanitize tiny mpi export bench lce124m 124m 1.5b profile "
for s in "${stages[@]}"; do
  [[ $known == *" $s "* ]] || { echo "gpu_checks.sh: unknown stage '$s' (known:$known)" >&2; exit 2; }
done
py=${PYTHON:-python3}
stepdir=$dir
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-checks.XXXXXX")
trap 'rm -rf "$work"' EXIT # scratch; every log goes to $out
libdir=$work/lib
mkdir -p "$libdir"
# shellcheck source=bench/gpu_libs.sh
source "$root/bench/gpu_libs.sh"
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${out:-$dir/results-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" && out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1
export dir out py root sanitizer bundle # for the functions check runs in a child bash
packup() {
  [[ -n $pack ]] && tar -C "$(dirname "$out")" -czf "$pack.tmp" "$(basename "$out")" && mv "$pack.tmp" "$pack"
  return 0
}
# check NAME SECONDS command...: runs under its own timeout, logs to $out/NAME.log,
# appends PASS/FAIL/SKIP/TIMEOUT with its duration to $out/summary.txt, packs.
check() {
  local name=$1 secs=$(($2 * scale / 100)) rc t0 t1 verdict
  shift 2
  echo "== $name (timeout ${secs}s): $*"
  t0=$(date +%s)
  if declare -F "$1" >/dev/null; then # a function of this script: run it in a child bash
    timeout -k 10 "$secs" bash -c "$(declare -f probe tiny_gpu mpirun_bin); $(printf '%q ' "$@")" \
      >"$out/$name.log" 2>&1
  else
    timeout -k 10 "$secs" "$@" >"$out/$name.log" 2>&1
  fi
  rc=$?
  t1=$(date +%s)
  tail -8 "$out/$name.log"
  case $rc in 0) verdict=PASS ;; 77) verdict=SKIP ;; 124 | 137) verdict=TIMEOUT ;; *) verdict="FAIL($rc)" ;; esac
  printf '%-8s %-28s %4ss\n' "$verdict" "$name" $((t1 - t0)) | tee -a "$out/summary.txt"
  packup
}
echo "gpu_checks: stages ${stages[*]}; logs in $out$([[ -n $pack ]] && echo ", packed to $pack")"
for b in shardc_cuda_tests shardc_cuda_backend_test attention_bench linear_ce_bench tiny_fp32; do
  [[ -x $dir/$b ]] && { resolve_libs "$dir/$b" >/dev/null || echo "warning: $b still misses libraries"; }
done
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
# The bundled Open MPI's mpirun (bench/build_gpu_steps.sh packs it) for two ranks.
mpirun_bin() {
  [[ -n $bundle && -x $bundle/ompi/bin/mpirun ]] && { echo "$bundle/ompi/bin/mpirun"; return; }
  command -v mpirun || true
}
tiny_gpu() { # name exe rtol [ranks mpirun]
  "$py" "$root/test/compiled/check_compiled.py" gpu --exe "$dir/$2" --mpirun "${5:-none}" \
    --ranks "${4:-1}" --gpu-probe "$dir/shardc_gpu_probe" --data "$dir/tokens.bin" \
    --workdir "$out/$1" --rtol "$3"
}
probe() {
  "$dir/shardc_gpu_probe"
  local rc=$?
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
  "$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")' || true
  echo "compute-sanitizer: ${sanitizer:-absent}; mpirun: $(mpirun_bin)"
  return $rc
}

for stage in "${stages[@]}"; do
  case $stage in
    probe) check probe 60 probe ;;
    kernels) check kernel-tests 420 "$dir/shardc_cuda_tests" ;;
    backend) check backend-test 180 "$dir/shardc_cuda_backend_test" ;;
    sanitize)
      if [[ -z $sanitizer ]]; then
        echo "SKIP     sanitize (no compute-sanitizer)" | tee -a "$out/summary.txt"
      else
        filter='*Attention*:*Norm*:*CrossEntropy*:*Loss*:*AdamW*:*StepScalars*'
        # racecheck is ~50x slower: the tensor-core attention (the kernels that
        # share tiles through shared memory) up to S = 200, not the f32 CUDA-core
        # shapes (over a minute under racecheck at S = 130; memcheck and synccheck
        # run them).
        race='*Norm*:*CrossEntropy*:*Loss*:*AdamW*:*StepScalars*:TensorCore/*-TensorCore/*S1024*'
        for tool in memcheck racecheck synccheck; do
          f=$filter
          [[ $tool == racecheck ]] && f=$race
          check "sanitize-$tool" 170 "$sanitizer" --tool "$tool" --error-exitcode 3 \
            "$dir/shardc_cuda_tests" --gtest_filter="$f"
        done
      fi
      ;;
    tiny)
      check step-fp32 120 tiny_gpu step-fp32 tiny_fp32 1e-4
      check step-bf16 120 tiny_gpu step-bf16 tiny_bf16 1e-2
      check step-unfused-ce 120 tiny_gpu step-unfused-ce tiny_unfused 1e-4
      check step-offload 120 tiny_gpu step-offload tiny_offload 1e-4
      check step-offload-bf16 120 tiny_gpu step-offload-bf16 tiny_offload_bf16 1e-2
      check step-bert 120 tiny_gpu step-bert tiny_bert 1e-4
      check step-fuse-qkv 120 tiny_gpu step-fuse-qkv tiny_fuse_qkv 1e-4
      check step-fuse-qkv-bf16 120 tiny_gpu step-fuse-qkv-bf16 tiny_fuse_qkv_bf16 1e-2
      ;;
    mpi)
      m=$(mpirun_bin)
      if [[ -n $bundle && $m == "$bundle"/* ]]; then # the bundled one: its libraries and PMIx plugins
        export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$bundle/lib OMPI_MCA_btl=self,vader \
          PMIX_MCA_mca_base_component_path=$bundle/ompi/pmix-plugins
      fi
      if [[ -z $m ]]; then
        echo "SKIP     mpi (no mpirun, none bundled)" | tee -a "$out/summary.txt"
      else
        check step-dp2-mpi 150 tiny_gpu step-dp2-mpi tiny_dp2 1e-4 2 "$m"
        check step-tp2-mpi 150 tiny_gpu step-tp2-mpi tiny_tp2 1e-4 2 "$m"
      fi
      ;;
    export)
      for m in gpt2 llama; do
        check "export-hf-$m" 120 "$py" "$root/bench/hf_export_check.py" "$dir/hf-$m" \
          "$dir/hf-$m/tokens.bin"
      done
      ;;
    bench)
      check attention-bench 120 "$dir/attention_bench"
      check attention-torch 120 "$py" "$root/bench/torch_attention.py"
      check linear-ce-bench 120 "$dir/linear_ce_bench"
      check linear-ce-torch 240 "$py" "$root/bench/torch_linear_ce.py"
      ;;
    lce124m)
      # The fused LM head + CE at GPT-2 124M B=64 (65536 tokens, 768, 50304):
      # chunk budgets of 64 Mi (the default), 256 Mi and 512 Mi f32 logits, and
      # chunking by vocabulary instead of rows.
      for c in 67108864 268435456 536870912; do
        check "lce124m-chunk$c" 60 "$dir/linear_ce_bench" --tokens 65536 --hidden 768 \
          --vocab 50304 --chunk-elems $c
      done
      check lce124m-by-vocab 60 "$dir/linear_ce_bench" --tokens 65536 --hidden 768 --vocab 50304 \
        --chunking vocab
      ;;
    124m)
      check gpt2-124m 420 bash "$root/bench/gpu_step.sh" "$dir" --only step_124m_b64 --steps 20 \
        --warmup 5 --timeout 200 --out "$out/gpt2-124m"
      ;;
    1.5b)
      check gpt2-1.5b 480 bash "$root/bench/gpu_step.sh" "$dir" --only step_1p5b_b8 --steps 10 \
        --warmup 3 --timeout 230 --out "$out/gpt2-1.5b"
      ;;
    profile)
      check profile-124m 200 "$dir/step_124m_b64" --data "$dir/tokens.bin" --steps 4 --device cuda \
        --profile
      ;;
  esac
done
# The figures as bench/results/gpu.jsonl rows (shardc against the same job's baseline).
"$py" "$root/bench/gpu_results.py" "$out" >"$out/gpu.jsonl" 2>"$out/gpu-figures.txt" && packup
echo
echo "== summary ($out)"
cat "$out/summary.txt"
[[ -s $out/gpu-figures.txt ]] && { echo "== figures (gpu.jsonl rows: what, shardc, baseline, unit, ratio)"; cat "$out/gpu-figures.txt"; }
exit 0
