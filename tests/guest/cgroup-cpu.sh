# tests/test_cgroup_cpu.py: cgroup v2 cpu.max and cpu.idle under scx_mosaic (bandwidth.bpf.c,
# weight.bpf.c). CPU time per cgroup from cpu.stat usage_usec over measured windows.
# Usage: cgroup-cpu.sh [scx_mosaic flags...]
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
echo +cpu >$CG/cgroup.subtree_control || exit 1
mkdir -p $CG/lim $CG/pre $CG/nest/inner $CG/burst $CG/idle $CG/busy
echo +cpu >$CG/nest/cgroup.subtree_control || exit 1
# a limit set before the scheduler loads reaches it through ops.cgroup_init
echo "30000 100000" >$CG/pre/cpu.max

# Time since boot in microseconds (10 ms resolution).
now_us() { awk '{ printf "%d\n", $1 * 1000000 }' /proc/uptime; }

stop_hogs() { kill $HOGS 2>/dev/null; wait $HOGS 2>/dev/null; HOGS=""; }

# Retry command $2... every 0.1 s until it succeeds, for up to 30 s; then print $1 and fail.
within_30s() {
    local what=$1 tries=0
    shift
    until "$@"; do
        tries=$((tries + 1))
        [ $tries -gt 300 ] && { echo "$what" >&2; return 1; }
        sleep 0.1
    done
}

# Start $2 busy loops in cgroup $1 that count their iterations (pids appended to $HOGS). At
# its k-th SIGUSR1 a loop writes its count so far to /tmp/work/<pid>.<k>; a loop waiting for a
# CPU handles the signal when it next runs, before its next iteration. Each loop sets its trap
# before it joins the cgroup (a signal before that would kill it), and this returns once all
# have joined.
counting_hogs() {
    local i=0 p started=""
    while [ $i -lt $2 ]; do
        sh -c "n=0; k=0
               trap 'k=\$((k + 1)); echo \$n >/tmp/work/\$\$.\$k' USR1
               echo \$\$ >$CG/$1/cgroup.procs
               while :; do n=\$((n + 1)); done" &
        started="$started $!"
        i=$((i + 1))
    done
    HOGS="$HOGS $started"
    for p in $started; do
        within_30s "counting loop $p never joined $1" grep -qx $p $CG/$1/cgroup.procs || return 1
    done
}

# Wait (up to 30 s) until each counting loop of pids $2... has written its count number $1.
work_wait() {
    local k=$1 p
    shift
    for p in "$@"; do
        within_30s "counting loop $p never wrote count $k" test -s /tmp/work/$p.$k || return 1
    done
}

# Iterations done by the counting loops of pids $@ between their first and second counts.
work_done() {
    local p sum=0
    for p in "$@"; do
        sum=$((sum + $(cat /tmp/work/$p.2) - $(cat /tmp/work/$p.1)))
    done
    echo $sum
}

# Report, as $1_<cgroup>, each cgroup's CPU time in us over a window of $2 seconds
# (after 1 s to settle), and the window's length in us as $1_window_us.
window() {
    name=$1; secs=$2; shift 2
    sleep 1
    for g in "$@"; do eval "u0_$(echo $g | tr / _)=$(cg_usage $g)"; done
    t0=$(now_us)
    sleep $secs
    t1=$(now_us)
    for g in "$@"; do
        v=$(echo $g | tr / _)
        eval "u0=\$u0_$v"
        report ${name}_$v $(( $(cg_usage $g) - u0 ))
    done
    report ${name}_window_us $((t1 - t0))
}

start_mosaic --stats-file /tmp/s.json "$@" || exit 1

# cpu.max 20 ms per 100 ms, set while loaded (ops.cgroup_set_bandwidth), 4 busy loops
echo "20000 100000" >$CG/lim/cpu.max
cg_hogs lim 4
window limited 5 lim
# "max" lifts the limit at run time: the same loops now take what they can
echo max >$CG/lim/cpu.max
window lifted 3 lim
stop_hogs

# the limit set before the load
cg_hogs pre 4
window preset 4 pre
stop_hogs

# nested: the parent allows 40 ms, the child 10 ms per 100 ms: the tighter one holds
echo "40000 100000" >$CG/nest/cpu.max
echo "10000 100000" >$CG/nest/inner/cpu.max
cg_hogs nest/inner 4
window nested 4 nest/inner
# and the other way round: the parent's 15 ms holds over the child's 50 ms
echo "50000 100000" >$CG/nest/inner/cpu.max
echo "15000 100000" >$CG/nest/cpu.max
window nested_parent 4 nest/inner
stop_hogs

# burst: unused quota banks up to cpu.max.burst. Two cgroups get 400 ms per 1 s (the kernel's
# longest period), one with a 400 ms burst; both idle through two refills, then run 4 loops
# each for 0.5 s within the third period: the banked one can spend 800 ms, the other 400 ms.
# (Quotas this large stand far above the overdraft a run can leave under TCG, where its end
# waits for its vCPU's turn of the host thread: bw_overdraft_max_us, 15-29 ms seen.) Under
# TCG the 0.5 s can stretch past the next refill: burst_refills counts the refills inside
# the window (each cgroup's periods start when its limit is set).
echo "400000 1000000" >$CG/burst/cpu.max || exit 1
echo 400000 >$CG/burst/cpu.max.burst || exit 1
mkdir -p $CG/noburst
echo "400000 1000000" >$CG/noburst/cpu.max || exit 1
t_set=$(now_us)
sleep 2.2
b0=$(cg_usage burst); n0=$(cg_usage noburst); t0=$(now_us)
cg_hogs burst 4; cg_hogs noburst 4
sleep 0.5
stop_hogs
t1=$(now_us)
report burst_used_us $(( $(cg_usage burst) - b0 ))
report noburst_used_us $(( $(cg_usage noburst) - n0 ))
report burst_refills $(( (t1 - t_set) / 1000000 - (t0 - t_set) / 1000000 ))
report burst_window_us $((t1 - t0))

# cpu.idle: an idle cgroup next to a busy one gets (almost) nothing while the busy one has
# work for every CPU (a loop per CPU in each, idle ones started first), and every CPU when it
# has none. Window $1 of $2 s with both; the busy loops stop after it, the idle ones stay
# (their pids in HOGS). Reported twice: as CPU time (cpu.stat, ${1}_idle/_busy) and as work
# done, loop iterations counted by each loop (${1}_work_idle/_busy). Under TCG the CPU time of
# a short turn is billed far beyond its work: a vCPU runs up to 100 ms of the host thread while
# the others wait, and a turn that spans the wait is billed all of it (up to (vCPUs - 1) x
# 100 ms for a tick's work). Work counts only what ran.
idle_next_to_busy() {
    rm -rf /tmp/work; mkdir -p /tmp/work
    counting_hogs idle $(nproc) || exit 1
    local idle_hogs=$HOGS
    HOGS=""
    counting_hogs busy $(nproc) || exit 1
    local busy_hogs=$HOGS
    sleep 1
    local u0_idle=$(cg_usage idle) u0_busy=$(cg_usage busy) t0=$(now_us)
    kill -USR1 $idle_hogs $busy_hogs
    sleep $2
    # a loop that did not run since the first signal would merge the two: wait for its count
    work_wait 1 $idle_hogs || exit 1
    local u1_idle=$(cg_usage idle) u1_busy=$(cg_usage busy) t1=$(now_us)
    kill -USR1 $idle_hogs $busy_hogs
    work_wait 2 $busy_hogs || exit 1
    stop_hogs
    HOGS=$idle_hogs
    work_wait 2 $idle_hogs || exit 1
    report ${1}_idle $((u1_idle - u0_idle))
    report ${1}_busy $((u1_busy - u0_busy))
    report ${1}_window_us $((t1 - t0))
    report ${1}_work_idle $(work_done $idle_hogs)
    report ${1}_work_busy $(work_done $busy_hogs)
}

# First with this load's watchdog (idle tasks overdue after a quarter of it) ...
echo 1 >$CG/idle/cpu.idle
idle_next_to_busy idle_contended 8
window idle_alone 3 idle
stop_hogs
stop_mosaic
grep -q "ejected" $MOSAIC_LOG && { grep -v '^mosaic ' $MOSAIC_LOG | tail -n 150; dmesg | tail -40; }
report_json stats /tmp/s.json

# ... then as a user runs it, with the kernel's 30 s watchdog (overdue after 7.5 s), over a
# window that holds one overdue round
start_mosaic --stats-file /tmp/s2.json || exit 1
idle_next_to_busy idle_default 9
stop_hogs
stop_mosaic
report_json stats_default /tmp/s2.json
