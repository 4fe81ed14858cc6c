#!/bin/sh
# tests/guest/demo.sh - what `make run` shows, run inside the VM: hackbench under the
# kernel's default scheduler and under scx_mosaic, interleaved in one boot, with
# scx_mosaic's live stats, then a table of medians.
#
# Usage: demo.sh [ROUNDS] [HACKBENCH ARGS...]
. "$(dirname "$0")/lib.sh"

rounds=${1:-5}
[ $# -gt 0 ] && shift
args=${*:-"-g 4 -l 200"}
: >/tmp/eevdf.times
: >/tmp/mosaic.times

# Print median, min and max of the numbers in file $1.
summary() { sort -n "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%8.3f %8.3f %8.3f %5d", m, v[1], v[NR], NR }'; }

echo "== hackbench $args: kernel default vs scx_mosaic, $rounds interleaved rounds =="
i=1
while [ $i -le "$rounds" ]; do
    hackbench $args >/tmp/hb.out 2>&1 || { cat /tmp/hb.out; exit 1; }
    t=$(sed -n 's/^Time: *//p' /tmp/hb.out)
    echo "$t" >>/tmp/eevdf.times
    echo "round $i: kernel default: $t s"

    scx_mosaic --stats 1 --stats-file /tmp/mosaic.json &
    pid=$!
    wait_state enabled 60 || { echo "scx_mosaic did not start"; exit 1; }
    hackbench $args >/tmp/hb.out 2>&1 || { cat /tmp/hb.out; exit 1; }
    t=$(sed -n 's/^Time: *//p' /tmp/hb.out)
    kill -INT $pid
    wait $pid || { echo "scx_mosaic exited with an error"; exit 1; }
    echo "$t" >>/tmp/mosaic.times
    echo "round $i: scx_mosaic:     $t s"
    i=$((i + 1))
done

ee=$(summary /tmp/eevdf.times)
mo=$(summary /tmp/mosaic.times)
echo
echo "hackbench $args on $(nproc) vCPUs (QEMU TCG: no caches modelled, run-to-run noise"
echo "of several %; compare ratios within this boot, not absolute times across boots)"
echo "scheduler         median      min      max  runs   (seconds, lower is better)"
echo "kernel default  $ee"
echo "scx_mosaic      $mo"
echo "$ee $mo" | awk '{ printf "scx_mosaic / default (medians): %.2f\n", $5 / $1 }'
