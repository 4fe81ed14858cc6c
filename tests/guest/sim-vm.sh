#!/bin/sh
# tests/guest/sim-vm.sh - the guest side of scripts/sim-vm-counters: scx_mosaic's counters
# under the bench workloads, for the simulator's fidelity table (docs/sim-report.md).
#
# Usage: sim-vm.sh ROUNDS 'NAME=COMMAND' ['NAME=COMMAND' ...]
#   Round r runs each workload once, in order, each under a fresh scx_mosaic (default flags).
# Output per run: "@@wall_NAME-r@@ SECONDS" (the workload alone), "@@own_NAME-r@@ SECONDS" (the
# time the program itself reports: hackbench's "Time:", perf bench's "Total time:"; nothing if
# it printed neither), the scheduler's final counters as JSON block NAME-r and its stats just
# before and just after the workload (--stats-json) as blocks NAME-r-pre and NAME-r-post; the
# script fails on a workload error or an ejection.
. "$(dirname "$0")/lib.sh"

# One run: workload $1 (command $2) in round $3.
run_one() {
    name=$1
    cmd=$2
    r=$3
    start_mosaic --stats 0 --stats-file /tmp/$name-$r.json || exit 1
    scx_mosaic --stats-json >/tmp/$name-$r.pre.json || { stop_mosaic; exit 1; }
    t0=$(cut -d' ' -f1 /proc/uptime)
    sh -c "$cmd" >/tmp/$name.out 2>&1 || { cat /tmp/$name.out; stop_mosaic; exit 1; }
    t1=$(cut -d' ' -f1 /proc/uptime)
    scx_mosaic --stats-json >/tmp/$name-$r.post.json || { stop_mosaic; exit 1; }
    [ "$(cat $SCX/state)" = enabled ] || { echo "ejected during $name"; dmesg | tail -n 20; exit 1; }
    stop_mosaic
    report "wall_$name-$r" "$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')"
    own=$(program_time /tmp/$name.out)
    [ -n "$own" ] && report "own_$name-$r" "$own"
    report_json "$name-$r" /tmp/$name-$r.json
    report_json "$name-$r-pre" /tmp/$name-$r.pre.json
    report_json "$name-$r-post" /tmp/$name-$r.post.json
}

rounds=$1
shift
each_round "$rounds" run_one "$@"
