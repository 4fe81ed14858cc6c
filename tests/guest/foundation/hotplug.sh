# tests/test_foundation.py: CPU 7 goes offline and online again while 8 CPU-bound threads in
# two balanced cgroups run; the scheduler restarts at each change.
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
mkdir -p $CG/gb/a $CG/gb/b
# Wait up to 60 s until the scheduler has attached $1 times.
attached() {
    n=0
    while [ "$(grep -c 'attached' $MOSAIC_LOG)" -lt "$1" ]; do
        n=$((n + 1)); [ $n -gt 600 ] && return 1; sleep 0.1
    done
    wait_state enabled 60
}
start_mosaic --shared-runq=shard --gb-parent gb --stats 0 --stats-file /tmp/s.json || exit 1
sysbench_in_cgroup gb/a 4 24
sysbench_in_cgroup gb/b 4 24
sleep 4
echo 0 >/sys/devices/system/cpu/cpu7/online
attached 2 || { echo "no restart after offline"; cat $MOSAIC_LOG; exit 1; }
report online_after_offline "$(cat /sys/devices/system/cpu/online)"
sleep 6
echo 1 >/sys/devices/system/cpu/cpu7/online
attached 3 || { echo "no restart after online"; cat $MOSAIC_LOG; exit 1; }
wait $SB_PIDS
for grp in a b; do report events_$grp "$(sed -n 's/.*total number of events: *//p' /tmp/sb.$grp)"; done
report banners "$(grep -c '^scx_mosaic 0' $MOSAIC_LOG)"
grep '^scx_mosaic 0' $MOSAIC_LOG | sed -n 2p | sed 's/^/@@banner_offline@@ /'
grep '^scx_mosaic 0' $MOSAIC_LOG | sed -n 3p | sed 's/^/@@banner_online@@ /'
stop_mosaic
report_json stats /tmp/s.json
