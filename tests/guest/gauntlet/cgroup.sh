# Cell "cgroup": the group balancer (--gb-parent gauntlet, 50 ms period) while cgroups appear
# and disappear below it: each round makes a cgroup, moves a worker process into it, starts a
# short task inside it, and empties and removes the cgroup made three rounds earlier (workers
# go back to gauntlet/base). Sourced by run.sh.
CG=/sys/fs/cgroup/gauntlet
mkdir -p $CG/base
g_start --gb-parent gauntlet --gb-period-ms 50 || { rmdir $CG/base $CG; return 1; }
start_workers $CG
w=$WORKERS
boost
end=$(($(now) + SECS - 1)) k=0 moves=0 made=0 removed=0
while [ "$(now)" -lt $end ]; do
    k=$((k + 1))
    mkdir $CG/c$k && made=$((made + 1))
    set -- $w
    eval v=\${$((RANDOM % $# + 1))}
    echo "$(cat /tmp/g.pid.$v)" >$CG/c$k/cgroup.procs && moves=$((moves + 1))
    sh -c "echo \$\$ >$CG/c$k/cgroup.procs; renice -n 20 -p \$\$ >/dev/null; exec spin -t 1 -s 1" \
        >/tmp/g.short.$k 2>&1 &
    sleep 0.3
    [ $k -gt 3 ] && drop_cgroup $CG $CG/c$((k - 3)) && removed=$((removed + 1))
done
for d in $CG/c*; do [ -d "$d" ] && drop_cgroup $CG "$d" && removed=$((removed + 1)); done
r cgroups_made $made
r cgroups_removed $removed
r moves $moves
for v in $w; do spin_wait $v; done
sleep 1
r short_runs "$(cat /tmp/g.short.* | grep -c '^spin ')"
r short_starved "$(cat /tmp/g.short.* | grep '^spin ' | grep -vc ' zero=0 ')"
g_stop
rmdir $CG/base $CG 2>/dev/null
