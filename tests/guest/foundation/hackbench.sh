# tests/test_foundation.py: hackbench -g 4 -l $2 under scx_mosaic with flags $1; the final
# counters as JSON block "stats".
. /mosaic/guest/lib.sh
start_mosaic $1 --stats 0 --stats-file /tmp/s.json || exit 1
timed_hackbench hackbench_s -g 4 -l $2 || exit 1
stop_mosaic
report_json stats /tmp/s.json
