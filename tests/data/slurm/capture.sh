#!/usr/bin/env bash
# How tests/data/slurm/ was captured: a private one-node Slurm 22.05 (munge, MariaDB,
# slurmdbd, slurmctld, slurmd) in a temporary folder, a handful of small jobs covering the
# cases the accounting reader cleans (steps, arrays, a requeue, a pending cancel, a
# timeout, a failure, memory and GPU requests), then `sacct -P` and the jobcomp log.
# Every daemon is started here and stopped by its PID. Run as root (Debian 12 packages:
# slurmctld slurmd slurmdbd slurm-client munge mariadb-server).
#   bash tests/data/slurm/capture.sh OUTDIR
set -euo pipefail
# a private mount namespace: munge's default socket (/run/munge) is this capture's own,
# so it never meets another munged on the host
if [ -z "${HPCGYM_CAPTURE_NS:-}" ]; then
  HPCGYM_CAPTURE_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
mkdir -p /run/munge && mount -t tmpfs none /run/munge
OUT=$(realpath "${1:?usage: capture.sh OUTDIR}")
D=$(mktemp -d /tmp/hpcgym-sacct.XXXXXX)
HOST=$(hostname -s)
mkdir -p "$D"/{state,spool,db,log} "$OUT"
chmod 755 "$D" "$D/spool"  # jobs of other users read their scripts under the spool
PIDS=()
stop() {
  for pf in "$D"/slurmd.pid "$D"/slurmctld.pid "$D"/slurmdbd.pid "$D"/mariadb.pid "$D"/munged.pid; do
    [ -s "$pf" ] && kill "$(cat "$pf")" 2>/dev/null || true
  done
  sleep 2
}
trap stop EXIT

# munge with a private key and socket
dd if=/dev/urandom of="$D/munge.key" bs=1024 count=1 status=none; chmod 400 "$D/munge.key"
munged --key-file="$D/munge.key" --pid-file="$D/munged.pid" \
  --log-file="$D/log/munged.log" --seed-file="$D/munge.seed" -f
# MariaDB on a private data folder and port
mariadb-install-db --datadir="$D/db" --user=root --auth-root-authentication-method=normal >"$D/log/db-install.log" 2>&1
mariadbd --datadir="$D/db" --socket="$D/mysql.sock" --port=7819 --bind-address=127.0.0.1 \
  --pid-file="$D/mariadb.pid" --user=root --log-error="$D/log/mariadb.log" &
for _ in $(seq 60); do [ -S "$D/mysql.sock" ] && break; sleep 1; done
mariadb --socket="$D/mysql.sock" -uroot -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'hpcgym'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"

cat >"$D/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdPort=7820
SlurmUser=root
PidFile=$D/slurmdbd.pid
LogFile=$D/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=7819
StorageUser=slurm
StoragePass=hpcgym
StorageLoc=hpcgym_sacct
CONF
chmod 600 "$D/slurmdbd.conf"
cat >"$D/gres.conf" <<CONF
NodeName=$HOST Name=gpu File=/dev/null
NodeName=$HOST Name=gpu File=/dev/zero
CONF
cat >"$D/slurm.conf" <<CONF
ClusterName=hpcgym
SlurmctldHost=$HOST
SlurmctldPort=7817
SlurmdPort=7818
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
PriorityType=priority/basic
JobCompType=jobcomp/filetxt
JobCompLoc=$D/jobcomp.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=7820
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
ReturnToService=2
KillWait=2
OverTimeLimit=0
DefMemPerCPU=200
MinJobAge=2
MpiDefault=none
SlurmdParameters=config_overrides
NodeName=$HOST CPUs=16 RealMemory=16000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=30 State=UP
PartitionName=long Nodes=$HOST MaxTime=UNLIMITED State=UP
CONF
export SLURM_CONF="$D/slurm.conf"
slurmdbd  # reads slurmdbd.conf beside $SLURM_CONF
for _ in $(seq 30); do ss -ltn | grep -q ':7820 ' && break; sleep 1; done
sacctmgr -i add cluster hpcgym >/dev/null
sacctmgr -i add account physics,chem >/dev/null
sacctmgr -i add user root account=physics >/dev/null
sacctmgr -i add user nobody account=chem >/dev/null
sacctmgr -i add user daemon account=physics >/dev/null
slurmctld
slurmd
for _ in $(seq 60); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 1; done
sinfo

J="--chdir=/tmp --output=/dev/null --error=/dev/null"
sb() { sbatch --parsable $J "$@"; }
sb --time=2 -n 4 --wrap="sleep 20"                                   # COMPLETED, MM
sb --time=1:30 -n 2 --mem=500M --wrap="sleep 15"                     # MM:SS, memory per node
sb --time=0-0:05 -n 3 --mem-per-cpu=100M --wrap="sleep 10"           # D-HH:MM, memory per CPU
sb --time=1 -n 1 --wrap="sleep 120"                                  # TIMEOUT after 60 s
sb --time=2 -n 2 --wrap="sleep 5; exit 3"                            # FAILED
sb --time=3 -n 2 --gres=gpu:2 --wrap="sleep 12"                      # GPUs
sb -p long -n 2 --wrap="sleep 8"                                     # UNLIMITED
sb --uid=nobody --account=chem --time=2 -n 4 --wrap="sleep 25"       # another user / account
sb --uid=daemon --time=0:02:00 -n 8 --wrap="srun -n 2 sleep 3; srun -n 1 sleep 2"  # steps
ARR=$(sb --time=1 -n 1 --array=0-3 --wrap="sleep 6")                 # array
ARR2=$(sb --time=1 -n 8 --array=0-9%1 --wrap="sleep 10")             # array, then cancelled
PEND=$(sb --time=2 -n 1 --begin=now+3600 --wrap="sleep 5")           # cancelled before start
RQ=$(sb --time=3 -n 2 --requeue --wrap="sleep 20")                   # requeued once
RUNC=$(sb --time=3 -n 1 --wrap="sleep 100")                          # cancelled while running
running() { for _ in $(seq 120); do [ "$(squeue -h -j "$1" -o %T)" = RUNNING ] && return 0; sleep 1; done; return 1; }
running "$RQ" && sleep 5 && scontrol requeue "$RQ"
running "$RUNC" && sleep 5 && scancel "$RUNC"
scancel "$PEND"
sleep 15
scancel "$ARR2"
for _ in $(seq 200); do [ -z "$(squeue -h)" ] && break; sleep 2; done
sleep 5
F=JobIDRaw,JobID,User,Group,Account,Partition,QOS,Submit,Eligible,Start,End,Timelimit,NCPUS,NNodes,ReqCPUS,ReqMem,ReqTRES,AllocTRES,State,ExitCode,Elapsed
sacct -P -D --allusers --starttime=2020-01-01 --format=$F >"$OUT/sacct.txt"
TZ=Europe/Berlin sacct -P -D --allusers --starttime=2020-01-01 --format=$F >"$OUT/sacct-berlin.txt"
cp "$D/jobcomp.log" "$OUT/jobcomp.log"
sinfo; squeue
echo "captured in $OUT (daemons in $D)"
