# tests/test_foundation.py: bad flags, then a load under hackbench and 30 s of stress-ng churn
# (affinity, switch, fork, yield) with --bpf-stats, and the unload.
. /mosaic/guest/lib.sh
scx_mosaic --shard-size x >/tmp/e1 2>&1; report badflag_rc $?
report badflag_lines "$(wc -l </tmp/e1)"
report badflag_msg "$(cat /tmp/e1)"
scx_mosaic --no-such-flag >/dev/null 2>&1; report unknown_rc $?
report state_after_bad "$(cat $SCX/state)"
start_mosaic --stats 5 --bpf-stats --stats-file /tmp/s.json || exit 1
timed_hackbench hackbench_s -g 4 -l 100 || exit 1
stress-ng --affinity 2 --affinity-rand --cpu 2 --switch 2 --fork 1 --yield 1 \
    --aggressive --timeout 30s >/tmp/stress.out 2>&1
report stress_rc $?
tail -n 3 /tmp/stress.out
report state_after_stress "$(cat $SCX/state)"
stop_mosaic
report bpf_stats_after "$(cat /proc/sys/kernel/bpf_stats_enabled)"
report_json stats /tmp/s.json
