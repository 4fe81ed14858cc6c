# tests/test_monitor.py: --monitor with no instance, during a stress-ng load, and after the
# instance left.
. /mosaic/guest/lib.sh
scx_mosaic --monitor 1 >/tmp/none 2>&1; report none_rc $?
report none_lines "$(wc -l </tmp/none)"
report none_msg "$(cat /tmp/none)"
report state_after_none "$(cat $SCX/state)"
start_mosaic --stats 0 --stats-file /tmp/s.json || exit 1
stress-ng --switch 2 --cpu 2 --timeout 20s >/tmp/stress.out 2>&1 &
LOAD=$!
sleep 1
# under TCG with every vCPU busy an interval takes up to 3 s of wall time
timeout 10 scx_mosaic --monitor 1 >/tmp/mon 2>&1
report monitor_rc $?
sed 's/^/MON /' /tmp/mon
report ops_during "$(cat $SCX/root/ops)"
wait $LOAD
stop_mosaic
report_json stats /tmp/s.json
scx_mosaic --monitor 1 >/tmp/after 2>&1; report after_rc $?
report after_lines "$(wc -l </tmp/after)"
report socket_left "$(ls /var/run/scx/root/ 2>/dev/null)"
