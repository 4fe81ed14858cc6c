# tests/test_group.py: cgroups a and b under gb/, each running 4 sysbench cpu threads for 10 s,
# started spread: each group's threads begin on two CPUs of each LLC (taskset), then may run
# anywhere - so the balancer has to move running tasks (tick moves, swaps), and the baseline
# starts from the same known state. Meanwhile cgroups come and go under gb/, and once both
# groups settled the userspace process is stopped (SIGSTOP) for 2 s: BPF keeps scheduling
# (and moving tasks into their partitions), balancing resumes after. Once with the balancer
# (JSON block "on"), once without ("off").
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
mkdir -p $CG/gb/a $CG/gb/b
for mode in on off; do
    flags=""; [ $mode = on ] || flags=--no-group-balancer
    start_mosaic --gb-parent gb $flags --stats 0.5 --stats-file /tmp/$mode.json || exit 1
    pids=""
    for g in a b; do
        cpus=0,1,4,5; [ $g = a ] || cpus=2,3,6,7
        taskset -c $cpus sh -c "echo \$\$ >$CG/gb/$g/cgroup.procs
            exec sysbench cpu --threads=4 --time=10 run" >/tmp/sb.$g 2>&1 &
        pids="$pids $!"
    done
    sleep 0.5
    for p in $pids; do taskset -a -p -c 0-7 $p >/dev/null; done
    for i in 1 2 3 4 5; do mkdir $CG/gb/churn$i; sleep 0.2; done
    # the balancer settles one group per period: stop userspace only once a and b both
    # have (a stop in between would hold one settled group amid an unsettled one). Where
    # each is while both run: the scheduler's own live lines (--stats 0.5), read every half
    # second for up to 6 s. (A `scx_mosaic --monitor` client started under this load took
    # over 2 s to print its first line under TCG; polls that late saw the end of the run,
    # when one group's threads had exited and the other could move into its partition.)
    n=0
    while [ $mode = on ] && [ $n -lt 12 ]; do
        n=$((n + 1))
        sleep 0.5
        grep -oE '\| (a|b) -> p[0-9]+' $MOSAIC_LOG | tail -n 2 >/tmp/polled
        [ "$(grep -oE '(a|b) ->' /tmp/polled | sort -u | wc -l)" = 2 ] && break
    done
    report settle_polls_$mode $n
    report polled_parts_$mode "$(tr -d '|' </tmp/polled 2>/dev/null | tr '\n' ' ')"
    kill -STOP $MOSAIC_PID; sleep 2; report state_stopped_$mode "$(cat $SCX/state)"
    kill -CONT $MOSAIC_PID
    for i in 1 2 3 4 5; do rmdir $CG/gb/churn$i; sleep 0.2; done
    wait $pids
    # the balancer drops a removed cgroup at its next period (a period stretches to 1-3 s
    # under TCG with 8 busy CPUs): wait up to 10 s for its stats to stop naming them, so
    # that stopping it a moment after the last rmdir does not catch one still listed
    n=0
    while grep -q churn /tmp/$mode.json 2>/dev/null && [ $n -lt 20 ]; do
        n=$((n + 1))
        sleep 0.5
    done
    for g in a b; do report eps_${mode}_$g "$(sed -n 's/.*events per second: *//p' /tmp/sb.$g)"; done
    stop_mosaic
    # each settle and move the balancer made, with the loads it decided on
    report moves_$mode "$(grep -o 'group [a-z0-9]* [a-z ]* p[0-9] at .*' $MOSAIC_LOG | tr '\n' ';')"
    report_json $mode /tmp/$mode.json
done
