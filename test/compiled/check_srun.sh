#!/usr/bin/env bash
# A compiled step under Slurm: a one-node Slurm (scripts/slurm_local.sh) runs
# GPT-2 tiny on dp=2 x tp=2 with `srun --mpi=pmix -n 4`, and the run equals the
# same binary under mpirun: identical logged losses and byte-identical
# checkpoints. Exit 77 (skipped) where Slurm or munge is not installed.
# usage: check_srun.sh SHARDC MPIRUN MODEL DATA WORKDIR
set -euo pipefail
shardc=$1 mpirun=$2 model=$3 data=$4 work=$5
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMP_NUM_THREADS=1
rm -rf "$work"
mkdir -p "$work"
"$shardc" compile "$model" --mesh dp=2,tp=2 --strategy zero1+tp -o "$work/step" > /dev/null
rc=0
"$root/scripts/slurm_local.sh" start "$work/slurm" 8 || rc=$?
(( rc == 77 )) && { echo "SKIP: no Slurm here"; exit 77; }
(( rc == 0 )) || exit "$rc"
trap '"$root/scripts/slurm_local.sh" stop "$work/slurm"' EXIT
export SLURM_CONF=$work/slurm/slurm.conf
run() { # name launcher...
  local name=$1
  shift
  "$@" "$work/step" --data "$data" --steps 6 --checkpoint-dir "$work/ckpt.$name" \
    --log-file "$work/log.$name.jsonl" > "$work/out.$name"
}
run srun timeout 300 srun --mpi=pmix -n 4
run mpirun "$mpirun" -np 4
losses() { grep -o '"loss": *[^,}]*' "$1"; }
[[ $(losses "$work/log.srun.jsonl" | wc -l) == 6 ]] || { echo "FAIL: srun logged no losses" >&2; exit 1; }
cmp <(losses "$work/log.srun.jsonl") <(losses "$work/log.mpirun.jsonl")
diff -r "$work/ckpt.srun" "$work/ckpt.mpirun"
grep -q "mesh dp=2,tp=2" "$work/out.srun" || { echo "FAIL: srun's run did not report the mesh" >&2; exit 1; }
echo "OK: srun --mpi=pmix -n 4 equals mpirun -np 4 (6 steps, losses and checkpoints)"
