# Cell "manylimits": cpu.max at a container host's scale. $GAUNTLET_MANYLIMITS cgroups (1,000
# unless set: tests/gauntlet/run.py --manylimits N) below one parent, each with one CPU hog and a limit of
# 1 ms per period, the period sized so that all limits together come to 60 % of the CPUs
# (never oversubscribed: each cgroup's quota is what it should get). A root-cgroup probe
# wakes every 10 ms throughout. Windows of the cell's length (at least 60 periods), in this order in one boot (the kernel's scheduler
# before and after scx_mosaic, so that a drift of the boot weighs on both alike):
#   eevdf        the kernel's own scheduler
#   mosaic       scx_mosaic loaded, the same hogs and limits
#   churn        under scx_mosaic: a quarter of the limits doubled, a tenth lifted, a tenth
#                of the cgroups removed and as many new ones made; then every limit set back
#                to its quota, and a window
#   eevdf_after  scx_mosaic unloaded (every cgroup and hog removed under it first), the
#                cgroups and hogs made again, the kernel's scheduler
# For each window: each cgroup's CPU time (cpu.stat usage_usec) over its quota, reported as
# the number outside +-25 % and the lowest, median and highest ratio; the probe's mean wait
# per run (schedstat run_delay over runs), and the time one read of every cpu.stat takes
# (by the cell's shell, at nice -20). The runnable-count sampler (lib.sh), which runs while
# scx_mosaic is loaded, runs in the kernel's windows too: every window has the same load.
# The host (tests/gauntlet/run.py) judges them. Sourced by run.sh.
N=${GAUNTLET_MANYLIMITS:-1000}
CG=/sys/fs/cgroup/gauntlet-ml
QUOTA=1000
# N x QUOTA / PERIOD = 0.6 x NCPU
PERIOD=$((N * QUOTA * 10 / (6 * NCPU)))
# the kernel's longest period is 1 s
[ $PERIOD -gt 1000000 ] && { r skip "$N limits of 1 ms exceed 60 % of $NCPU CPUs"; return 0; }
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p $CG && echo +cpu >$CG/cgroup.subtree_control || { r error "no cpu controller"; return 1; }
r cgroups $N
r quota "$QUOTA $PERIOD"
# A window holds at least 60 periods: a run is charged at a tick (4 ms, several quotas of
# 1 ms), so over fewer periods a cgroup's usage reads far off its quota under either
# scheduler (1,000 cgroups, 24 periods of 417 ms: 96 of them outside +-25 % under the kernel's).
WINDOW_S=$(((60 * PERIOD + 999999) / 1000000))
[ $WINDOW_S -lt "$SECS" ] && WINDOW_S=$SECS
r window_s $WINDOW_S

# Make cgroup c$1 with the limit and a hog in it (spin, one thread, until killed).
ml_cgroup() {
    mkdir $CG/c$1 && echo "$QUOTA $PERIOD" >$CG/c$1/cpu.max || return 1
    sh -c "echo \$\$ >$CG/c$1/cgroup.procs; exec spin -t 1 -s 100000" >/dev/null 2>&1 &
    echo $! >/tmp/g.ml.$1
}

# Remove cgroup c$1 and its hog.
ml_drop() {
    kill "$(cat /tmp/g.ml.$1)" 2>/dev/null
    wait "$(cat /tmp/g.ml.$1)" 2>/dev/null
    rmdir $CG/c$1 2>/dev/null || { sleep 0.2; rmdir $CG/c$1; }
}

# usage_usec of every cgroup below the parent, one "path usec" line each, into file $1.
ml_usage() { awk '/^usage_usec/ { print FILENAME, $2 }' $CG/c[0-9]*/cpu.stat >"$1"; }

# The probe's "run_delay_ns runs" from its threads' schedstat.
ml_probe() { cat /proc/$PROBE/task/*/schedstat | awk '{ d += $2; n += $3 } END { print d, n }'; }

# One window named $1: CPU time of each cgroup against its quota, the probe's waits.
ml_window() {
    local t0 t1 p0 p1 r0 runs
    p0=$(ml_probe)
    t0=$(ms)
    ml_usage /tmp/g.ml.u0
    sleep "$WINDOW_S"
    r0=$(ms)
    ml_usage /tmp/g.ml.u1
    t1=$(ms)
    p1=$(ml_probe)
    r ${1}_read_ms $((t1 - r0))
    # usage over the window (from the midpoints of the two reads) / quota over it
    awk -v q=$QUOTA -v p=$PERIOD -v w=$(((t1 + r0) / 2 - t0)) '
        NR == FNR { u0[$1] = $2; next }
        ($1 in u0) { print ($2 - u0[$1]) / (w * 1000 * q / p) }' /tmp/g.ml.u0 /tmp/g.ml.u1 |
        sort -n | awk '{ ratio[NR] = $1; if ($1 < 0.75 || $1 > 1.25) out++ }
            END { printf "n=%d outside=%d min=%.3f median=%.3f max=%.3f\n", NR, out,
                ratio[1], ratio[int((NR + 1) / 2)], ratio[NR] }' >/tmp/g.ml.ratio
    r ${1}_usage "$(cat /tmp/g.ml.ratio)"
    set -- $1 $p0 $p1
    runs=$(($5 - $3))
    [ $runs -gt 0 ] || runs=1
    r ${1}_probe_wait_us $((($4 - $2) / runs / 1000))
    r ${1}_probe_runs $(($5 - $3))
}

# the probe: a root-cgroup thread that wakes every 10 ms (spin: no forks, one task to follow)
spin -t 1 -z 10000 -s 100000 >/dev/null 2>&1 &
PROBE=$!
# the cell's own shell (setup, churn, the cpu.stat reads) at nice -20: its reads time the
# windows, and must not wait behind the hogs as the probe may
boost

# Make the N cgroups and their hogs.
ml_setup() {
    local i=1 t0
    t0=$(ms)
    while [ $i -le $N ]; do
        ml_cgroup $i || { r error "cannot make cgroup $i"; return 1; }
        i=$((i + 1))
    done
    r ${1}_setup_ms $(($(ms) - t0))
}

# Remove every cgroup below the parent, and its hog: every hog killed first, then each waited
# for and its cgroup removed; the time it took as ${1}_teardown_ms.
ml_teardown() {
    local d t0
    t0=$(ms)
    for d in $CG/c[0-9]*; do kill "$(cat /tmp/g.ml.${d##*/c})" 2>/dev/null; done
    for d in $CG/c[0-9]*; do
        wait "$(cat /tmp/g.ml.${d##*/c})" 2>/dev/null
        rmdir $d 2>/dev/null || { sleep 0.2; rmdir $d; }
    done
    r ${1}_teardown_ms $(($(ms) - t0))
}

# A window $1 under the kernel's scheduler, with the sampler running as under scx_mosaic.
ml_eevdf_window() {
    runnable_start
    ml_window $1
    kill "$RUNNABLE_PID" 2>/dev/null
    wait "$RUNNABLE_PID" 2>/dev/null
}

ml_setup eevdf || { ml_teardown error; return 1; }
sleep 2
ml_eevdf_window eevdf
g_start || { kill $PROBE; ml_teardown error; rmdir $CG; return 1; }
sleep 2
ml_window mosaic
# churn, under load
t0=$(ms)
i=1
while [ $i -le $N ]; do
    case $((i % 20)) in
        0 | 5 | 10 | 15 | 3) echo "$((2 * QUOTA)) $PERIOD" >$CG/c$i/cpu.max ;;
        7 | 17) echo max >$CG/c$i/cpu.max ;;
        9 | 19) ml_drop $i && ml_cgroup $((N + i)) ;;
    esac
    i=$((i + 1))
done
sleep 1
# the lifted ones get their limit back; the doubled ones theirs
i=1
while [ $i -le $N ]; do
    case $((i % 20)) in
        0 | 5 | 10 | 15 | 3 | 7 | 17) echo "$QUOTA $PERIOD" >$CG/c$i/cpu.max ;;
    esac
    i=$((i + 1))
done
r churn_ms $(($(ms) - t0))
sleep 2
ml_window churn
ml_teardown mosaic
r cgroups_left "$(ls -d $CG/c[0-9]* 2>/dev/null | wc -l)"
g_stop
ml_setup eevdf_after || { kill $PROBE; ml_teardown error; rmdir $CG; return 1; }
sleep 2
ml_eevdf_window eevdf_after
kill $PROBE
ml_teardown eevdf_after
rmdir $CG
