# tests/test_group.py: six busy loops allowed on CPUs 4-5 only, under the group balancer,
# while CPUs 0-3 idle and steal; where they ran every 0.5 s for 4 s.
. /mosaic/guest/lib.sh
mkdir -p /sys/fs/cgroup/gb
start_mosaic --gb-parent gb --stats 0 --stats-file /tmp/s.json || exit 1
busy_loops 4-5 6
report cpus "$(cpu_samples 8 0.5 $BUSY_PIDS)"
kill $BUSY_PIDS
stop_mosaic
report_json s /tmp/s.json
