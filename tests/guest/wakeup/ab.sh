# tests/test_wakeup.py: workload $4 under scx_mosaic with flags $1 (counters as JSON block
# "default") and with flags $1 $3 (block $2).
. /mosaic/guest/lib.sh
stats_under default "$1" "$4" || exit 1
stats_under $2 "$1 $3" "$4" || exit 1
