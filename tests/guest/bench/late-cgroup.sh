#!/bin/sh
# tests/guest/bench/late-cgroup.sh - cpu.weight across LLCs: N busy loops in a cgroup of
# cpu.weight 100 spread over the CPUs, then N in one of weight 300 forked on CPU 0 while every
# CPU is busy (as a shell forks them) and allowed everywhere after. Prints each cgroup's CPU
# time (cpu.stat usage_usec) over WINDOW seconds after a 2 s warm-up; mosaic-bench reads how
# close the split is to 1:3. Both cgroups are children of the root, as test_weight's: one
# level deeper, Mosaic's shares of 16 busy loops fall where its wait bound (vtime.bpf.c)
# takes over from cpu.weight.
# Usage: late-cgroup.sh N WINDOW
n=$1 window=$2
cg=/sys/fs/cgroup/mosaic-bench.$$
all=0-$(($(nproc) - 1))
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
mkdir -p $cg-light $cg-heavy || exit 1
echo 300 >$cg-heavy/cpu.weight || exit 1
usage() { sed -n 's/^usage_usec //p' $cg-$1/cpu.stat; }
pids=
i=0
while [ $i -lt "$n" ]; do
    sh -c "echo \$\$ >$cg-light/cgroup.procs; while :; do :; done" &
    pids="$pids $!"
    i=$((i + 1))
done
sleep 1
late=
i=0
while [ $i -lt "$n" ]; do
    taskset -c 0 sh -c "echo \$\$ >$cg-heavy/cgroup.procs; while :; do :; done" &
    late="$late $!"
    i=$((i + 1))
done
sleep 0.5
for p in $late; do taskset -pc $all $p >/dev/null; done
sleep 2
l0=$(usage light) h0=$(usage heavy)
sleep "$window"
echo "late-cgroup: light_usec=$(($(usage light) - l0)) heavy_usec=$(($(usage heavy) - h0))"
kill $pids $late
wait 2>/dev/null
rmdir $cg-light $cg-heavy
