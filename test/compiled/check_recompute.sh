#!/usr/bin/env bash
# Recomputation changes no number: the same model compiled with
# --recompute none and --recompute full (and selective) trains 3 steps under
# mpirun to byte-identical checkpoints and identical logged losses, while the
# planned workspace per rank shrinks.
# usage: check_recompute.sh SHARDC MPIRUN MODEL DATA WORKDIR RANKS SHRINK [compile args...]
# SHRINK: "smaller" (full must plan less workspace than none), "no-larger"
# (where the peak lies outside the layers, e.g. at the logits of a tiny model)
# or "report" (values only; the workspaces are printed).
set -euo pipefail
shardc=$1 mpirun=$2 model=$3 data=$4 work=$5 ranks=$6 shrink=$7
shift 7
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1
rm -rf "$work"
mkdir -p "$work"
declare -A workspace
for policy in none selective full; do
  "$shardc" compile "$model" "$@" --recompute "$policy" -o "$work/step.$policy" > /dev/null
  workspace[$policy]=$("$work/step.$policy" --describe | awk '$1 == "workspace" {print $2}')
  "$mpirun" -np "$ranks" "$work/step.$policy" --data "$data" --steps 3 \
    --checkpoint-dir "$work/ckpt.$policy" --log-file "$work/log.$policy.jsonl" > "$work/out.$policy"
done
# The logged losses, one per step (the log is JSON without spaces; an empty
# list would make the comparison vacuous, so three are required).
losses() { grep -o '"loss": *[^,}]*' "$1"; }
[[ $(losses "$work/log.none.jsonl" | wc -l) == 3 ]] || { echo "FAIL: no losses logged" >&2; exit 1; }
for policy in selective full; do
  diff -r "$work/ckpt.none" "$work/ckpt.$policy"
  cmp <(losses "$work/log.none.jsonl") <(losses "$work/log.$policy.jsonl")
done
echo "workspace per rank: none ${workspace[none]}, selective ${workspace[selective]}, full ${workspace[full]}"
if [[ $shrink == smaller ]]; then
  (( workspace[full] < workspace[none] )) || { echo "FAIL: full did not shrink the workspace" >&2; exit 1; }
fi
if [[ $shrink != report ]] &&
   ! (( workspace[full] <= workspace[none] && workspace[selective] <= workspace[none] )); then
  echo "FAIL: recomputation did not shrink the planned workspace" >&2
  exit 1
fi
echo "OK: identical checkpoints and losses under every policy"
