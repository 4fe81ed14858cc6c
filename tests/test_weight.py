"""VM test of cgroup cpu.weight (weight.bpf.c) on `1llc` (4 CPUs, one LLC): busy cgroups
get CPU time in proportion to their cpu.weight, whatever the number of tasks in each, and
through the hierarchy. CPU time is the kernel's own per-cgroup account (cpu.stat
usage_usec) over an 8 s window after a 3 s warm-up."""

from vmtest import assert_counters_consistent, assert_not_ejected, boot

SCRIPT = r"""
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
echo +cpu >$CG/cgroup.subtree_control || exit 1
mkdir -p $CG/wa $CG/wb $CG/wn/x $CG/wn/y $CG/wm
echo +cpu >$CG/wn/cgroup.subtree_control || exit 1
# set before the scheduler loads (ops.cgroup_init) ...
echo 100 >$CG/wa/cpu.weight; echo 300 >$CG/wn/y/cpu.weight

usage() { sed -n 's/^usage_usec //p' $CG/$1/cpu.stat; }

# Start $2 CPU-bound shell loops in cgroup $1.
hogs() {
    i=0
    while [ $i -lt $2 ]; do
        sh -c "echo \$\$ >$CG/$1/cgroup.procs; while :; do :; done" &
        HOGS="$HOGS $!"; i=$((i + 1))
    done
}

# Run the hogs, then report each cgroup's CPU time over the window as $1_<cgroup>.
measure() {
    name=$1; shift
    sleep 3
    for g in "$@"; do eval "u0_$(echo $g | tr / _)=$(usage $g)"; done
    idle0=$(awk '/^cpu /{print $5}' /proc/stat)
    sleep 8
    report ${name}_idle_ticks $(( $(awk '/^cpu /{print $5}' /proc/stat) - idle0 ))
    for g in "$@"; do
        v=$(echo $g | tr / _)
        eval "u0=\$u0_$v"
        report ${name}_$v $(( $(usage $g) - u0 ))
    done
    kill $HOGS; HOGS=""
    sleep 1
}

for sched in mosaic noweights eevdf; do
    case $sched in
    mosaic) start_mosaic --stats 0 --stats-file /tmp/s.json || exit 1 ;;
    noweights) start_mosaic --no-cgroup-weights --stats 0 || exit 1 ;;
    esac
    # ... and while it runs (ops.cgroup_set_weight)
    echo 300 >$CG/wb/cpu.weight
    # flat: 8 tasks at weight 100 against 4 at weight 300
    hogs wa 8; hogs wb 4
    measure ${sched}_flat wa wb
    if [ $sched != noweights ]; then
        # nested: wn (x:100 + y:300 inside) against wm, both 100
        hogs wn/x 4; hogs wn/y 4; hogs wm 4
        measure ${sched}_nested wn/x wn/y wm
    fi
    if [ $sched != eevdf ]; then stop_mosaic; fi
    if [ $sched = mosaic ]; then report_json stats /tmp/s.json; fi
    echo 100 >$CG/wb/cpu.weight
done
"""


def ratio(g, prefix, a, b):
    return int(g[f"{prefix}_{b}"]) / max(1, int(g[f"{prefix}_{a}"]))


def test_cpu_weight_splits_cpu_time_through_the_hierarchy():
    g = boot("1llc", SCRIPT, timeout=400)
    assert g.rc == 0, g.out
    s = g.json["stats"]
    assert_not_ejected(g, s)
    assert_counters_consistent(s)
    assert s["cgroups_untracked"] == 0
    flat = ratio(g, "mosaic_flat", "wa", "wb")
    # the machine was saturated: CPUs idled < 5 % of the window (USER_HZ ticks)
    for window in ("flat", "nested"):
        assert int(g[f"mosaic_{window}_idle_ticks"]) <= 0.05 * 4 * 8 * 100, g.out
    # 1:3 within 10 %, although wa runs twice as many tasks as wb
    assert 2.7 <= flat <= 3.3, g.out
    # nested: wn and wm split evenly, and inside wn, x:y = 1:3
    n = int(g["mosaic_nested_wn_x"]) + int(g["mosaic_nested_wn_y"])
    assert 0.9 <= n / max(1, int(g["mosaic_nested_wm"])) <= 1.1, g.out
    assert 2.7 <= ratio(g, "mosaic_nested", "wn_x", "wn_y") <= 3.3, g.out
    # with --no-cgroup-weights every task is equal: 8 tasks get twice what 4 get
    assert ratio(g, "noweights_flat", "wa", "wb") < 0.7, g.out
    print(f"cpu.weight 100:300 -> CPU time 1:{flat:.2f} under mosaic, "
          f"1:{ratio(g, 'noweights_flat', 'wa', 'wb'):.2f} with --no-cgroup-weights, "
          f"1:{ratio(g, 'eevdf_flat', 'wa', 'wb'):.2f} under EEVDF; nested x:y 1:"
          f"{ratio(g, 'mosaic_nested', 'wn_x', 'wn_y'):.2f} (TCG, 4 vCPUs)")
