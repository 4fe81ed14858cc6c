# tests/guest/gauntlet/lib.sh - helpers of the reliability gauntlet's cells (busybox sh,
# sourced by run.sh in the guest). Every value a cell reports is "@@<cell>_<key>@@ value";
# the host (tests/gauntlet/run.py) decides pass or fail from them.

. /mosaic/guest/lib.sh
G=/mosaic/guest/gauntlet
NCPU=$(nproc)
CELL=cell
# Kernel log lines that fail a cell (the host applies the same pattern to what is printed).
BAD_RE='BUG|WARNING|Oops|Call Trace|sched_ext:.*(error|stall)|rcu.*stall|blocked for more than'

# Report value $2 under key $1 of the current cell.
r() { report "${CELL}_$1" "$2"; }

# Seconds since boot (whole).
now() { cut -d. -f1 /proc/uptime; }

# Milliseconds since boot (10 ms resolution).
ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }

# Sample the number of runnable tasks (/proc/loadavg's 4th field, before the slash) every
# 100 ms in the background, keeping the largest in /tmp/g.runnable, until runnable_stop.
runnable_start() {
    echo 0 >/tmp/g.runnable
    (
        max=0
        while :; do
            read -r _ _ _ rt _ </proc/loadavg
            n=${rt%/*}
            [ "$n" -gt "$max" ] && max=$n && echo $max >/tmp/g.runnable
            sleep 0.1
        done
    ) &
    RUNNABLE_PID=$!
    echo $RUNNABLE_PID >/tmp/g.runnable.pid
}

# Stop the sampler; report the largest runnable count it saw as runnable_max.
runnable_stop() {
    kill "$RUNNABLE_PID" 2>/dev/null
    wait "$RUNNABLE_PID" 2>/dev/null
    rm -f /tmp/g.runnable.pid
    r runnable_max "$(cat /tmp/g.runnable)"
}

# Start scx_mosaic with extra flags "$@" (and $GAUNTLET_MOSAIC_FLAGS), quiet, final counters
# to /tmp/g.$CELL.json; start the runnable sampler.
g_start() {
    rm -f /tmp/g.$CELL.json
    runnable_start
    # shellcheck disable=SC2086
    if ! start_mosaic --stats 0 --stats-file /tmp/g.$CELL.json $GAUNTLET_MOSAIC_FLAGS "$@" \
        >/tmp/g.start 2>&1; then
        r load_error "$(grep -v '^@@' /tmp/g.start | tail -n 5 | tr '\n' '|')"
        return 1
    fi
    r controls "$(sed -n 's/^scx_mosaic: cgroup controls: //p' $MOSAIC_LOG)"
}

# Stop scx_mosaic with SIGINT; report its status, the state after, its counters, and the
# runnable count.
g_stop() {
    runnable_stop
    kill -INT $MOSAIC_PID 2>/dev/null
    wait $MOSAIC_PID
    r mosaic_rc $?
    r state_after "$(cat $SCX/state)"
    # the last lines; after an ejection, the kernel's dump of what was runnable where
    local lines=5
    grep -q 'ejected by the kernel' $MOSAIC_LOG && lines=5000
    grep -v '^mosaic ' $MOSAIC_LOG | tail -n $lines | sed "s/^/[$CELL scx_mosaic] /"
    [ -f /tmp/g.$CELL.json ] && report_json $CELL /tmp/g.$CELL.json
}

# Start spin (tests/gauntlet/spin.c) as probe $1 with arguments $2...; pid in /tmp/g.pid.$1.
spin_bg() {
    local name=$1
    shift
    spin "$@" >/tmp/g.spin.$name 2>&1 &
    echo $! >/tmp/g.pid.$name
}

# Wait for spin probe $1 and report its result line as spin_$1.
spin_wait() {
    wait "$(cat /tmp/g.pid.$1)"
    r spin_$1 "$(grep '^spin ' /tmp/g.spin.$1 | tail -n 1)"
    grep -v '^spin ' /tmp/g.spin.$1 | head -n 3 | sed "s/^/[$CELL spin $1] /"
}

# The canary probe: 2 CPU hogs per CPU for the cell's whole window (oversubscribed 2x).
canaries() { spin_bg canary -t $((2 * NCPU)) -s "$SECS"; }

# Start stress-ng with stressor arguments "$@" for the cell's window, in the background.
stressng() {
    stress-ng "$@" --metrics-brief --timeout "${SECS}s" >/tmp/g.sng 2>&1 &
    SNG_PID=$!
}

# Wait for stress-ng; report its status and the bogo ops of each stressor as name=ops,...
stressng_wait() {
    wait $SNG_PID
    r stressng_rc $?
    r bogo "$(sed -n 's/^stress-ng: metrc: \[[0-9]*\] \([a-z0-9-]*\) *\([0-9][0-9]*\) .*/\1=\2/p' /tmp/g.sng |
        tr '\n' ',' | sed 's/,$//')"
    grep -E 'fail|error' /tmp/g.sng | head -n 3 | sed "s/^/[$CELL stress-ng] /"
}

# Run the rest of the cell's shell at nice -20, so that its churn loop keeps its pace against
# the oversubscribed load; commands it starts afterwards inherit that.
boost() {
    local pid rest
    read -r pid rest </proc/self/stat
    renice -n -20 -p "$pid" >/dev/null
}

# Wait up to 10 s until probe $1 has more than $2 threads (its workers and its main thread).
wait_threads() {
    local n=0
    while [ "$(ls /proc/"$(cat /tmp/g.pid.$1)"/task 2>/dev/null | wc -l)" -le "$2" ] && [ $n -lt 100 ]; do
        n=$((n + 1))
        sleep 0.1
    done
}

# Print the thread ids of the processes whose pid files are named $1...
tids_of() {
    local n
    for n in "$@"; do ls /proc/"$(cat /tmp/g.pid.$n)"/task 2>/dev/null; done
}

# Start a worker probe (2 threads) per CPU, w1..wN, in cgroup $1/base for the cell's window;
# their names in $WORKERS.
start_workers() {
    local i
    WORKERS=""
    for i in $(seq "$NCPU"); do
        spin_bg w$i -t 2 -s "$SECS"
        echo "$(cat /tmp/g.pid.w$i)" >$1/base/cgroup.procs
        WORKERS="$WORKERS w$i"
    done
}

# Move the processes of cgroup $2 to $1/base, and remove $2.
drop_cgroup() {
    local p
    [ -d "$2" ] || return 0
    for p in $(cat "$2/cgroup.procs"); do echo "$p" >$1/base/cgroup.procs 2>/dev/null; done
    rmdir "$2" 2>/dev/null || { sleep 0.2; rmdir "$2"; }
}
