#!/usr/bin/env bash
# Starts and stops a real one-node Slurm cluster (Slurm 22.05 from Debian 12) for tests, as root,
# without systemd or cgroups. Every file lives in one directory; nothing under /etc is used.
# Facts behind the choices below: /work/shared/SLURM-NOTES.md.
#
#   scripts/slurm-local.sh install      # apt-get slurmctld slurmd slurm-client munge (no-op if present)
#   scripts/slurm-local.sh start DIR    # prints `export SLURM_CONF=DIR/slurm.conf` on stdout when ready
#   scripts/slurm-local.sh stop DIR     # cancels jobs, stops every daemon; idempotent
#   scripts/slurm-local.sh selftest     # install, start, array job + dependent job, stop, timings
#   scripts/slurm-local.sh with DIR CMD… # start, run CMD with SLURM_CONF set, stop; CMD's exit status
#
# The daemons outlive `start` (they run in their own session, detached from its stdio), so a caller
# that dies without `stop` leaves them running. In CI, run the caller itself inside
# `unshare --pid --fork --kill-child --mount-proc` so the kernel kills the cluster with it.
set -euo pipefail

log() { echo "slurm-local: $*" >&2; }
now_ms() { date +%s%3N; }

# Every daemon is started with this variable set (job tasks do not get it: their environment comes
# from the submitter). It identifies our processes without trusting PIDs alone (no reuse, and a
# zombie has an empty environ so it counts as gone). slurmstepd inherits it from slurmd, but its
# setproctitle() zeroes part of its environ, so a slurmstepd is also ours when it writes our slurmd.log.
marker() { echo "LIVEFILTER_SLURM_DIR=$1"; }
ours() {  # ours DIR PID: is PID a live process of the cluster in DIR?
    [[ -n "$2" && -r /proc/$2/environ ]] || return 1
    tr '\0' '\n' 2>/dev/null < "/proc/$2/environ" | grep -qxF "$(marker "$1")" && return 0
    [[ $(cat "/proc/$2/comm" 2>/dev/null) == slurmstepd ]] &&
        find "/proc/$2/fd" -lname "$1/slurmd.log" 2>/dev/null | grep -q .
}
all_ours() {  # PIDs of every live process of the cluster in DIR
    local p
    for p in /proc/[0-9]*; do p=${p#/proc/}; [[ $p != "$$" ]] && ours "$1" "$p" && echo "$p"; done; true
}

cmd_install() {
    if command -v sbatch && command -v slurmctld && command -v slurmd && command -v munged; then
        return 0
    fi >/dev/null
    # Without a policy-rc.d that refuses, munge's postinst starts a system munged we do not own.
    local made_policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
        made_policy=1
    fi
    local rc=0
    {
        if ! apt-cache show slurmctld >/dev/null 2>&1; then apt-get update -qq; fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            slurmctld slurmd slurm-client munge
    } >&2 || rc=$?
    if [[ $made_policy == 1 ]]; then rm -f /usr/sbin/policy-rc.d; fi
    return $rc
}

free_ports() {  # two distinct free TCP ports on 127.0.0.1
    if command -v python3 >/dev/null; then
        python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))'
    else  # fallback: random high ports nobody listens on
        local used p out=()
        used=$(ss -Htan | awk '{print $4}' | sed 's/.*://')
        while ((${#out[@]} < 2)); do
            p=$((20000 + RANDOM % 30000))
            grep -qx "$p" <<<"$used" || [[ " ${out[*]} " == *" $p "* ]] || out+=("$p")
        done
        echo "${out[@]}"
    fi
}

write_conf() {  # write_conf DIR HOST
    local dir=$1 host=$2 mem ports
    mem=$(slurmd -C | grep -o 'RealMemory=[0-9]*' | cut -d= -f2)
    read -r -a ports <<<"$(free_ports)"
    touch "$dir/plugstack.conf"
    cat > "$dir/slurm.conf" <<EOF
ClusterName=livefilter
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
# No cgroups in these containers.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MailProg=/bin/true
PlugStackConfig=$dir/plugstack.conf
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
# MinJobAge=0 is clamped to 2, and a finished task's record can vanish before sbatch --wait reads it.
MinJobAge=5
# Otherwise batch jobs start on a 3 s tick.
SchedulerParameters=batch_sched_delay=0
KillWait=5
MaxArraySize=10001
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

spawn() {  # spawn DIR NAME CMD...: run CMD detached (own session, no inherited stdio), record its PID
    local dir=$1 name=$2; shift 2
    # setsid execs in place (a background child of a script is not a group leader), so $! is CMD's PID.
    env "$(marker "$dir")" setsid "$@" </dev/null >"$dir/$name.out" 2>&1 &
    echo $! > "$dir/$name.pid"
    # Until the child has exec'd `env`, its environ lacks the marker and `ours` would call it gone.
    local i; for ((i = 0; i < 100; i++)); do ours "$dir" $! && break; sleep 0.01; done
}

# wait_for DIR NAME DESCRIPTION CMD...: poll CMD until it succeeds, while daemon NAME stays alive,
# until the start deadline; on failure print NAME's log tail, clean up and exit 1.
wait_for() {
    local dir=$1 name=$2 what=$3; shift 3
    until "$@" >/dev/null 2>&1; do
        if ! ours "$dir" "$(cat "$dir/$name.pid")" || (($(now_ms) > deadline)); then
            log "$name: not ready ($what)"
            tail -n 20 "$dir/$name.out" "$dir/$name.log" >&2 2>/dev/null || true
            cmd_stop "$dir" || true
            exit 1
        fi
        sleep 0.1
    done
}
node_idle() { [[ $(sinfo -h -n "$1" -o %T) == idle ]]; }
munge_ok() { munge -n -S "$1" | unmunge -S "$1"; }

cmd_start() {
    local dir=$1 host
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd -P)
    host=$(hostname -s)
    # munged refuses a socket in a 0700 directory (mktemp -d makes one): "execute permissions".
    chmod 755 "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/run"
    write_conf "$dir" "$host"
    export SLURM_CONF=$dir/slurm.conf
    deadline=$(($(now_ms) + 30000))

    mungekey -c -k "$dir/munge.key" >&2
    spawn "$dir" munged munged -F --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
        --log-file="$dir/munged.log" --pid-file="$dir/run/munged.pid" --seed-file="$dir/munge.seed"
    wait_for "$dir" munged "munge | unmunge" munge_ok "$dir/munge.sock"

    spawn "$dir" slurmctld slurmctld -D -f "$SLURM_CONF"
    wait_for "$dir" slurmctld "scontrol ping" scontrol ping

    spawn "$dir" slurmd slurmd -D -N "$host" -f "$SLURM_CONF"
    wait_for "$dir" slurmd "sinfo says idle" node_idle "$host"

    # Warm-up from the notes: the batch scheduler reads batch_sched_delay only on its first pass,
    # at least 3 s after slurmctld starts. Measured here: this start takes ~0.5 s, so a batch job
    # submitted at once still waits ~2.8 s; once slurmctld is 3 s old, batch jobs start within
    # ~1 s (slurmctld's background loop runs once a second).
    if ! timeout 30 srun -n1 true >&2; then
        log "warm-up srun failed"
        tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
        cmd_stop "$dir" || true
        exit 1
    fi
    echo "export SLURM_CONF=$SLURM_CONF"
}

stop_pid() {  # stop_pid DIR NAME SIGNAL...: send each SIGNAL (NONE: just wait) until daemon NAME is gone
    local dir=$1 pid i sig
    pid=$(cat "$dir/$2.pid" 2>/dev/null) || return 0
    for sig in "${@:3}"; do
        [[ $sig != NONE ]] && ours "$dir" "$pid" && kill -s "$sig" "$pid" 2>/dev/null
        for ((i = 0; i < 50; i++)); do ours "$dir" "$pid" || return 0; sleep 0.1; done
    done
}

cmd_stop() {
    local dir=$1 i left
    [[ -d "$dir" ]] || return 0
    dir=$(cd "$dir" && pwd -P)
    export SLURM_CONF=$dir/slurm.conf
    if ours "$dir" "$(cat "$dir/slurmctld.pid" 2>/dev/null)"; then
        # slurmstepd outlives slurmd by design: cancel every job before shutting down.
        timeout 10 scancel --user=root >&2 || true
        for ((i = 0; i < 100; i++)); do
            [[ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ]] && break
            sleep 0.1
        done
        timeout 10 scontrol shutdown >&2 || true  # stops slurmd too
    fi
    stop_pid "$dir" slurmd NONE TERM KILL
    stop_pid "$dir" slurmctld NONE TERM KILL
    stop_pid "$dir" munged TERM KILL
    # Whatever is left (a slurmstepd whose job was not cancelled, e.g. after a daemon crashed): KILL
    # it and its job's tasks, which share the session slurmd made for it (and carry no marker).
    left=$(all_ours "$dir")
    if [[ -n "$left" ]]; then
        local p sid tasks=()
        for p in $left; do
            sid=$(ps -o sid= -p "$p" | tr -d ' ') || continue
            [[ $(cat "/proc/$p/comm" 2>/dev/null) == slurmstepd ]] && tasks+=($(pgrep -s "$sid" || true))
        done
        log "killing leftovers: $(echo $left) ${tasks[*]}"
        kill -KILL $left "${tasks[@]}" 2>/dev/null || true
        sleep 0.2
        left=$(all_ours "$dir")
        if [[ -n "$left" ]]; then log "still running: $(echo $left)"; return 1; fi
    fi
    return 0
}

cmd_selftest() {
    local t0 t1 dir id dep_id timings=()
    t0=$(now_ms); cmd_install; t1=$(now_ms); timings+=("install $((t1 - t0)) ms")
    dir=$(mktemp -d)
    local env_line
    t0=$(now_ms); env_line=$(cmd_start "$dir"); t1=$(now_ms); timings+=("start $((t1 - t0)) ms")
    eval "$env_line"
    trap 'cmd_stop "$dir" || true' EXIT

    t0=$(now_ms)
    # sbatch --wait prints the job id at submission, then waits; read it from a FIFO line by line
    # so the dependent job can be queued while the array still runs.
    mkfifo "$dir/sbatch.fifo"
    sbatch --parsable --array=0-3 --wait -o /dev/null \
        --wrap "echo \$SLURM_ARRAY_TASK_ID > $dir/out.\$SLURM_ARRAY_TASK_ID" > "$dir/sbatch.fifo" &
    local array_pid=$!
    read -r id < "$dir/sbatch.fifo"
    id=${id%%;*}
    dep_id=$(sbatch --parsable --wait --dependency=afterok:"$id" -o /dev/null \
        --wrap "cat $dir/out.0 $dir/out.1 $dir/out.2 $dir/out.3 | tr '\n' ' ' > $dir/dep.out")
    wait "$array_pid"
    t1=$(now_ms); timings+=("array 0-3 + dependent job $((t1 - t0)) ms")
    local got; got=$(cat "$dir/dep.out")
    [[ "$got" == "0 1 2 3 " ]] || { log "FAIL: dependent job read '$got'"; exit 1; }
    log "array job $id and dependent job ${dep_id%%;*}: ok"

    trap - EXIT
    t0=$(now_ms); cmd_stop "$dir"; t1=$(now_ms); timings+=("stop $((t1 - t0)) ms")
    rm -rf "$dir"
    log "PASS: $(IFS=,; echo "${timings[*]}" | sed 's/,/, /g')"
}

# with DIR CMD…: a cluster for the length of one command. Starts it, runs CMD with SLURM_CONF set,
# stops it, exits with CMD's status. Run under `unshare --pid --fork --kill-child --mount-proc`
# (as the tests do), a killed caller takes the whole cluster with it.
cmd_with() {
    local dir="$1"; shift
    local conf
    conf=$(cmd_start "$dir") || exit 1
    eval "$conf"
    set +e
    "$@"
    local status=$?
    set -e
    cmd_stop "$dir" || true
    exit "$status"
}

case "${1:-}" in
    install) cmd_install ;;
    with) [[ $# -ge 3 ]] || { log "usage: $0 with DIR CMD…"; exit 2; }; shift; cmd_with "$@" ;;
    start) [[ $# == 2 ]] || { log "usage: $0 start DIR"; exit 2; }; cmd_start "$2" ;;
    stop) [[ $# == 2 ]] || { log "usage: $0 stop DIR"; exit 2; }; cmd_stop "$2" ;;
    selftest) cmd_selftest ;;
    *) log "usage: $0 install | start DIR | stop DIR | with DIR CMD… | selftest"; exit 2 ;;
esac
