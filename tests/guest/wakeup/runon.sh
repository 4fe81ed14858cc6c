# tests/test_wakeup.py: runon-pair with args $1 under scx_mosaic's defaults and with
# --no-wake-pair. Per arm: the scheduler's counters (JSON block "default" or "nowakepair")
# and the pair's own migrations ("default_pair", "nowakepair_pair"), counted by the rusage
# helper (tests/guest/bench/rusage.c) for the pair's two threads (and the helper itself,
# which moves at most at its start), not for the rest of the guest.
. /mosaic/guest/lib.sh

# Run arm $1 (scheduler flags $2) and report the pair's migrations as block "$1_pair".
pair_arm() {
    local vol invol migr
    stats_under $1 "$2" "rusage /tmp/$1.rusage runon-pair $ARGS" || exit 1
    read -r vol invol migr </tmp/$1.rusage || exit 1
    echo "{\"migrations\": $migr}" >/tmp/$1_pair.json
    report_json $1_pair /tmp/$1_pair.json
}
ARGS=$1
pair_arm default ""
pair_arm nowakepair --no-wake-pair
