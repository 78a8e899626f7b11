#!/usr/bin/env bash
# A one-node SLURM cluster on this host, for the SLURM integration tests (tests/test_slurm_cluster.py,
# tests/test_slurm_gpu.py) and for developers trying the SLURM profiles (workflow/profiles/slurm-cpu,
# workflow/profiles/slurm) without a cluster.
#
#   scripts/slurm-local.sh start    # install (apt, as root), configure, start, check: about a minute
#   scripts/slurm-local.sh status   # the daemons, the node and the queue
#   scripts/slurm-local.sh stop     # stop the daemons (the packages and the accounting DB stay)
#
# What it sets up: Debian's slurm-wlm (slurmctld + slurmd on this host), slurmdbd on MariaDB so
# that `sacct` answers (the snakemake slurm executor plugin polls sacct for its jobs' states), and
# munge for authentication. This host's CPUs and memory as `slurmd -C` reports them, less some
# memory for the daemons and the submitting Snakemake, and two GPUs that are not there: GRES
# `gpu:2` whose device files are /dev/null and /dev/zero (slurmd wants a character device per
# GPU, and only stats it; nothing constrains devices here), so `sbatch --gpus=1` is scheduled,
# accounted (gres/gpu in sacct's TRES) and given its own CUDA_VISIBLE_DEVICES index as on a real
# GPU node, while the job computes on the CPUs. Two partitions on that node, the GPU profile's
# names: `cpu` (the default) and `gpu`. Process tracking by /proc (proctrack/linuxproc) and no
# task plugin (task/none): both work in containers and VMs without a writable cgroup hierarchy. Without systemd (PID 1 is not
# systemd in containers) the daemons are started directly, in dependency order: munged, mariadbd,
# slurmdbd, slurmctld, slurmd.
#
# `start` is idempotent: it skips installed packages, rewrites the configs only when they change
# (restarting the daemons then), and ends with a trivial batch job that must show up in sacct.
# It exits non-zero with a message naming what failed. Only for a test or development machine:
# the daemons run as root and the database password is fixed.
set -euo pipefail

CLUSTER=reranklab-local           # ClusterName, as registered in the accounting DB
PARTITION=cpu                     # the default partition
GPU_PARTITION=gpu                 # the same node, for the GPU jobs (workflow/profiles/slurm)
FAKE_GPUS=(/dev/null /dev/zero)   # the node's GPUs (GRES gpu): any character devices will do
GPUS=${#FAKE_GPUS[@]}
ACCOUNT=reranklab                 # the account the test user submits under (sacctmgr)
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASS=slurm-local               # local test DB only (MariaDB listens on the socket/localhost)
CONF_DIR=/etc/slurm
LOG_DIR=/var/log/slurm
STATE_DIR=/var/lib/slurm
RUN_DIR=/run/slurm
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server)
WAIT_S=${SLURM_LOCAL_WAIT_S:-90}  # how long each readiness check may take

die() { echo "slurm-local: $*" >&2; exit 1; }
say() { echo "slurm-local: $*"; }
# Any other failing command (set -e) still says where it stopped.
trap 'rc=$?; echo "slurm-local: failed (exit $rc) at line $LINENO: $BASH_COMMAND" >&2' ERR

# Waits until "$@" succeeds (quietly), at most WAIT_S seconds; fails with the given message.
wait_for() {
  local what=$1; shift
  local deadline=$((SECONDS + WAIT_S))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${WAIT_S}s waiting for $what (logs: $LOG_DIR)"
    sleep 1
  done
}

running() { pgrep -x "$1" >/dev/null 2>&1; }

# The one node as slurmd sees it: its name, CPUs and memory (MB).
node_shape() {
  local line
  line=$(slurmd -C | head -1) || die "slurmd -C failed: is slurm-wlm installed?"
  NODE=$(sed -n 's/.*NodeName=\([^ ]*\).*/\1/p' <<<"$line")
  CPUS=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$line")
  SOCKETS=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$line")
  CORES=$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$line")
  THREADS=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$line")
  local real
  real=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$line")
  # Headroom for the OS, the daemons, MariaDB and the Snakemake that submits: 15%, at least 1 GB.
  local headroom=$((real * 15 / 100))
  ((headroom >= 1024)) || headroom=1024
  MEM=$((real - headroom))
  [[ -n $NODE && -n $CPUS && $MEM -gt 0 ]] || die "could not read the node's shape from: $line"
}

install_packages() {
  local missing=()
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ $(id -u) == 0 ]] || die "needs root to install ${missing[*]} (or install them yourself)"
  command -v apt-get >/dev/null || die "no apt-get: install ${missing[*]} with your package manager"
  say "installing ${missing[*]} (apt)"
  apt-get update -qq || die "apt-get update failed"
  # The packages' maintainer scripts try to start their services; policy-rc.d in containers
  # refuses that, which is fine: this script starts them below.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
}

# Writes $1 from stdin when its content differs; records that a restart is due.
CHANGED=0
write_conf() {
  local path=$1 mode=$2 tmp
  tmp=$(mktemp)
  cat >"$tmp"
  if [[ -f $path ]] && cmp -s "$tmp" "$path"; then
    rm -f "$tmp"
  else
    install -m "$mode" "$tmp" "$path"
    rm -f "$tmp"
    CHANGED=1
  fi
}

write_configs() {
  mkdir -p "$CONF_DIR" "$LOG_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd" "$RUN_DIR"
  write_conf "$CONF_DIR/slurm.conf" 644 <<EOF
# Written by reranklab's scripts/slurm-local.sh for this host ($(hostname)); rewritten on start.
ClusterName=$CLUSTER
SlurmctldHost=$NODE
# The daemons run as root on this test node (no slurm user, spool or key ownership to manage).
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE_DIR/slurmctld
SlurmdSpoolDir=$STATE_DIR/slurmd
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
# /proc-based tracking and no task plugin: no cgroup hierarchy needed (containers, VMs).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Jobs asking for more than the partition has are refused by sbatch instead of pending forever.
EnforcePartLimits=ALL
# Accounting through slurmdbd: sacct answers (the executor plugin polls it); the job comment
# (the plugin writes rule_<rule>_wildcards_<...> there) is stored too.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
# A node that was down (host restarted) comes back by itself.
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=300
# GPUs as generic resources (gres.conf lists their device files); --gpus/--gres requests are
# recorded as gres/gpu in the jobs' TRES (ReqTRES, AllocTRES of sacct).
GresTypes=gpu
AccountingStorageTRES=gres/gpu
NodeName=$NODE CPUs=$CPUS Sockets=$SOCKETS CoresPerSocket=$CORES ThreadsPerCore=$THREADS RealMemory=$MEM Gres=gpu:$GPUS State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=$GPU_PARTITION Nodes=$NODE MaxTime=INFINITE State=UP
EOF
  # No detection (there is no driver): each GPU is one line with its (stand-in) device file.
  write_conf "$CONF_DIR/gres.conf" 644 <<EOF
AutoDetect=off
$(for device in "${FAKE_GPUS[@]}"; do echo "NodeName=$NODE Name=gpu File=$device"; done)
EOF
  # Nothing is constrained by cgroups here (linuxproc, task/none); the file keeps slurmd quiet.
  write_conf "$CONF_DIR/cgroup.conf" 644 <<EOF
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
EOF
  # slurmdbd refuses a config readable by others (it holds the DB password).
  write_conf "$CONF_DIR/slurmdbd.conf" 600 <<EOF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=$LOG_DIR/slurmdbd.log
PidFile=$RUN_DIR/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=$DB_NAME
StorageUser=$DB_USER
StoragePass=$DB_PASS
EOF
}

start_munge() {
  # A munged that answers is enough; one that is exiting (just stopped) is waited for first.
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
  wait_for "munged to exit" bash -c '! pgrep -x munged'
  [[ -s /etc/munge/munge.key ]] || {
    say "creating the munge key"
    mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null ||
      dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  }
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
  wait_for "munge" bash -c 'munge -n | unmunge'
}

start_mariadb() {
  if ! running mariadbd && ! running mysqld; then
    # The init script works without systemd (policy-rc.d only stops it at install time).
    service mariadb start >/dev/null || die "MariaDB did not start (see /var/log/mysql/ or journal)"
  fi
  wait_for "MariaDB" mysqladmin ping
  mysql -u root <<EOF || die "could not create the accounting database $DB_NAME"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
FLUSH PRIVILEGES;
EOF
}

start_slurm() {
  if ! running slurmdbd; then
    slurmdbd || die "slurmdbd did not start (see $LOG_DIR/slurmdbd.log)"
  fi
  wait_for "slurmdbd" sacctmgr -n list cluster
  # Register the cluster before slurmctld connects, and an account for the submitting user.
  # (-P: parsable, untruncated names.)
  sacctmgr -nP list cluster format=cluster | grep -qx "$CLUSTER" ||
    sacctmgr -i add cluster "$CLUSTER" >/dev/null || die "sacctmgr could not add cluster $CLUSTER"
  sacctmgr -nP list account format=account | grep -qx "$ACCOUNT" ||
    sacctmgr -i add account "$ACCOUNT" cluster="$CLUSTER" description="reranklab tests" >/dev/null ||
    die "sacctmgr could not add account $ACCOUNT"
  local user=${SUDO_USER:-$(id -un)}
  for who in root "$user"; do
    sacctmgr -nP list assoc user="$who" account="$ACCOUNT" format=user | grep -qx "$who" ||
      sacctmgr -i add user "$who" account="$ACCOUNT" defaultaccount="$ACCOUNT" >/dev/null ||
      die "sacctmgr could not add user $who to account $ACCOUNT"
  done
  running slurmctld || slurmctld || die "slurmctld did not start (see $LOG_DIR/slurmctld.log)"
  wait_for "slurmctld" scontrol ping
  running slurmd || slurmd || die "slurmd did not start (see $LOG_DIR/slurmd.log)"
  # A node that was DOWN (e.g. slurmd restarted before) is resumed; ReturnToService does the rest.
  scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
  wait_for "node $NODE to be idle (sinfo)" bash -c \
    "sinfo -h -n '$NODE' -o %T | grep -Eq '^(idle|mixed|allocated)'"
}

smoke_test() {
  local id gpu
  id=$(sbatch --parsable -p "$PARTITION" -o /dev/null -J slurm-local-check --wrap true) ||
    die "sbatch of a trivial job failed"
  # ... and one asking for a GPU, which SLURM must grant (and account) from the fake GRES.
  gpu=$(sbatch --parsable -p "$GPU_PARTITION" --gpus=1 -o /dev/null -J slurm-local-gpu-check --wrap true) ||
    die "sbatch of a trivial job with --gpus=1 failed (see $LOG_DIR/slurmctld.log)"
  wait_for "the trivial job $id to complete and show in sacct" bash -c \
    "sacct -n -X -j $id -o State | grep -q COMPLETED"
  wait_for "the trivial GPU job $gpu to complete with gres/gpu in sacct" bash -c \
    "sacct -n -X -P -j $gpu -o State,AllocTRES | grep -q 'COMPLETED|.*gres/gpu=1'"
}

stop_daemons() {
  # Reverse order; each by its own pid file or name (these are the only slurm/munge daemons here).
  for daemon in slurmd slurmctld slurmdbd; do
    if running "$daemon"; then
      if [[ -s $RUN_DIR/$daemon.pid ]]; then kill "$(cat "$RUN_DIR/$daemon.pid")" 2>/dev/null || true; fi
      local deadline=$((SECONDS + 30))
      while running "$daemon" && ((SECONDS < deadline)); do sleep 1; done
      running "$daemon" && die "$daemon did not stop"
    fi
  done
  if running mariadbd || running mysqld; then service mariadb stop >/dev/null || true; fi
  if running munged; then
    local pid
    pid=$(cat /run/munge/munged.pid 2>/dev/null || pgrep -x munged || true)
    if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; fi
    wait_for "munged to stop" bash -c '! pgrep -x munged'
  fi
  say "stopped"
}

status() {
  local rc=0
  for daemon in munged mariadbd slurmdbd slurmctld slurmd; do
    if running "$daemon"; then echo "$daemon: running"; else echo "$daemon: stopped"; rc=1; fi
  done
  if command -v sinfo >/dev/null && ((rc == 0)); then
    sinfo -o "%P %a %D %T %c %m %G"
    squeue -o "%i %j %T %R" | head -20
  fi
  return $rc
}

case ${1:-} in
  start)
    t0=$SECONDS
    install_packages
    node_shape
    write_configs
    if ((CHANGED)) && running slurmctld; then
      say "configuration changed: restarting the daemons"
      stop_daemons
    fi
    start_munge
    start_mariadb
    start_slurm
    smoke_test
    say "up in $((SECONDS - t0))s: node $NODE ($CPUS CPUs, ${MEM} MB, $GPUS fake GPUs), partitions $PARTITION and $GPU_PARTITION, account $ACCOUNT"
    ;;
  stop) stop_daemons ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
