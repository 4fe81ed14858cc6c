#!/bin/sh
# tests/guest/program-blocks.sh - the guest side of scripts/sim-vm-counters' program pass: how
# often the message programs' own tasks sleep, which the simulator's model of them predicts
# (its `receiver_blocks` and `sender_blocks`), measured apart from the scheduler's counters.
#
# Usage: program-blocks.sh ROUNDS 'NAME=COMMAND' ['NAME=COMMAND' ...]
#   Round r runs each workload once under a fresh scx_mosaic (default flags) with ftrace hist
#   triggers counting, per task (pid and name), sched_switch by the state it left in (1: asleep,
#   S; 256: preempted) and sched_wakeup. The host tells the roles apart by pid: both programs
#   fork each group's receivers, then its senders.
# Output per run: the histograms as blocks "@@HIST NAME-r EVENT@@ ... @@END@@" and the time
# the program reports as "@@traced_own_NAME-r@@ SECONDS"; the script
# fails on a workload error or an ejection. The triggers cost time on every event, so this pass
# runs apart from sim-vm.sh's counted windows; it traces no syscall, which would slow every
# message.
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
grep -q " $T tracefs" /proc/mounts || mount -t tracefs nodev $T || exit 1
EVENTS="sched/sched_switch:prev_pid,prev_comm,prev_state sched/sched_wakeup:pid,comm"

# Add (+) or remove (!) every histogram trigger.
triggers() {
    for e in $EVENTS; do
        echo "${1#+}hist:keys=${e#*:}:size=16384" >$T/events/${e%%:*}/trigger || return 1
    done
}

# One run: workload $1 (command $2) in round $3.
run_one() {
    name=$1
    cmd=$2
    r=$3
    start_mosaic --stats 0 >/dev/null || exit 1
    triggers + || { stop_mosaic; exit 1; }
    sh -c "$cmd" >/tmp/$name.out 2>&1 || { cat /tmp/$name.out; stop_mosaic; exit 1; }
    for e in $EVENTS; do
        echo "@@HIST $name-$r ${e%%:*}@@"
        grep '^{' $T/events/${e%%:*}/hist
        echo "@@END@@"
    done
    triggers '!'
    own=$(program_time /tmp/$name.out)
    [ -n "$own" ] && report "traced_own_$name-$r" "$own"
    [ "$(cat $SCX/state)" = enabled ] || { echo "ejected during $name"; dmesg | tail -n 20; exit 1; }
    stop_mosaic >/dev/null
}

rounds=$1
shift
each_round "$rounds" run_one "$@"
