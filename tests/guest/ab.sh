#!/bin/sh
# tests/guest/ab.sh - interleaved A/B/C... comparison of schedulers on one workload, in one
# boot: round r runs the workload once under each scheduler in turn, then a table of
# medians (with min-max) and ratios to the first scheduler.
#
# Usage: ab.sh ROUNDS 'WORKLOAD COMMAND' 'LABEL=FLAGS' ['LABEL=FLAGS' ...]
#   FLAGS "eevdf" means the kernel's default scheduler (no sched_ext scheduler loaded);
#   anything else is passed to scx_mosaic. The workload's time is what it prints as
#   "Time: S" (hackbench) or "Total time: S" (perf bench), else its wall time.
#   AB_LIVE=1 shows scx_mosaic's live stats while it runs; AB_REPORT=1 adds @@median_N@@
#   lines for the host (tests/lib.sh report format).
. "$(dirname "$0")/lib.sh"

rounds=$1
workload=$2
shift 2
dir=/tmp/ab.$$
mkdir -p $dir

# Seconds since boot, with two decimals.
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# Run the workload once; print its time in seconds.
run_workload() {
    local t0 t1 t
    t0=$(uptime_s)
    sh -c "$workload" >$dir/out 2>&1 || { cat $dir/out >&2; return 1; }
    t1=$(uptime_s)
    t=$(program_time $dir/out)
    [ -n "$t" ] || t=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')
    echo "$t"
}

# Run the workload under scheduler flags $1 (eevdf: none loaded); print its time.
run_under() {
    local t pid
    if [ "$1" = eevdf ]; then
        run_workload
        return
    fi
    if [ "${AB_LIVE:-0}" = 1 ]; then
        scx_mosaic --stats 1 $1 >&2 &
    else
        scx_mosaic --stats 0 $1 >$dir/sched.log 2>&1 &
    fi
    pid=$!
    wait_state enabled 60 || { echo "scx_mosaic $1 did not start" >&2; cat $dir/sched.log >&2; return 1; }
    t=$(run_workload) || return 1
    kill -INT $pid
    wait $pid || { echo "scx_mosaic $1 exited with an error" >&2; cat $dir/sched.log >&2; return 1; }
    echo "$t"
}

# Print median, min and max of the numbers in file $1.
summary() {
    sort -n "$1" | awk '{ v[NR] = $1 } END {
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%9.3f %9.3f %9.3f %5d", m, v[1], v[NR], NR }'
}

echo "== $workload: $rounds interleaved rounds on $(nproc) vCPUs =="
r=1
while [ $r -le "$rounds" ]; do
    n=0
    for spec in "$@"; do
        n=$((n + 1))
        t=$(run_under "${spec#*=}") || exit 1
        echo "$t" >>$dir/$n
        echo "round $r: ${spec%%=*}: $t s"
    done
    r=$((r + 1))
done

echo
echo "$workload on $(nproc) vCPUs, $rounds interleaved rounds (QEMU TCG: no caches"
echo "modelled, noisy; compare ratios within this boot, not times across boots)"
printf '%-24s %9s %9s %9s %5s %7s\n' scheduler median min max runs ratio
n=0
for spec in "$@"; do
    n=$((n + 1))
    s=$(summary $dir/$n)
    base=$(summary $dir/1)
    echo "$s $base" | awk -v l="${spec%%=*}" '{ printf "%-24s %9.3f %9.3f %9.3f %5d %7.2f\n", l, $1, $2, $3, $4, $1 / $5 }'
    [ "${AB_REPORT:-0}" = 1 ] && report "median_$n" "$(echo $s | cut -d' ' -f1)"
done
rm -rf $dir
