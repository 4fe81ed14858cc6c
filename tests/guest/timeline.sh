#!/bin/sh
# tests/guest/timeline.sh - the guest side of scripts/vm-timeline: scx_mosaic's live stats
# every 200 ms through a workload, to see in which phase (start-up, messages, exit) its
# decisions happen.
#
# Usage: timeline.sh ROUNDS 'NAME=COMMAND' ['NAME=COMMAND' ...]
#   Each run starts a fresh scx_mosaic with --stats 0.2 (default flags otherwise; its stats server reuses a snapshot for 100 ms). Output per
#   run: "@@offset_NAME-r@@ SECONDS" (the guest's uptime less the scheduler's runtime, read
#   once before the workload), "@@t0_NAME-r@@" and "@@t1_NAME-r@@" (uptime just before and
#   just after the workload) and the scheduler's output as block NAME-r (its live lines); the
#   script fails on a workload error or an ejection.
. "$(dirname "$0")/lib.sh"

# One run: workload $1 (command $2) in round $3.
run_one() {
    name=$1
    cmd=$2
    r=$3
    start_mosaic --stats 0.2 || exit 1
    sleep 0.5
    up=$(cut -d' ' -f1 /proc/uptime)
    scx_mosaic --stats-json >/tmp/$name-$r.pre.json || { stop_mosaic; exit 1; }
    rt=$(sed -n 's/.*"runtime_s": *\([0-9.]*\).*/\1/p' /tmp/$name-$r.pre.json)
    sleep 0.3
    t0=$(cut -d' ' -f1 /proc/uptime)
    sh -c "$cmd" >/tmp/$name.out 2>&1 || { cat /tmp/$name.out; stop_mosaic; exit 1; }
    t1=$(cut -d' ' -f1 /proc/uptime)
    sleep 0.3
    [ "$(cat $SCX/state)" = enabled ] || { echo "ejected during $name"; dmesg | tail -n 20; exit 1; }
    stop_mosaic
    [ -n "$rt" ] || { echo "no runtime_s in scx_mosaic --stats-json"; exit 1; }
    report "offset_$name-$r" "$(echo "$up $rt" | awk '{ printf "%.3f", $1 - $2 }')"
    report "t0_$name-$r" "$t0"
    report "t1_$name-$r" "$t1"
    report_json "$name-$r" $MOSAIC_LOG
}

rounds=$1
shift
each_round "$rounds" run_one "$@"
