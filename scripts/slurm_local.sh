#!/usr/bin/env bash
# A one-node Slurm on this machine, for running compiled steps with srun the
# way a cluster does (tests, demos). Debian 12's slurm-wlm and munge
# (scripts/setup.sh installs them); no systemd, no cgroups, no accounting;
# everything (config, state, spool, logs, pids) under DIR.
#
# Usage:
#   scripts/slurm_local.sh start DIR [CPUS]   # start munged, slurmctld, slurmd; CPUS the
#                                             # node declares (default 8: more tasks than
#                                             # cores, as mpirun's oversubscribe)
#   scripts/slurm_local.sh stop DIR           # stop what start started
# After start: export SLURM_CONF=DIR/slurm.conf, then e.g.
#   srun --mpi=pmix -n 4 ./step --data tokens.bin --steps 100
# Debian's Open MPI 4.1 is built with PMIx only: --mpi=pmix (the configured
# default here), not pmi2. As root, Open MPI needs OMPI_ALLOW_RUN_AS_ROOT=1
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment srun passes on.
# Exit status 77: Slurm or munge is not installed (tests skip).
set -euo pipefail
mode=${1:-}
dir=${2:-}
[[ ($mode == start || $mode == stop) && -n $dir ]] ||
  { echo "usage: $0 start DIR [CPUS] | stop DIR" >&2; exit 2; }

stop() {
  for p in slurmd slurmctld munged; do
    if [[ -f $dir/$p.pid ]]; then
      kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
      rm -f "$dir/$p.pid"
    fi
  done
}
if [[ $mode == stop ]]; then
  stop
  exit 0
fi

for tool in slurmctld slurmd srun sinfo munged; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] ||
    { echo "slurm_local: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 77; }
done
cpus=${3:-8}
mkdir -p "$dir"/{state,spool,log}
dir=$(cd "$dir" && pwd)
node=$(hostname -s)
user=$(id -un)
cat > "$dir/slurm.conf" <<EOF
ClusterName=shardc-local
SlurmctldHost=$node(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$((6817 + RANDOM % 1000))
SlurmdPort=$((7817 + RANDOM % 1000))
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
MpiDefault=pmix
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf

# munge: the package made the key; its run directory belongs to munge.
if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge
  chown munge:munge /run/munge 2>/dev/null || true
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u munge -- /usr/sbin/munged
  else
    /usr/sbin/munged
  fi
  pgrep -x munged | head -1 > "$dir/munged.pid"
fi
stop_on_error() { stop; exit 1; }
/usr/sbin/slurmctld -D -i > "$dir/log/slurmctld.out" 2>&1 &
echo $! > "$dir/slurmctld.pid"
/usr/sbin/slurmd -D > "$dir/log/slurmd.out" 2>&1 &
echo $! > "$dir/slurmd.pid"
for _ in $(seq 1 60); do
  if sinfo -h -o '%T' 2>/dev/null | grep -q idle; then
    echo "slurm_local: node $node idle with $cpus CPUs; export SLURM_CONF=$dir/slurm.conf"
    exit 0
  fi
  sleep 0.5
done
echo "slurm_local: the node did not become idle in 30 s; logs in $dir/log" >&2
tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
stop_on_error
