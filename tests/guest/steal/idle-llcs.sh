# tests/test_steal.py: 8 busy loops woken in LLC 0 (CPUs 0-1), then allowed on all 8 CPUs;
# the other LLCs must take them: under the default (per-CPU queues on 8 CPUs: the newidle
# balance) and under the shard design (the cross-LLC steal). Runs 3 s after the widening.
. /mosaic/guest/lib.sh
for design in auto shard; do
    start_mosaic --shared-runq=$design --stats 0 --stats-file /tmp/$design.json || exit 1
    BUSY_PIDS=""
    busy_loops 0-1 8
    sleep 0.5
    for p in $BUSY_PIDS; do taskset -p -c 0-7 $p >/dev/null; done
    report cpus_$design "$(cpu_samples 3 1 $BUSY_PIDS)"
    kill $BUSY_PIDS
    stop_mosaic
    report_json $design /tmp/$design.json
done
