#!/bin/sh
# tests/guest/bench/sysbench-cg.sh - sysbench memory in GROUPS cgroups (v2) of THREADS threads
# each, all at once, for SECS seconds (the seeds' grouped sysbench). mosaic-bench sums the
# "Total operations ... per second" lines.
# Usage: sysbench-cg.sh GROUPS THREADS SECS
groups=$1 threads=$2 secs=$3
cg=/sys/fs/cgroup/mosaic-bench.$$
mkdir -p $cg || exit 1
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
echo +cpu >$cg/cgroup.subtree_control 2>/dev/null
pids=
i=1
while [ $i -le "$groups" ]; do
    mkdir -p $cg/g$i
    sh -c "echo \$\$ >$cg/g$i/cgroup.procs && exec sysbench memory --threads=$threads --time=$secs run" \
        >/tmp/sysbench-cg.$$.$i 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
rc=0
for p in $pids; do wait $p || rc=1; done
i=1
while [ $i -le "$groups" ]; do
    echo "== group $i =="
    grep -iE 'Total operations|MiB/sec|fatal|error|invalid' /tmp/sysbench-cg.$$.$i
    rm -f /tmp/sysbench-cg.$$.$i
    rmdir $cg/g$i
    i=$((i + 1))
done
rmdir $cg
exit $rc
