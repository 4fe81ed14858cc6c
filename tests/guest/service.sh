# tests/test_service.py: scx_mosaic started the way scx's own scx.service starts a scheduler
# ($SCX_SCHEDULER $SCX_FLAGS from /etc/default/scx), with the group balancer, under the
# hardening scx_loader applies: the cgroup filesystem read-only and only AF_UNIX sockets
# (RestrictAddressFamilies=AF_UNIX, applied by restrict-af.c's seccomp filter). Two cgroups of
# 4 sysbench
# threads each, running before the scheduler loads (as on a host that switches to it); no live
# stats asked for, so none may be printed; the stats socket (AF_UNIX) still answers --monitor.
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
mkdir -p $CG/gb/a $CG/gb/b
sysbench_in_cgroup gb/a 4 300
sysbench_in_cgroup gb/b 4 300
sleep 0.5
mount -o remount,ro $CG || exit 1
mkdir $CG/gb/probe 2>/dev/null; report cgroupfs_mkdir_rc $?
mkdir -p /etc/default
printf 'SCX_SCHEDULER=scx_mosaic\nSCX_FLAGS="--gb-parent gb --stats-file /tmp/s.json"\n' \
    >/etc/default/scx
. /etc/default/scx
report restricted_sockets "$(restrict-af --check)"
restrict-af $SCX_SCHEDULER $SCX_FLAGS >$MOSAIC_LOG 2>&1 &
MOSAIC_PID=$!
# loading takes several seconds under TCG with every vCPU busy; then wait (up to 20 polls of
# the monitor, ~3 min under TCG) until both groups settled
wait_state enabled 120 || { cat $MOSAIC_LOG; exit 1; }
n=0
while [ $n -lt 20 ]; do
    n=$((n + 1))
    timeout 5 scx_mosaic --monitor 1 >/tmp/mon 2>&1
    [ "$(grep -oE '\| (a|b) -> p' /tmp/mon | sort -u | wc -l)" = 2 ] && break
done
report settle_polls $n
kill $SB_PIDS; wait $SB_PIDS
report log_lines "$(wc -l <$MOSAIC_LOG)"
stop_mosaic
mount -o remount,rw $CG
report_json s /tmp/s.json
