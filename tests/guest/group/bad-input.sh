# tests/test_group.py: bad group balancer flags, one scx_mosaic run each (rc_N, lines_N, msg_N).
. /mosaic/guest/lib.sh
mkdir -p /sys/fs/cgroup/gb
n=0
for args in "--gb-parent /nonexistent" "--gb-parent /tmp" "--gb-parent gb --gb-partitions 0-3;3-7" \
            "--gb-parent gb --gb-partitions 0-3;4-9" "--gb-parent gb --gb-partitions 0-3;;4-7" \
            "--gb-partitions llc" "--gb-parent gb --gb-period-ms 0"; do
    n=$((n + 1))
    scx_mosaic $args >/tmp/out 2>&1; report rc_$n $?
    report lines_$n "$(wc -l </tmp/out)"
    report msg_$n "$(cat /tmp/out)"
done
report state "$(cat $SCX/state)"
