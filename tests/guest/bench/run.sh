#!/bin/sh
# tests/guest/bench/run.sh - the guest side of mosaic-bench (bench/): one workload under several
# schedulers, interleaved in one boot (round 1: A B C, round 2: A B C, ...).
#
# Usage: run.sh ROUNDS 'WORKLOAD' 'LABEL=COMMAND' ['LABEL=COMMAND' ...]
#   WORKLOAD runs with sh -c; its output is handed to the host as is (the host parses it).
#   COMMAND empty: the kernel's default scheduler (no sched_ext scheduler loaded); otherwise
#   a sched_ext scheduler's command line, started in the background and stopped with SIGINT.
# Environment: BENCH_DIR (this directory; exported for the workload scripts),
#   BENCH_START_TIMEOUT (seconds a scheduler may take to enable, default 120).
#
# For every sched_ext run it measures the BPF cost per call (kernel.bpf_stats_enabled=1;
# run_time_ns and run_cnt of the scheduler's struct_ops programs, read from the fdinfo of its
# program fds, before and after the workload) and checks how it ended: still enabled when the
# workload finished, the kernel's "disabled (reason)" line says it was unregistered, and the
# scheduler exited 0. Anything else is an ejection or failure, reported as fail=... .
# A command starting with scx_mosaic also gets --stats-file: its own runnable-wait statistics
# over its run (wait_max_us, wait_p99_us of the JSON it writes at exit) go into the META line;
# other schedulers keep no such counters (empty fields).
# Every run, the kernel's default included, also gets the shared wait measure: `mosaic-bench
# waits` (a BPF tracer on the scheduler tracepoints, the same for every scheduler) is started
# before the workload, once it reports that it traces (its load stays outside the workload's
# wall time), and stopped with SIGINT right after; its figures go into the META line as
# shared_wait_count, shared_wait_p50_us, shared_wait_p99_us, shared_wait_max_us and
# shared_wait_max_task (empty, and a "waits tracer:" line before the run's block, if it could
# not run; the run itself does not fail for that).
#
# Output lines for the host (mosaic-bench parses them; everything else is informational):
#   @@BENCH-INFO kernel=R nproc=N@@
#   @@RUN LABEL ROUND@@ <workload output> @@META key=value ...@@ @@ENDRUN@@
rounds=$1
workload=$2
shift 2
: "${BENCH_DIR:=$(cd "$(dirname "$0")" && pwd)}"
export BENCH_DIR
start_timeout=${BENCH_START_TIMEOUT:-120}
# wait_state, struct_ops_stats
. "$(dirname "$0")/../lib.sh"
SCX=/sys/kernel/sched_ext
dir=$(mktemp -d /tmp/bench.XXXXXX)

# Seconds since boot (two decimals).
now() { cut -d' ' -f1 /proc/uptime; }

# Print "run_time_ns run_cnt nprogs" summed over the struct_ops programs whose fds process $1
# holds (struct_ops_stats).
bpf_snapshot() {
    struct_ops_stats "$1" | awk '{ N += $3; C += $4; P++ } END { printf "%.0f %.0f %d\n", N, C, P }'
}

# The number of top-level key $1 in the pretty-printed JSON file $2 ("" if absent).
json_top() {
    sed -n "s/^  \"$1\": \([0-9.]*\),\{0,1\}\$/\1/p" "$2" 2>/dev/null | head -n 1
}

# Start the wait tracer (mosaic-bench waits) and wait until it traces; clears the shared wait
# figures. Sets waits_pid, or waits_err if it could not start.
waits_start() {
    local n=0
    waits_pid='' waits_err='' sw_count='' sw_p50='' sw_p99='' sw_max='' sw_task=''
    rm -f $dir/waits.out $dir/waits.err
    if ! command -v mosaic-bench >/dev/null 2>&1; then
        waits_err="mosaic-bench not found"
        return
    fi
    mosaic-bench waits >$dir/waits.out 2>$dir/waits.err &
    waits_pid=$!
    while ! grep -q '^mosaic-bench waits: tracing' $dir/waits.err 2>/dev/null; do
        if ! kill -0 $waits_pid 2>/dev/null; then
            wait $waits_pid
            waits_err="exited with status $?: $(tail -n 1 $dir/waits.err)"
            waits_pid=''
            return
        fi
        n=$((n + 1))
        if [ $n -gt 300 ]; then
            kill -KILL $waits_pid 2>/dev/null
            wait $waits_pid
            waits_err="not tracing within 30 s"
            waits_pid=''
            return
        fi
        sleep 0.1
    done
}

# Stop the wait tracer and read its @@WAITS line into sw_count, sw_p50, sw_p99, sw_max, sw_task.
waits_stop() {
    local k=0 line
    [ -n "$waits_pid" ] || return 0
    kill -INT $waits_pid
    while kill -0 $waits_pid 2>/dev/null && [ $k -lt 100 ]; do sleep 0.1; k=$((k + 1)); done
    kill -KILL $waits_pid 2>/dev/null
    wait $waits_pid
    waits_pid=''
    line=$(sed -n 's/^@@WAITS \(.*\)@@$/\1/p' $dir/waits.out | tail -n 1)
    if [ -z "$line" ]; then
        waits_err="no @@WAITS line: $(tail -n 1 $dir/waits.err)"
        return 0
    fi
    sw_count=$(waits_field count "$line")
    sw_p50=$(waits_field p50_us "$line")
    sw_p99=$(waits_field p99_us "$line")
    sw_max=$(waits_field max_us "$line")
    sw_task=$(waits_field max_task "$line")
}

# The value of field $1 in the key=value words of $2.
waits_field() {
    echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

# Run the workload once: output to $dir/out, sets wrc and wall.
run_workload() {
    local t0 t1
    t0=$(now)
    sh -c "$workload" >$dir/out 2>&1
    wrc=$?
    t1=$(now)
    wall=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')
}

# One run of the workload under scheduler command $1 (empty: the kernel's default).
# Prints the @@RUN block.
run_under() {
    local cmd=$1 pid='' fail='' ops='' b0='' b1='' src=0 line n0 exitmsg='' k state
    local stats=$dir/sched-stats.json wmax='' wp99=''
    wrc='' wall='' waits_pid='' waits_err='' sw_count='' sw_p50='' sw_p99='' sw_max='' sw_task=''
    rm -f "$stats"
    case $cmd in
        scx_mosaic | scx_mosaic\ *) cmd="$cmd --stats-file $stats" ;;
    esac
    if [ -n "$cmd" ]; then
        if [ "$(cat $SCX/state)" != disabled ]; then
            fail="another sched_ext scheduler is loaded ($(cat $SCX/root/ops 2>/dev/null))"
        else
            n0=$(dmesg | wc -l)
            sh -c "exec $cmd" >$dir/sched.log 2>&1 &
            pid=$!
            if ! wait_state enabled "$start_timeout" "$pid"; then
                if kill -0 $pid 2>/dev/null; then
                    fail="did not enable within ${start_timeout} s"
                else
                    fail="exited before enabling"
                fi
            else
                ops=$(cat $SCX/root/ops 2>/dev/null)
                waits_start
                b0=$(bpf_snapshot $pid)
                run_workload
                b1=$(bpf_snapshot $pid)
                waits_stop
                state=$(cat $SCX/state)
                [ "$state" = enabled ] || fail="ejected during the workload (state $state)"
            fi
            if kill -0 $pid 2>/dev/null; then
                kill -INT $pid
                k=0
                while kill -0 $pid 2>/dev/null && [ $k -lt 300 ]; do sleep 0.1; k=$((k + 1)); done
                if kill -0 $pid 2>/dev/null; then
                    kill -KILL $pid
                    [ -n "$fail" ] || fail="did not exit within 30 s of SIGINT"
                fi
            fi
            wait $pid
            src=$?
            wait_state disabled 30 || [ -n "$fail" ] || fail="sched_ext still $(cat $SCX/state) after exit"
            exitmsg=$(dmesg | tail -n +$((n0 + 1)) | grep -a 'sched_ext:.*disabled (' | tail -n 1 |
                sed 's/.*disabled (\(.*\))/\1/')
            case $exitmsg in
                unregistered*) ;;
                '') [ -n "$fail" ] || fail="no 'disabled' line from the kernel" ;;
                *) fail="ejected: $exitmsg${fail:+ ($fail)}" ;;
            esac
            [ "$src" = 0 ] || [ -n "$fail" ] || fail="scheduler exited with status $src"
            wmax=$(json_top wait_max_us "$stats")
            wp99=$(json_top wait_p99_us "$stats")
        fi
    else
        waits_start
        run_workload
        waits_stop
    fi
    [ -z "$fail" ] && [ "$wrc" != 0 ] && fail="workload exited with status $wrc"
    [ -n "$waits_err" ] && echo "waits tracer ($label round $round): $waits_err"
    echo "@@RUN $label $round@@"
    [ -f $dir/out ] && cat $dir/out
    printf '@@META wall=%s wrc=%s sched_rc=%s ops=%s bpf0=%s bpf1=%s wait_max_us=%s wait_p99_us=%s shared_wait_count=%s shared_wait_p50_us=%s shared_wait_p99_us=%s shared_wait_max_us=%s shared_wait_max_task=%s exit=%s fail=%s@@\n' \
        "$wall" "$wrc" "$src" "$ops" "$(echo $b0 | tr ' ' ,)" "$(echo $b1 | tr ' ' ,)" \
        "$wmax" "$wp99" "$sw_count" "$sw_p50" "$sw_p99" "$sw_max" "$sw_task" \
        "$(echo "$exitmsg" | tr ' ' _)" "$(echo "$fail" | tr ' ' _)"
    if [ -n "$fail" ] && [ -n "$cmd" ]; then
        echo "---- $label: scheduler output (tail) ----"
        tail -n 20 $dir/sched.log
        dmesg | tail -n +$((n0 + 1)) | grep -a sched_ext | tail -n 10
        echo "----"
    fi
    echo "@@ENDRUN@@"
    rm -f $dir/out
}

old_stats=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
echo 1 >/proc/sys/kernel/bpf_stats_enabled
echo "@@BENCH-INFO kernel=$(uname -r) nproc=$(nproc)@@"
round=1
while [ $round -le "$rounds" ]; do
    for spec in "$@"; do
        label=${spec%%=*}
        run_under "${spec#*=}"
    done
    round=$((round + 1))
done
echo "$old_stats" >/proc/sys/kernel/bpf_stats_enabled
rm -rf "$dir"
