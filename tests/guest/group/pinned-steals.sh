# tests/test_group.py: six busy loops allowed on CPUs 4-5 only, under the group balancer,
# while CPUs 0-3 idle and steal (shard design) or balance (the default's per-CPU queues);
# where they ran every 0.5 s for 4 s.
. /mosaic/guest/lib.sh
mkdir -p /sys/fs/cgroup/gb
for design in shard auto; do
    start_mosaic --shared-runq=$design --gb-parent gb --stats 0 --stats-file /tmp/$design.json || exit 1
    BUSY_PIDS=""
    busy_loops 4-5 6
    report cpus_$design "$(cpu_samples 8 0.5 $BUSY_PIDS)"
    kill $BUSY_PIDS
    stop_mosaic
    report_json $design /tmp/$design.json
done
