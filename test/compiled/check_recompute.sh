#!/usr/bin/env bash
# Recomputation and activation offload change no number: the same model
# compiled with --recompute none, selective and full, with
# --regather-for-backward (nothing recomputed, gathered again), and with
# --offload-activations (alone and with full recomputation) trains 3 steps
# under mpirun to byte-identical checkpoints and identical logged losses,
# while the planned workspace per rank shrinks and the offloaded activations
# are planned in the host arena.
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
declare -A workspace host
declare -A flags=(
  [none]="--recompute none"
  [selective]="--recompute selective"
  [full]="--recompute full"
  [regather]="--recompute none --regather-for-backward"
  [offload]="--recompute none --offload-activations --offload-min-bytes 0"
  [full-offload]="--recompute full --offload-activations --offload-min-bytes 0"
)
variants=(none selective full regather offload full-offload)
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086
  "$shardc" compile "$model" "$@" ${flags[$v]} -o "$work/step.$v" > /dev/null
  "$work/step.$v" --describe > "$work/describe.$v"
  workspace[$v]=$(awk '$1 == "workspace" {print $2}' "$work/describe.$v")
  host[$v]=$(awk '$1 == "host" {print $2}' "$work/describe.$v")
  "$mpirun" -np "$ranks" "$work/step.$v" --data "$data" --steps 3 \
    --checkpoint-dir "$work/ckpt.$v" --log-file "$work/log.$v.jsonl" > "$work/out.$v"
done
# The logged losses, one per step (the log is JSON without spaces; an empty
# list would make the comparison vacuous, so three are required).
losses() { grep -o '"loss": *[^,}]*' "$1"; }
[[ $(losses "$work/log.none.jsonl" | wc -l) == 3 ]] || { echo "FAIL: no losses logged" >&2; exit 1; }
for v in "${variants[@]:1}"; do
  diff -r "$work/ckpt.none" "$work/ckpt.$v"
  cmp <(losses "$work/log.none.jsonl") <(losses "$work/log.$v.jsonl")
done
for v in "${variants[@]}"; do
  echo "$v: workspace ${workspace[$v]}, host ${host[$v]}"
done
if [[ $shrink == smaller ]]; then
  (( workspace[full] < workspace[none] )) || { echo "FAIL: full did not shrink the workspace" >&2; exit 1; }
fi
if [[ $shrink != report ]] &&
   ! (( workspace[full] <= workspace[none] && workspace[selective] <= workspace[none] &&
        workspace[regather] <= workspace[none] && workspace[offload] <= workspace[none] )); then
  echo "FAIL: recomputation or offload did not shrink the planned workspace" >&2
  exit 1
fi
(( host[none] == 0 && host[full] == 0 && host[regather] == 0 )) || { echo "FAIL: a host arena without offload" >&2; exit 1; }
(( host[offload] > 0 && host[full-offload] > 0 )) ||
  { echo "FAIL: --offload-activations planned no host arena" >&2; exit 1; }
(( host[full-offload] < host[offload] )) ||
  { echo "FAIL: with full recomputation fewer activations are kept, so fewer offloaded" >&2; exit 1; }
echo "OK: identical checkpoints and losses under every policy and with offload"
