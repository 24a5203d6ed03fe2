#!/usr/bin/env bash
# A real Slurm on a simulated cluster: netcluster hosts P0..P{H-1}, one munged (in this
# namespace; its socket is a file, which every host's namespace sees), slurmctld on P0 and a
# slurmd on every host (NodeName = the host's name), all under one state directory. Debian 12's
# slurm-wlm 22.05 and munge; root only.
#
#   slurm_cluster.sh up   [--prefix sl] [--subnet 10.77.0] [--hosts 4] [--rate 1gbit] [--dir DIR]
#   slurm_cluster.sh run  [--prefix sl] [--dir DIR] -- CMD...   CMD on host P0 with SLURM_CONF set
#                                                               (srun, sbatch, sinfo, ...)
#   slurm_cluster.sh down [--prefix sl] [--dir DIR]            stops what `up` started, by PID
#
# DIR defaults to /tmp/coll-slurm-PREFIX. `up` tears down an earlier cluster of the same prefix
# first and returns once every node is idle (or fails within 60 s, printing the daemons' logs).
# What does not run as on a real cluster, and why:
#   - cgroups: proctrack/pgid and task/none (the namespaces share this machine's cgroup tree).
#   - One munged serves every host: munge credentials need one key anyway, and the hosts share
#     the file system, so its socket reaches every namespace.
#   - The hosts share /tmp, so each node's spool, log, pid and TmpFS (PMIx's app dir) is its own
#     subdirectory of DIR (%n in slurm.conf).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nc=${NETCLUSTER:-$here/../../../shared/tools/netcluster}
[[ -x $nc ]] || nc=/work/shared/tools/netcluster
verb=${1:-}; [[ $# -gt 0 ]] && shift
prefix=sl subnet=10.77.0 hosts=4 rate=1gbit dir=
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --subnet) subnet=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "slurm_cluster.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
dir=${dir:-/tmp/coll-slurm-$prefix}
die() { echo "slurm_cluster.sh: $*" >&2; exit 1; }

# Kills the daemon whose PID is in $1 if it still runs the expected program ($2), never by name.
stop_pid_file() {
  local file=$1 prog=$2 pid i
  [[ -s $file ]] || return 0
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  if [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == *"$prog"* ]]; then
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do [[ -e /proc/$pid ]] || break; sleep 0.1; done
    [[ -e /proc/$pid ]] && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

cmd_down() {
  local f
  if [[ -d $dir ]]; then
    for f in "$dir"/pid/slurmd.*.pid; do [[ -e $f ]] && stop_pid_file "$f" slurmd; done
    stop_pid_file "$dir/pid/slurmctld.pid" slurmctld
    stop_pid_file "$dir/pid/munged.pid" munged
  fi
  timeout 60 "$nc" down --prefix "$prefix" >/dev/null 2>&1 || true
  [[ -d $dir && $dir == /tmp/* ]] && rm -rf "$dir"
  return 0
}

write_conf() {
  local cpus k
  cpus=$(nproc)
  {
    echo "ClusterName=coll$prefix"
    echo "SlurmctldHost=${prefix}0($subnet.1)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge.sock"
    echo "StateSaveLocation=$dir/ctld"
    echo "SlurmctldPidFile=$dir/pid/slurmctld.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmdPidFile=$dir/pid/slurmd.%n.pid"
    echo "SlurmdLogFile=$dir/log/slurmd.%n.log"
    echo "TmpFS=$dir/tmp/%n"
    echo "ProctrackType=proctrack/pgid"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "SchedulerType=sched/builtin"
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "MpiDefault=$(mpi_default)"
    echo "MpiParams=ports=30000-30999"  # SLURM_STEP_RESV_PORTS: a port per step for coll's store
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "SlurmctldDebug=info"
    echo "SlurmdDebug=info"
    for ((k = 0; k < hosts; k++)); do
      echo "NodeName=$prefix$k NodeAddr=$subnet.$((k + 1)) Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN"
    done
    echo "PartitionName=coll Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
  } >"$dir/slurm.conf"
  # slurmd 22.05 loads a cgroup plugin even with proctrack/pgid and task/none; see cmd_up.
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
}

# pmix when Debian's slurm has the plugin (slurm-wlm-basic-plugins ships mpi_pmix), else none.
mpi_default() {
  if ls /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so >/dev/null 2>&1; then echo pmix; else echo none; fi
}

wait_idle() {
  local i state
  for i in $(seq 120); do
    state=$(SLURM_CONF=$dir/slurm.conf timeout 10 "$nc" exec "${prefix}0" -- sinfo -h -o '%T %D' 2>/dev/null || true)
    [[ $state == "idle $hosts" ]] && return 0
    sleep 0.5
  done
  echo "slurm_cluster.sh: nodes not idle after 60 s (sinfo: ${state:-no answer}); logs:" >&2
  tail -n 20 "$dir"/log/*.log >&2 || true
  return 1
}

# start NAME CMD...: runs a daemon's start command; when it fails, shows its log and stops all.
start() {
  local name=$1; shift
  SLURM_CONF=$dir/slurm.conf "$@" && return 0
  echo "slurm_cluster.sh: $name did not start ($*); its log:" >&2
  tail -n 20 "$dir/log/$name.log" >&2 2>/dev/null || true
  cmd_down
  exit 1
}

cmd_up() {
  [[ $EUID -eq 0 ]] || die "must run as root (network namespaces, slurmd)"
  local t k
  for t in munged slurmctld slurmd srun sinfo; do
    command -v "$t" >/dev/null || die "missing '$t': apt-get install slurm-wlm munge"
  done
  cmd_down
  mkdir -p "$dir"/{ctld,pid,log,spool,tmp}
  chmod 700 "$dir"
  for ((k = 0; k < hosts; k++)); do mkdir -p "$dir/spool/$prefix$k" "$dir/tmp/$prefix$k"; done
  timeout 60 "$nc" up "$hosts" --rate "$rate" --prefix "$prefix" --subnet "$subnet" >/dev/null

  timeout 10 mungekey --create --keyfile "$dir/munge.key" --force
  chmod 400 "$dir/munge.key"
  # Each daemon forks into the background; its PID file is what `down` stops.
  start munged timeout 10 munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
    --pid-file="$dir/pid/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"
  write_conf
  start slurmctld timeout 30 "$nc" exec "${prefix}0" -- slurmctld
  for ((k = 0; k < hosts; k++)); do
    start "slurmd.$prefix$k" timeout 30 "$nc" exec "$prefix$k" -- slurmd -N "$prefix$k"
  done
  wait_idle || { cmd_down; exit 1; }
  echo "slurm_cluster.sh: $hosts nodes ${prefix}0..${prefix}$((hosts - 1)) idle on $subnet.0/24 at $rate" \
       "(SLURM_CONF=$dir/slurm.conf, MpiDefault=$(mpi_default))"
}

case $verb in
  up) cmd_up ;;
  down) cmd_down ;;
  run)
    [[ $# -gt 0 ]] || die "run: give a command after --"
    [[ -f $dir/slurm.conf ]] || die "no cluster in $dir (run: slurm_cluster.sh up --prefix $prefix)"
    SLURM_CONF=$dir/slurm.conf exec "$nc" exec "${prefix}0" -- "$@" ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
