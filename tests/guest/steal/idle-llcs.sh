# tests/test_steal.py: 8 busy loops woken in LLC 0 (CPUs 0-1), then allowed on all 8 CPUs;
# the other LLCs must steal them. Runs 3 s after the widening.
. /mosaic/guest/lib.sh
start_mosaic --stats 0 --stats-file /tmp/s.json || exit 1
busy_loops 0-1 8
sleep 0.5
for p in $BUSY_PIDS; do taskset -p -c 0-7 $p >/dev/null; done
report cpus "$(cpu_samples 3 1 $BUSY_PIDS)"
kill $BUSY_PIDS
stop_mosaic
report_json stats /tmp/s.json
