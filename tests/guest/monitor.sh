# tests/test_monitor.py: --monitor with no instance, during a stress-ng load, and after the
# instance left.
. /mosaic/guest/lib.sh
scx_mosaic --monitor 1 >/tmp/none 2>&1; report none_rc $?
report none_lines "$(wc -l </tmp/none)"
report none_msg "$(cat /tmp/none)"
report state_after_none "$(cat $SCX/state)"
scx_mosaic --stats-json >/tmp/none-json 2>&1; report json_none_rc $?
report json_none_lines "$(wc -l </tmp/none-json)"
start_mosaic --stats 0 --stats-file /tmp/s.json || exit 1
stress-ng --switch 2 --cpu 2 --timeout 20s >/tmp/stress.out 2>&1 &
LOAD=$!
sleep 1
# under TCG with every vCPU busy an interval takes up to 3 s of wall time
timeout 10 scx_mosaic --monitor 1 >/tmp/mon 2>&1
report monitor_rc $?
sed 's/^/MON /' /tmp/mon
# --stats-json: one snapshot of the running instance, for scripts
scx_mosaic --stats-json >/tmp/now.json 2>/tmp/now.err
report json_rc $?
report json_lines "$(wc -l </tmp/now.json)"
report_json now /tmp/now.json
report ops_during "$(cat $SCX/root/ops)"
wait $LOAD
stop_mosaic
report_json stats /tmp/s.json
scx_mosaic --monitor 1 >/tmp/after 2>&1; report after_rc $?
report after_lines "$(wc -l </tmp/after)"
report socket_left "$(ls /var/run/scx/root/ 2>/dev/null)"
# --bpf-stats: the kernel times BPF programs while it runs, without the sysctl being
# written, and stops when the process dies, even by SIGKILL (the BPF_ENABLE_STATS fd goes
# with it): a load after that counts no BPF run time
report bpf_stats_before "$(cat /proc/sys/kernel/bpf_stats_enabled)"
start_mosaic --bpf-stats || exit 1
report bpf_stats_during "$(cat /proc/sys/kernel/bpf_stats_enabled)"
kill -KILL $MOSAIC_PID
wait $MOSAIC_PID 2>/dev/null
wait_state disabled 30
report state_after_kill "$(cat $SCX/state)"
report bpf_stats_after_kill "$(cat /proc/sys/kernel/bpf_stats_enabled)"
start_mosaic --stats-file /tmp/after-kill.json || exit 1
sleep 1
stop_mosaic
report_json after_kill /tmp/after-kill.json
# The capabilities scx_mosaic.service keeps ($1, comma-separated): it loads with them,
# under no_new_privs and MemoryDenyWriteExecute (harden-exec); then without each in turn.
CAPS=$1
report harden_check "$(harden-exec --keep=$CAPS --check)"
probe_caps() {
    local pid n=0 keep=$1
    shift
    harden-exec --keep=$keep scx_mosaic "$@" >/tmp/probe.log 2>&1 &
    pid=$!
    while [ "$(cat $SCX/state)" != enabled ] && kill -0 $pid 2>/dev/null && [ $n -lt 600 ]; do
        n=$((n + 1))
        sleep 0.1
    done
    if [ "$(cat $SCX/state)" = enabled ]; then
        echo loaded
    else
        echo "failed: $(grep -v '^libbpf' /tmp/probe.log | tail -n 1)"
    fi
    kill -INT $pid 2>/dev/null
    wait $pid
    wait_state disabled 30
}
# every feature under those restrictions and RestrictAddressFamilies=AF_UNIX (restrict-af):
# load, --bpf-stats, the stats socket (--monitor), --stats-file under /run/scx_mosaic
harden-exec --keep=$CAPS restrict-af scx_mosaic --bpf-stats \
    --stats-file /run/scx_mosaic/h.json >/tmp/hardened.log 2>&1 &
MOSAIC_PID=$!
wait_state enabled 60 || { cat /tmp/hardened.log; exit 1; }
timeout 5 scx_mosaic --monitor 1 >/tmp/hmon 2>&1
report hardened_monitor_lines "$(grep -c '^mosaic ' /tmp/hmon)"
kill -INT $MOSAIC_PID
wait $MOSAIC_PID
report hardened_rc $?
sed 's/^/HARDENED /' /tmp/hardened.log
report_json hardened /run/scx_mosaic/h.json
for cap in $(echo $CAPS | tr , ' '); do
    report "caps_without_$cap" "$(probe_caps $(echo $CAPS | tr , '\n' | grep -vx $cap | paste -sd,))"
done
report caps_sys_admin_alone "$(probe_caps sys_admin --bpf-stats)"
report caps_bpf_stats_without_sys_admin "$(probe_caps bpf,perfmon,sys_resource --bpf-stats)"
