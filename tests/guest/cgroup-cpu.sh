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
# (Quotas this large stand above the overdraft a period can end with under TCG, about
# 100-250 ms: a run is charged at its CPU's next tick, which TCG delays by the other vCPUs'
# turns.)
echo "400000 1000000" >$CG/burst/cpu.max || exit 1
echo 400000 >$CG/burst/cpu.max.burst || exit 1
mkdir -p $CG/noburst
echo "400000 1000000" >$CG/noburst/cpu.max || exit 1
sleep 2.2
b0=$(cg_usage burst); n0=$(cg_usage noburst)
cg_hogs burst 4; cg_hogs noburst 4
sleep 0.5
stop_hogs
report burst_used_us $(( $(cg_usage burst) - b0 ))
report noburst_used_us $(( $(cg_usage noburst) - n0 ))

# cpu.idle: an idle cgroup next to a busy one gets (almost) nothing while the busy one has
# work for every CPU (a loop per CPU in each, idle ones started first), and every CPU when it
# has none. Window $1 of $2 s with both; the busy loops stop after it, the idle ones stay
# (their pids in HOGS).
idle_next_to_busy() {
    cg_hogs idle $(nproc)
    local idle_hogs=$HOGS
    HOGS=""
    cg_hogs busy $(nproc)
    window $1 $2 idle busy
    stop_hogs
    HOGS=$idle_hogs
}

# First with this load's watchdog (idle tasks overdue after a quarter of it) ...
echo 1 >$CG/idle/cpu.idle
idle_next_to_busy idle_contended 4
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
