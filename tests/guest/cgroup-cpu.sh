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

usage() { sed -n 's/^usage_usec //p' $CG/$1/cpu.stat; }

# Time since boot in microseconds (10 ms resolution).
now_us() { awk '{ printf "%d\n", $1 * 1000000 }' /proc/uptime; }

# Start $2 CPU-bound shell loops in cgroup $1 (pids added to HOGS).
hogs() {
    i=0
    while [ $i -lt $2 ]; do
        sh -c "echo \$\$ >$CG/$1/cgroup.procs; while :; do :; done" &
        HOGS="$HOGS $!"; i=$((i + 1))
    done
}

stop_hogs() { kill $HOGS 2>/dev/null; wait $HOGS 2>/dev/null; HOGS=""; }

# Report, as $1_<cgroup>, each cgroup's CPU time in us over a window of $2 seconds
# (after 1 s to settle), and the window's length in us as $1_window_us.
window() {
    name=$1; secs=$2; shift 2
    sleep 1
    for g in "$@"; do eval "u0_$(echo $g | tr / _)=$(usage $g)"; done
    t0=$(now_us)
    sleep $secs
    t1=$(now_us)
    for g in "$@"; do
        v=$(echo $g | tr / _)
        eval "u0=\$u0_$v"
        report ${name}_$v $(( $(usage $g) - u0 ))
    done
    report ${name}_window_us $((t1 - t0))
}

start_mosaic --stats-file /tmp/s.json "$@" || exit 1

# cpu.max 20 ms per 100 ms, set while loaded (ops.cgroup_set_bandwidth), 4 busy loops
echo "20000 100000" >$CG/lim/cpu.max
hogs lim 4
window limited 5 lim
# "max" lifts the limit at run time: the same loops now take what they can
echo max >$CG/lim/cpu.max
window lifted 3 lim
stop_hogs

# the limit set before the load
hogs pre 4
window preset 4 pre
stop_hogs

# nested: the parent allows 40 ms, the child 10 ms per 100 ms: the tighter one holds
echo "40000 100000" >$CG/nest/cpu.max
echo "10000 100000" >$CG/nest/inner/cpu.max
hogs nest/inner 4
window nested 4 nest/inner
# and the other way round: the parent's 15 ms holds over the child's 50 ms
echo "50000 100000" >$CG/nest/inner/cpu.max
echo "15000 100000" >$CG/nest/cpu.max
window nested_parent 4 nest/inner
stop_hogs

# burst: unused quota banks up to cpu.max.burst. Two cgroups get 100 ms per 1 s, one with a
# 100 ms burst; both idle through two refills, then run 4 loops each for 0.5 s within the
# third period: the banked one can spend 200 ms, the other 100 ms.
echo "100000 1000000" >$CG/burst/cpu.max
echo 100000 >$CG/burst/cpu.max.burst
mkdir -p $CG/noburst
echo "100000 1000000" >$CG/noburst/cpu.max
sleep 2.2
b0=$(usage burst); n0=$(usage noburst)
hogs burst 4; hogs noburst 4
sleep 0.5
stop_hogs
report burst_used_us $(( $(usage burst) - b0 ))
report noburst_used_us $(( $(usage noburst) - n0 ))

# cpu.idle: an idle cgroup next to a busy one gets (almost) nothing while the busy one has
# work for every CPU, and every CPU when it has none (a loop per CPU in each)
echo 1 >$CG/idle/cpu.idle
hogs idle $(nproc)
HOGS_IDLE=$HOGS; HOGS=""
hogs busy $(nproc)
window idle_contended 4 idle busy
stop_hogs
HOGS=$HOGS_IDLE
window idle_alone 3 idle
stop_hogs

stop_mosaic
grep -q "ejected" $MOSAIC_LOG && { grep -A60 "DEBUG DUMP" $MOSAIC_LOG | head -90; dmesg | tail -40; }
report_json stats /tmp/s.json
