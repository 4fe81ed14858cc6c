#!/bin/sh
# tests/guest/bench/redis-cg.sh - one redis-server per cgroup (v2), each driven by its own
# redis-benchmark in the same cgroup, all groups at once. mosaic-bench sums the requests/s
# of the CSV lines.
# Usage: redis-cg.sh GROUPS REQUESTS CLIENTS
groups=$1 reqs=$2 clients=$3
cg=/sys/fs/cgroup/mosaic-bench.$$
base=$((6400 + $$ % 1000))
mkdir -p $cg || exit 1
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
echo +cpu >$cg/cgroup.subtree_control 2>/dev/null
cd /tmp || exit 1
in_group() { g=$1; shift; sh -c "echo \$\$ >$cg/g$g/cgroup.procs && exec $*"; }
servers=
i=1
while [ $i -le "$groups" ]; do
    mkdir -p $cg/g$i
    in_group $i redis-server --port $((base + i)) --save "''" --appendonly no \
        --protected-mode no --daemonize no >/tmp/redis-cg.$$.srv$i 2>&1 &
    servers="$servers $!"
    i=$((i + 1))
done
rc=0
i=1
while [ $i -le "$groups" ]; do
    n=0
    until [ "$(redis-cli -p $((base + i)) ping 2>/dev/null)" = PONG ]; do
        n=$((n + 1))
        [ $n -gt 300 ] && { echo "redis-server $i did not answer"; cat /tmp/redis-cg.$$.srv$i; rc=1; break; }
        sleep 0.1
    done
    i=$((i + 1))
done
if [ $rc = 0 ]; then
    pids=
    i=1
    while [ $i -le "$groups" ]; do
        in_group $i redis-benchmark -p $((base + i)) -n "$reqs" -c "$clients" -t set,get --csv \
            >/tmp/redis-cg.$$.b$i 2>&1 &
        pids="$pids $!"
        i=$((i + 1))
    done
    for p in $pids; do wait $p || rc=1; done
fi
i=1
while [ $i -le "$groups" ]; do
    echo "== group $i =="
    cat /tmp/redis-cg.$$.b$i 2>/dev/null
    redis-cli -p $((base + i)) shutdown nosave >/dev/null 2>&1
    i=$((i + 1))
done
for p in $servers; do wait $p; done
i=1
while [ $i -le "$groups" ]; do
    rm -f /tmp/redis-cg.$$.srv$i /tmp/redis-cg.$$.b$i
    rmdir $cg/g$i
    i=$((i + 1))
done
rmdir $cg
exit $rc
