# Cell "cpumax": cgroup cpu.max churn under load (bandwidth.bpf.c). A parent cgroup whose own
# limit toggles between "max" and a little over half the machine holds short-lived children;
# every 0.3 s one child is made with a random limit (5-30 ms per 50-100 ms) and a worker moved
# in, a short task started in it (it exits there, often throttled), another child's limit is
# changed (or lifted), and the child made three rounds earlier is emptied and removed - most
# often while throttled, its tasks parked. At the end every limit is lifted, so every parked
# task must have come back: moved back at a refill (bw_unparked) or taken off its park queue
# by the kernel when moved out (bw_park_left).
# The canaries run unlimited beside them. Sourced by run.sh.
CG=/sys/fs/cgroup/gauntlet-bw
mkdir -p $CG/base
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
echo +cpu >$CG/cgroup.subtree_control || { r error "no cpu controller below $CG"; return 1; }
g_start || { rmdir $CG/base $CG; return 1; }
if grep -q 'ignored:.*cpu.max' $MOSAIC_LOG; then
    r skip "$(grep -o 'cpu.max ([^)]*)' $MOSAIC_LOG)"
    g_stop
    rmdir $CG/base $CG
    return 0
fi
canaries
start_workers $CG
w=$WORKERS
# A random cpu.max limit: 5-30 ms per 50-100 ms.
random_limit() { echo "$((5000 + RANDOM % 25000)) $((50000 + RANDOM % 50000))"; }
# A random cpu.max value: a random limit, or (one time in four) "max".
limit() {
    [ $((RANDOM % 4)) -eq 0 ] && { echo max; return; }
    random_limit
}
boost
end=$(($(now) + SECS - 1)) k=0 made=0 removed=0 changes=0
while [ "$(now)" -lt $end ]; do
    k=$((k + 1))
    mkdir $CG/c$k && made=$((made + 1))
    random_limit >$CG/c$k/cpu.max
    set -- $w
    eval v=\${$((RANDOM % $# + 1))}
    echo "$(cat /tmp/g.pid.$v)" >$CG/c$k/cgroup.procs
    # a short task that exits inside the limited cgroup, most often while it is throttled
    sh -c "echo \$\$ >$CG/c$k/cgroup.procs; exec spin -t 2 -s 1" >/tmp/g.bwshort.$k 2>&1 &
    # change a younger child's limit, and now and then the parent's
    [ $k -gt 1 ] && limit >$CG/c$((k - 1))/cpu.max && changes=$((changes + 1))
    if [ $((k % 5)) -eq 0 ]; then
        if [ "$(cut -d' ' -f1 $CG/cpu.max)" = max ]; then
            echo "$((NCPU * 60000)) 100000" >$CG/cpu.max
        else
            echo max >$CG/cpu.max
        fi
        changes=$((changes + 1))
    fi
    sleep 0.3
    if [ $k -gt 3 ]; then
        drop_cgroup $CG $CG/c$((k - 3)) && removed=$((removed + 1))
    fi
done
# lift every limit: parked tasks must all come back before the scheduler stops
for d in $CG $CG/c*; do [ -f "$d/cpu.max" ] && echo max >"$d/cpu.max"; done
sleep 0.5
for d in $CG/c*; do [ -d "$d" ] && drop_cgroup $CG "$d" && removed=$((removed + 1)); done
r cgroups_made $made
r cgroups_removed $removed
r limit_changes $changes
sleep 1
r short_runs "$(cat /tmp/g.bwshort.* | grep -c '^spin ')"
r short_starved "$(cat /tmp/g.bwshort.* | grep '^spin ' | grep -vc ' zero=0 ')"
for v in $w; do spin_wait $v; done
spin_wait canary
g_stop
rmdir $CG/base $CG 2>/dev/null
