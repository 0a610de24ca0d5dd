#!/usr/bin/env bash
# The main job as it stands: set up and build, generate GPT-2 124M (summary:
# parameters, FLOPs, memory) and verify it with shardc-opt, tokenize a real
# text corpus (Debian's fortunes) with GPT-2's BPE, then synthesize the
# training step of GPT-2 tiny (autodiff + AdamW) and train it for 300 steps on
# the CPU with the reference executor. The loss starts at ln(50304) = 10.83.
# Then: the sharding report of the GPT-2 124M step under ZeRO-1 x tensor
# parallelism, and 20 sharded steps of GPT-2 tiny with every rank simulated.
# Finally the compiled path: GPT-2 tiny compiled for a 2x2 mesh (ZeRO-1 x TP)
# into an executable and trained by 4 MPI ranks on the CPU, with a
# checkpoint, then the checkpoint exported to one GPT-2 safetensors file;
# and a pipeline: GPT-2 tiny (4 layers) on pp=2 x dp=2 with 1F1B over 4
# micro-batches, its schedule drawn, 50 steps by 4 MPI ranks.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"

shardc="$build/tools/shardc/shardc"
out="$root/data"
mkdir -p "$out"

echo "== shardc gen --preset gpt2-124m"
"$shardc" gen --preset gpt2-124m --summary -o "$out/gpt2-124m.mlir"
echo "== shardc-opt (parse + verify)"
"$build/tools/shardc-opt/shardc-opt" "$out/gpt2-124m.mlir" -o /dev/null && echo "verified"
echo "== shardc tokenize (Debian fortunes corpus)"
find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' | sort |
  xargs "$shardc" tokenize -o "$out/fortunes.bin"
echo "== shardc train: GPT-2 tiny, 300 steps of 4x32 tokens, AdamW, CPU"
"$shardc" gen --preset gpt2-tiny -o "$out/gpt2-tiny.mlir"
/usr/bin/time -f "wall time %e s, peak RSS %M KiB" \
  "$shardc" train "$out/gpt2-tiny.mlir" --data "$out/fortunes.bin" --seed 1234 \
    --steps 300 --lr 2e-3 --min-lr 2e-4 --warmup 20 --weight-decay 0.1 \
    --log-json "$out/train-log.jsonl" --save "$out/gpt2-tiny-trained.safetensors"
echo "== shardc explain: GPT-2 124M step, ZeRO-1 x Megatron TP on dp=4,tp=2, modelled on 8x H100"
"$shardc" explain "$out/gpt2-124m.mlir" --mesh dp=4,tp=2 --strategy zero1+tp |
  sed -n '/^collectives per step/,$p'
echo "== shardc train --mesh dp=2,tp=2 --strategy zero1+tp: GPT-2 tiny, 20 steps, every rank simulated"
"$shardc" train "$out/gpt2-tiny.mlir" --data "$out/fortunes.bin" --seed 1234 --steps 20 \
  --lr 2e-3 --min-lr 2e-4 --warmup 20 --weight-decay 0.1 --mesh dp=2,tp=2 --strategy zero1+tp |
  tail -3
echo "== shardc compile: GPT-2 tiny for dp=2 x tp=2 (ZeRO-1 x TP) -> an MPI executable"
"$shardc" compile "$out/gpt2-tiny.mlir" --mesh dp=2,tp=2 --strategy zero1+tp --hardware cpu-mpi \
  --lr 2e-3 --min-lr 2e-4 --warmup 20 --decay-steps 300 --weight-decay 0.1 -o "$out/gpt2-tiny-step"
"$out/gpt2-tiny-step" --describe | sed -n 1,16p
echo "== mpirun -np 4: 300 steps on the CPU, checkpoint every 100 (on a cluster: srun or mpirun"
echo "   with one rank per device and the same flags)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1
rm -rf "$out/gpt2-tiny-ckpt"
# Validation text the model never trains on: Genesis 1-2 (Debian's bible-kjv).
bible Gen1:1-2:25 | sed 's/^[^ ]* //' > "$out/genesis.txt"
"$shardc" tokenize "$out/genesis.txt" -o "$out/genesis.bin"
mpirun -np 4 "$out/gpt2-tiny-step" --data "$out/fortunes.bin" --steps 300 --seed 1234 \
  --val-data "$out/genesis.bin" --eval-every 25 --eval-batches 4 \
  --checkpoint-dir "$out/gpt2-tiny-ckpt" --checkpoint-every 100 --log-file "$out/compiled-log.jsonl" |
  awk 'NR <= 2 || /^step +(1|50|100|150|200|250|300)\// || /^eval|^done|^memory/'
echo "== shardc plot: the run's loss and validation loss -> $out/loss.svg"
"$shardc" plot "$out/compiled-log.jsonl" -o "$out/loss.svg" --smooth 20 \
  --title "GPT-2 tiny, compiled for dp=2 x tp=2 (4 MPI ranks, CPU): fortunes, validation on Genesis"
echo "== shardc export: the last checkpoint as one GPT-2 safetensors file"
"$shardc" export "$out/gpt2-tiny-ckpt" -o "$out/gpt2-tiny-compiled.safetensors"
echo "== pipeline: GPT-2 tiny (4 layers) on pp=2 x dp=2 (ZeRO-1), 1F1B over 4 micro-batches"
"$shardc" gen --preset gpt2-tiny --layers 4 -o "$out/gpt2-tiny-4l.mlir"
"$shardc" explain "$out/gpt2-tiny-4l.mlir" --mesh pp=2,dp=2 --strategy pp+zero1 \
  --micro-batches 4 --hardware cpu-mpi | sed -n '/^pipeline:/,/^  compute per stage/p'
"$shardc" compile "$out/gpt2-tiny-4l.mlir" --mesh pp=2,dp=2 --strategy pp+zero1 --micro-batches 4 \
  --hardware cpu-mpi --lr 2e-3 --min-lr 2e-4 --warmup 10 --decay-steps 50 --weight-decay 0.1 \
  -o "$out/gpt2-tiny-pp-step"
mpirun -np 4 "$out/gpt2-tiny-pp-step" --data "$out/fortunes.bin" --steps 50 --seed 1234 |
  awk 'NR <= 2 || /^step +(1|10|20|30|40|50)\// || /^done/'
