#!/bin/sh
# tests/guest/exit-frees.sh - the guest side of scripts/exit-frees: when a message program's
# workers' stacks are freed after they exit, and how long after the program's end the harness
# reads scx_mosaic's counters (tests/guest/sim-vm.sh's window), for the simulator's background
# (sim/src/workload.rs, Background).
#
# Usage: exit-frees.sh ROUNDS COMMAND
#   Each round runs COMMAND once under a fresh scx_mosaic (default flags), between two reads of
#   its counters as sim-vm.sh takes them, with ftrace recording the tasks' exits and the work
#   queued on each CPU's workqueues (scripts/exit-frees picks delayed_vfree_work's). Output per round: the trace as
#   block "trace-r" (a marker line at the program's start and end), then "@@ok-r@@".
. "$(dirname "$0")/lib.sh"

T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
echo 16384 >$T/buffer_size_kb
echo 1 >$T/events/sched/sched_process_exit/enable
echo 1 >$T/events/workqueue/workqueue_queue_work/enable

rounds=$1
cmd=$2
r=1
while [ $r -le "$rounds" ]; do
    start_mosaic --stats 0 || exit 1
    scx_mosaic --stats-json >/dev/null || { stop_mosaic; exit 1; }
    echo >$T/trace
    echo 1 >$T/tracing_on
    echo "workload start" >$T/trace_marker
    sh -c "$cmd" >/tmp/out 2>&1 || { cat /tmp/out; stop_mosaic; exit 1; }
    echo "workload end" >$T/trace_marker
    scx_mosaic --stats-json >/dev/null || { stop_mosaic; exit 1; }
    echo 0 >$T/tracing_on
    [ "$(cat $SCX/state)" = enabled ] || { echo "ejected in round $r"; exit 1; }
    stop_mosaic
    echo "@@JSON trace-$r@@"
    grep -v '^#' $T/trace
    echo "@@END@@"
    report "ok-$r" 1
    r=$((r + 1))
done
