# tests/test_wakeup.py: a busy loop started on little CPU 2, then allowed everywhere;
# where it ran every 0.3 s from 1.5 s on. $1: scx_mosaic's capacity flags.
. /mosaic/guest/lib.sh
start_mosaic $1 --stats 0 --stats-file /tmp/s.json || exit 1
busy_loops 2 1
sleep 0.3
taskset -p -c 0-3 $BUSY_PIDS >/dev/null
sleep 1.2
report cpus "$(cpu_samples 10 0.3 $BUSY_PIDS)"
kill $BUSY_PIDS
stop_mosaic
report_json stats /tmp/s.json
