# tests/test_group.py: cgroup a, confined by its cpuset to LLC 1's CPUs (4-7), runs 4 sysbench
# threads alone under the balancer; then its cpuset moves to LLC 0's CPUs (0-3). Reports the
# partition the monitor shows for it after each phase (polling until it settles, or gives up).
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
echo +cpuset >$CG/cgroup.subtree_control || exit 1
mkdir -p $CG/gb/a
echo +cpuset >$CG/gb/cgroup.subtree_control || exit 1
echo 4-7 >$CG/gb/a/cpuset.cpus || exit 1
start_mosaic --gb-parent gb --stats 0 --stats-file /tmp/s.json || exit 1
sysbench_in_cgroup gb/a 4 120
# Poll the monitor (up to 10 times) until a's line names partition $2; report it as $1.
settled_in() {
    local n=0
    while [ $n -lt 10 ]; do
        n=$((n + 1))
        timeout 5 scx_mosaic --monitor 1 >/tmp/mon 2>&1
        grep -q "| a -> p$2 " /tmp/mon && break
    done
    report $1 "$(grep -oE '\| a -> (p[0-9]+|-)' /tmp/mon | tail -n 1 | cut -d' ' -f4)"
}
settled_in part_llc1 1
echo 0-3 >$CG/gb/a/cpuset.cpus
settled_in part_llc0 0
kill $SB_PIDS; wait $SB_PIDS
stop_mosaic
report_json s /tmp/s.json
