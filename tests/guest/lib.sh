# tests/guest/lib.sh - helpers for VM test scripts (busybox sh, sourced in the guest).
#
# The host-side tests (tests/test_vm.py) run scripts that source this file. Results go
# to stdout as "@@KEY@@ value" lines and as JSON blocks between "@@JSON <name>@@" and
# "@@END@@", which the host parses and asserts on.

SCX=/sys/kernel/sched_ext
MOSAIC_PID=
MOSAIC_LOG=/tmp/mosaic.log

# Print a result line for the host: @@KEY@@ VALUE.
report() { echo "@@$1@@ $2"; }

# Call "$2 NAME COMMAND ROUND" for rounds 1..$1 and, in each, every 'NAME=COMMAND' after $2, in
# order; stop at the first call that fails.
each_round() {
    local rounds=$1 fn=$2 r=1 spec
    shift 2
    while [ $r -le "$rounds" ]; do
        for spec in "$@"; do
            $fn "${spec%%=*}" "${spec#*=}" $r || return 1
        done
        r=$((r + 1))
    done
}

# The time the program whose output is file $1 reports (its last): hackbench's "Time:", perf
# bench's "Total time:"; nothing if it printed neither.
program_time() {
    sed -n 's/^ *Total time: *\([0-9.]*\).*/\1/p; s/^Time: *\([0-9.]*\).*/\1/p' "$1" | tail -n 1
}

# Print file $2 as a JSON block named $1 for the host.
report_json() { echo "@@JSON $1@@"; cat "$2"; echo "@@END@@"; }

# Wait up to $2 seconds for the sched_ext state to read $1, while process $3 (if given) lives.
wait_state() {
    local n=0
    while [ "$(cat $SCX/state 2>/dev/null)" != "$1" ]; do
        [ -n "$3" ] && ! kill -0 "$3" 2>/dev/null && return 1
        n=$((n + 1))
        [ $n -gt $(($2 * 10)) ] && return 1
        sleep 0.1
    done
}

# "ID TAG RUN_TIME_NS RUN_CNT" for each struct_ops program (BPF_PROG_TYPE_STRUCT_OPS = 27) whose
# fd process $1 holds, each program once (run time and count need kernel.bpf_stats_enabled=1).
struct_ops_stats() {
    for f in /proc/"$1"/fdinfo/*; do cat "$f" 2>/dev/null; echo; done | awk '
        /^prog_type:/ { t = $2 } /^prog_id:/ { id = $2 } /^prog_tag:/ { g = $2 }
        /^run_time_ns:/ { ns = $2 } /^run_cnt:/ { c = $2 }
        /^$/ { if (t == 27 && !(id in seen)) { seen[id] = 1; print id, g, ns, c }
               t = ""; id = ""; g = ""; ns = 0; c = 0 }'
}

# Start scx_mosaic in the background with the given flags; wait until enabled.
start_mosaic() {
    scx_mosaic "$@" >$MOSAIC_LOG 2>&1 &
    MOSAIC_PID=$!
    if ! wait_state enabled 60; then
        echo "scx_mosaic did not enable within 60 s; its output:"
        cat $MOSAIC_LOG
        return 1
    fi
    report ops "$(cat $SCX/root/ops)"
    report state_running "$(cat $SCX/state)"
}

# Start the arm $1 of a study's interleaved rounds: the sched_ext scheduler command line $2
# (nothing for the kernel's default), its output to file $3; wait until it enables. Its pid
# goes to ARM_PID (empty for the default). If it does not enable within 120 s: say so, stop
# it and return 1, so that the caller skips the arm's run.
start_arm() {
    ARM_PID=
    [ -n "$2" ] || return 0
    $2 >"$3" 2>&1 &
    ARM_PID=$!
    wait_state enabled 120 $ARM_PID && return 0
    echo "$1: did not enable (run skipped); its output:"
    tail -n 5 "$3"
    kill -INT $ARM_PID 2>/dev/null
    wait $ARM_PID
    return 1
}

# Stop the arm start_arm() started, if any (none for the kernel's default). Returns 1 if its
# scheduler was ejected: sched_ext's state $1, read as the run ended, was not "enabled".
stop_arm() {
    [ -n "$ARM_PID" ] || return 0
    kill -INT $ARM_PID
    wait $ARM_PID
    [ "$1" = enabled ]
}

# Send SIGINT to scx_mosaic, wait for it, report its exit status and log.
stop_mosaic() {
    local rc
    kill -INT $MOSAIC_PID 2>/dev/null
    wait $MOSAIC_PID
    rc=$?
    report mosaic_rc $rc
    report state_after "$(cat $SCX/state)"
    echo "---- scx_mosaic output (tail) ----"
    tail -n 15 $MOSAIC_LOG
    echo "----"
}

# Wait for scx_mosaic to exit on its own (up to $1 s); report status and log.
wait_mosaic_exit() {
    local n=0
    while kill -0 $MOSAIC_PID 2>/dev/null; do
        n=$((n + 1))
        if [ $n -gt $(($1 * 10)) ]; then
            report mosaic_rc timeout
            return 1
        fi
        sleep 0.1
    done
    wait $MOSAIC_PID
    report mosaic_rc $?
    report state_after "$(cat $SCX/state)"
    echo "---- scx_mosaic output (tail) ----"
    tail -n 15 $MOSAIC_LOG
    echo "----"
}

# Run hackbench with args $2..., report the time it prints (seconds) as @@$1@@.
timed_hackbench() {
    local name=$1 t
    shift
    hackbench "$@" >/tmp/hb.out 2>&1 || { cat /tmp/hb.out; return 1; }
    t=$(sed -n 's/^Time: *//p' /tmp/hb.out)
    report "$name" "$t"
}

# Run workload $3 (a shell command) under scx_mosaic with flags $2; report the
# final counters as JSON block $1, and the workload's output on failure.
stats_under() {
    start_mosaic $2 --stats 0 --stats-file /tmp/$1.json || return 1
    sh -c "$3" >/tmp/$1.out 2>&1 || { cat /tmp/$1.out; stop_mosaic; return 1; }
    stop_mosaic
    report_json $1 /tmp/$1.json
}

# Start $2 CPU-bound shell loops allowed on CPUs $1 (a taskset list); their pids are
# appended to $BUSY_PIDS.
busy_loops() {
    local i=0
    while [ $i -lt $2 ]; do
        taskset -c $1 sh -c 'while :; do :; done' &
        BUSY_PIDS="$BUSY_PIDS $!"
        i=$((i + 1))
    done
}

# Print the CPU each of the pids $3... last ran on, $1 times, every $2 seconds (sleeping
# before each sample), on one line.
cpu_samples() {
    local n=$1 every=$2 i=0 where="" p
    shift 2
    while [ $i -lt $n ]; do
        sleep $every
        for p in "$@"; do where="$where $(cut -d' ' -f39 /proc/$p/stat)"; done
        i=$((i + 1))
    done
    echo $where
}

# CPU time in us of cgroup $1 (a path under /sys/fs/cgroup), from its cpu.stat.
cg_usage() { sed -n 's/^usage_usec //p' /sys/fs/cgroup/$1/cpu.stat; }

# Start $2 CPU-bound shell loops in cgroup $1 (a path under /sys/fs/cgroup); their pids are
# appended to $HOGS.
cg_hogs() {
    local i=0
    while [ $i -lt $2 ]; do
        sh -c "echo \$\$ >/sys/fs/cgroup/$1/cgroup.procs; while :; do :; done" &
        HOGS="$HOGS $!"
        i=$((i + 1))
    done
}

# As cg_hogs, but hog i pinned to CPU i mod $3 (taskset -c).
cg_pinned_hogs() {
    local i=0
    while [ $i -lt $2 ]; do
        taskset -c $((i % $3)) sh -c "echo \$\$ >/sys/fs/cgroup/$1/cgroup.procs; while :; do :; done" &
        HOGS="$HOGS $!"
        i=$((i + 1))
    done
}

# Start `sysbench cpu` with $2 threads for $3 s in cgroup $1 (a path under /sys/fs/cgroup);
# its output goes to /tmp/sb.<last path component>, its pid is appended to $SB_PIDS.
sysbench_in_cgroup() {
    sh -c "echo \$\$ >/sys/fs/cgroup/$1/cgroup.procs; exec sysbench cpu --threads=$2 --time=$3 run" \
        >/tmp/sb.${1##*/} 2>&1 &
    SB_PIDS="$SB_PIDS $!"
}
