# tests/test_llc_balance.py: two cgroups of 8 busy loops each, cpu.weight 100 and 300, on
# a 2-LLC guest. The first spreads over every CPU; the second starts on CPU 0 while every
# CPU is busy (as a shell forks it) and is then allowed everywhere. CPU time per cgroup
# over 16 s, under scx_mosaic (three runs: one run's split varies by about +-0.2 with the
# guest's own noise under TCG), with --no-llc-balance, and under EEVDF.
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
ALL=0-$(($(nproc) - 1))
echo +cpu >$CG/cgroup.subtree_control || exit 1
mkdir -p $CG/la $CG/lb
echo 300 >$CG/lb/cpu.weight

# Start $2 loops in cgroup $1 on CPU 0, then allow them every CPU: they stay in CPU 0's
# LLC until something moves them. Pids are appended to $HOGS.
late_hogs() {
    local i=0 late=""
    while [ $i -lt $2 ]; do
        taskset -c 0 sh -c "echo \$\$ >$CG/$1/cgroup.procs; while :; do :; done" &
        late="$late $!"
        i=$((i + 1))
    done
    sleep 0.5
    for p in $late; do taskset -pc $ALL $p >/dev/null || return 1; done
    HOGS="$HOGS $late"
}

for sched in mosaic mosaic2 mosaic3 nobalance eevdf; do
    case $sched in
    mosaic*) start_mosaic --stats 0 --stats-file /tmp/s.json || exit 1 ;;
    nobalance) start_mosaic --no-llc-balance --stats 0 --stats-file /tmp/n.json || exit 1 ;;
    esac
    cg_hogs la 8
    sleep 1
    late_hogs lb 8 || exit 1
    sleep 3
    a0=$(cg_usage la); b0=$(cg_usage lb)
    sleep 16
    report ${sched}_la $(($(cg_usage la) - a0))
    report ${sched}_lb $(($(cg_usage lb) - b0))
    kill $HOGS; HOGS=""
    sleep 1
    case $sched in
    mosaic) stop_mosaic; report_json stats /tmp/s.json ;;
    mosaic?) stop_mosaic; report_json $sched /tmp/s.json ;;
    nobalance) stop_mosaic; report_json nobalance /tmp/n.json ;;
    esac
done
