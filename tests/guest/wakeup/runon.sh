# tests/test_wakeup.py: runon-pair with args $1 under scx_mosaic's defaults and with
# --no-wake-pair. Per arm: the scheduler's counters (JSON block "default" or "nowakepair")
# and the pair's own migrations as runon-pair counts them ("default_pair", "nowakepair_pair").
. /mosaic/guest/lib.sh
stats_under default "" "runon-pair $1" || exit 1
report_json default_pair /tmp/default.out
stats_under nowakepair "--no-wake-pair" "runon-pair $1" || exit 1
report_json nowakepair_pair /tmp/nowakepair.out
