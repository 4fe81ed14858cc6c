# tests/test_weight.py: busy cgroups with cpu.weight set before and during the load, under
# scx_mosaic (its default on this 4-CPU guest: per-CPU queues), its shard design
# (--shared-runq=shard), with --no-cgroup-weights, and under EEVDF; CPU time per cgroup over 8 s.
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
echo +cpu >$CG/cgroup.subtree_control || exit 1
mkdir -p $CG/wa $CG/wb $CG/wn/x $CG/wn/y $CG/wm
echo +cpu >$CG/wn/cgroup.subtree_control || exit 1
# set before the scheduler loads (ops.cgroup_init) ...
echo 100 >$CG/wa/cpu.weight; echo 300 >$CG/wn/y/cpu.weight

# Run the hogs, then report each cgroup's CPU time over the window as $1_<cgroup>.
measure() {
    name=$1; shift
    sleep 3
    for g in "$@"; do eval "u0_$(echo $g | tr / _)=$(cg_usage $g)"; done
    idle0=$(awk '/^cpu /{print $5}' /proc/stat)
    sleep 8
    report ${name}_idle_ticks $(( $(awk '/^cpu /{print $5}' /proc/stat) - idle0 ))
    for g in "$@"; do
        v=$(echo $g | tr / _)
        eval "u0=\$u0_$v"
        report ${name}_$v $(( $(cg_usage $g) - u0 ))
    done
    kill $HOGS; HOGS=""
    sleep 1
}

for sched in mosaic shard noweights eevdf; do
    case $sched in
    mosaic) start_mosaic --stats 0 --stats-file /tmp/s.json || exit 1 ;;
    shard) start_mosaic --shared-runq=shard --stats 0 || exit 1 ;;
    noweights) start_mosaic --no-cgroup-weights --stats 0 || exit 1 ;;
    esac
    # ... and while it runs (ops.cgroup_set_weight)
    echo 300 >$CG/wb/cpu.weight
    # flat: 8 tasks at weight 100 against 4 at weight 300
    cg_hogs wa 8; cg_hogs wb 4
    measure ${sched}_flat wa wb
    if [ $sched = mosaic ] || [ $sched = eevdf ]; then
        # nested: wn (x:100 + y:300 inside) against wm, both 100
        cg_hogs wn/x 4; cg_hogs wn/y 4; cg_hogs wm 4
        measure ${sched}_nested wn/x wn/y wm
        # pinned: the flat hogs pinned, two of wa and one of wb per CPU
        cg_pinned_hogs wa 8 4; cg_pinned_hogs wb 4 4
        measure ${sched}_pinned wa wb
    fi
    if [ $sched != eevdf ]; then stop_mosaic; fi
    if [ $sched = mosaic ]; then report_json stats /tmp/s.json; fi
    echo 100 >$CG/wb/cpu.weight
done
