#!/bin/sh
# tests/guest/bench/vcpu-count.sh - the guest side of scripts/tcg-vcpus: one of the bench's
# workloads under several arms, interleaved round by round, each arm with only its first NCPU
# CPUs online (the others offlined before its scheduler starts and onlined after it stops, so
# every scheduler sees a whole machine).
#
# Usage: WORKLOAD_CMD=CMD vcpu-count.sh ROUNDS WORKLOAD LABEL:NCPU:COMMAND ...
#   WORKLOAD: sysbench-cg, hackbench or messaging, which says how to read the output of CMD,
#   the bench's command for it (`mosaic-bench list`; run with BENCH_DIR set to this directory,
#   as tests/guest/bench/run.sh runs it).
#   COMMAND empty: the kernel's default scheduler; else a sched_ext scheduler's command line,
#   its words separated by commas.
# Prints per run: @@VCPUS label=L round=R rate=N busy=B ctxt_per_s=C loc_per_s=T vol=V
#   invol=I migr=M state=S@@
#   rate: work a second (sysbench-cg: the summed rates of the 4 groups; hackbench and
#   messaging: 1 / their time in seconds); busy: CPUs running tasks, averaged
#   over the run (/proc/schedstat); loc_per_s: local timer interrupts; vol, invol, migr: the
#   workload's own tasks' voluntary and involuntary context switches and migrations (the
#   static `rusage` helper, tests/guest/bench/rusage.c, in the guest's PATH); state: sched_ext's
#   state when the workload ended (enabled for a sched_ext arm, else an ejection).
. "$(dirname "$0")/../lib.sh"
rounds=$1 workload=$2
shift 2
case $workload in
    sysbench-cg | hackbench | messaging) ;;
    *) echo "vcpu-count.sh: unknown workload $workload"; exit 2 ;;
esac
[ -n "$WORKLOAD_CMD" ] || { echo "vcpu-count.sh: WORKLOAD_CMD is not set"; exit 2; }
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
export BENCH_DIR
arms="$*"

# Keep the CPUs numbered below $1 online (cpu0 has no online switch), take the rest offline.
set_online() {
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        [ -f "$c/online" ] || continue
        id=${c##*cpu}
        if [ "$id" -lt "$1" ]; then echo 1 >"$c/online"; else echo 0 >"$c/online"; fi
    done
}

# Run the workload; print its work a second. Its tasks' switches and moves go to /tmp/rusage.
work_rate() {
    rusage /tmp/rusage sh -c "$WORKLOAD_CMD" | case $workload in
        sysbench-cg) sed -n 's/.*Total operations.*(\([0-9.]*\) per second).*/\1/p' |
            awk '{ s += $1 } END { printf "%.0f", s }' ;;
        hackbench) awk '/^Time:/ { printf "%.6f", 1 / $2 }' ;;
        messaging) awk '/Total time:/ { printf "%.6f", 1 / $3 }' ;;
    esac
}

# "task_ms ctxt loc uptime_s": the counters read around a run.
counters() {
    awk '/^cpu[0-9]/ { ns += $8 } END { printf "%d ", ns / 1e6 }' /proc/schedstat
    awk '/^ctxt/ { printf "%d ", $2 }' /proc/stat
    awk '/LOC:/ { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; printf "%d ", s }' /proc/interrupts
    cut -d' ' -f1 /proc/uptime
}

round=1
rc=0
while [ $round -le "$rounds" ]; do
    for arm in $arms; do
        label=${arm%%:*} rest=${arm#*:}
        ncpu=${rest%%:*} cmd=$(echo "${rest#*:}" | tr , ' ')
        set_online "$ncpu"
        if ! start_arm "$label round $round" "$cmd" /tmp/vcpu-count.log; then
            rc=1
            continue
        fi
        read -r ms0 x0 l0 t0 <<EOF
$(counters)
EOF
        rm -f /tmp/rusage
        rate=$(work_rate)
        vol=0 invol=0 migr=0
        [ -s /tmp/rusage ] && read -r vol invol migr </tmp/rusage
        read -r ms1 x1 l1 t1 <<EOF
$(counters)
EOF
        state=$(cat /sys/kernel/sched_ext/state)
        stop_arm "$state" || rc=1
        awk -v l="$label" -v r=$round -v o="$rate" -v ms=$((ms1 - ms0)) -v x=$((x1 - x0)) \
            -v lc=$((l1 - l0)) -v t0="$t0" -v t1="$t1" -v st="$state" -v vo="$vol" -v iv="$invol" -v mg="$migr" \
            'BEGIN { t = t1 - t0
            printf "@@VCPUS label=%s round=%d rate=%s busy=%.3f ctxt_per_s=%.0f loc_per_s=%.0f vol=%d invol=%d migr=%d state=%s@@\n",
                l, r, o, ms / 1000 / t, x / t, lc / t, vo, iv, mg, st }'
    done
    round=$((round + 1))
done
set_online 4096
exit $rc
