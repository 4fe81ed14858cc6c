#!/bin/sh
# tests/guest/bench/weight-split.sh - the guest side of scripts/weight-split: how a scheduler
# splits the CPU between busy cgroups of different cpu.weight. Round by round, each arm in
# turn: its scheduler loads, busy loops start in two sibling cgroups (COUNTS of them, at
# WEIGHTS), and after a 3 s warm-up the kernel's own account of each cgroup's CPU time
# (cpu.stat usage_usec) is read over an 8 s window.
#
# Usage: weight-split.sh ROUNDS WA:WB NA:NB LABEL:COMMAND ...
#   COMMAND empty: the kernel's default scheduler; else a sched_ext scheduler's command line,
#   its words separated by commas.
# Prints per window: @@WEIGHT label=L round=R a_us=A b_us=B idle_ticks=I state=S@@
#   A, B: the two cgroups' CPU time in the window; I: idle ticks of all CPUs in it (USER_HZ);
#   S: sched_ext's state at the window's end (enabled for a sched_ext arm, else an ejection).
. "$(dirname "$0")/../lib.sh"
rounds=$1 weights=$2 counts=$3
shift 3
CG=/sys/fs/cgroup
echo +cpu >$CG/cgroup.subtree_control || exit 1
mkdir -p $CG/split-a $CG/split-b || exit 1
echo "${weights%%:*}" >$CG/split-a/cpu.weight || exit 1
echo "${weights#*:}" >$CG/split-b/cpu.weight || exit 1

idle_ticks() { awk '/^cpu / { print $5 }' /proc/stat; }

round=1
rc=0
while [ "$round" -le "$rounds" ]; do
    for arm in "$@"; do
        label=${arm%%:*} cmd=$(echo "${arm#*:}" | tr , ' ')
        if ! start_arm "$label round $round" "$cmd" /tmp/weight-split.log; then
            rc=1
            continue
        fi
        cg_hogs split-a "${counts%%:*}"
        cg_hogs split-b "${counts#*:}"
        sleep 3
        a0=$(cg_usage split-a) b0=$(cg_usage split-b) i0=$(idle_ticks)
        sleep 8
        a1=$(cg_usage split-a) b1=$(cg_usage split-b) i1=$(idle_ticks)
        state=$(cat /sys/kernel/sched_ext/state)
        kill $HOGS
        HOGS=""
        stop_arm "$state" || rc=1
        sleep 1
        echo "@@WEIGHT label=$label round=$round a_us=$((a1 - a0)) b_us=$((b1 - b0)) idle_ticks=$((i1 - i0)) state=$state@@"
    done
    round=$((round + 1))
done
exit $rc
