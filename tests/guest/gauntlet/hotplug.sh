# Cell "hotplug": CPUs go offline and online again under load (canaries, stress-ng cpu); the
# kernel unloads the scheduler at each change and scx_mosaic must reload on the new topology
# and keep running. At least one offline/online cycle, more while the window lasts. Sourced
# by run.sh.
if [ "$NCPU" -lt 2 ]; then r skip "needs 2 CPUs"; return 0; fi
# The group balancer runs with explicit partitions (two halves of the CPUs): the CPU that goes
# offline is named in one of them, so each reload without it must keep the rest of the lists
# (one line says what it left out), and the reload with it back must use it again.
CG=/sys/fs/cgroup/hotplug
mkdir -p $CG/a
half=$((NCPU / 2))
if [ $half -gt 1 ]; then parts="0-$((half - 1))"; else parts=0; fi
if [ $((NCPU - half)) -gt 1 ]; then parts="$parts;$half-$((NCPU - 1))"; else parts="$parts;$half"; fi
r partitions "$parts"
g_start --gb-parent hotplug --gb-partitions "$parts" || { rmdir $CG/a $CG; return 1; }
canaries
echo "$(cat /tmp/g.pid.canary)" >$CG/a/cgroup.procs
stressng --cpu "$NCPU"
# Wait up to 60 s until scx_mosaic has attached $1 times and sched_ext is enabled again.
attached() {
    local n=0
    while [ "$(grep -c 'attached' $MOSAIC_LOG)" -lt "$1" ]; do
        n=$((n + 1))
        [ $n -gt 600 ] && return 1
        kill -0 $MOSAIC_PID 2>/dev/null || return 1
        sleep 0.1
    done
    wait_state enabled 60
}
end=$(($(now) + SECS - 2)) cycles=0 ok=1
while :; do
    cpu=$((1 + RANDOM % (NCPU - 1)))
    echo 0 >/sys/devices/system/cpu/cpu$cpu/online
    attached $((2 * cycles + 2)) || { ok=0; break; }
    echo 1 >/sys/devices/system/cpu/cpu$cpu/online
    attached $((2 * cycles + 3)) || { ok=0; break; }
    cycles=$((cycles + 1))
    [ "$(now)" -lt $end ] || break
done
r cycles $cycles
r reattached $ok
# reloads that left an offline CPU out of --gb-partitions, and the first such line
r cut "$(grep -c 'offline: left out of --gb-partitions' $MOSAIC_LOG)"
grep -m 1 'offline: left out of' $MOSAIC_LOG | sed "s/^/[$CELL scx_mosaic] /"
r online "$(cat /sys/devices/system/cpu/online)"
r state_end "$(cat $SCX/state)"
for c in /sys/devices/system/cpu/cpu[0-9]*/online; do echo 1 >"$c"; done
stressng_wait
spin_wait canary
g_stop
rmdir $CG/a $CG 2>/dev/null
