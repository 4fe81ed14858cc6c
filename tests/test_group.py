"""VM tests of the group balancer (seed 004) on `2llc-smt`: 8 CPUs, two LLCs
(the default partitions: 0-3 and 4-7), two cgroups of 4 CPU-bound threads."""

import json
import re

from vmtest import assert_counters_consistent, assert_not_ejected, boot

# cgroups a and b under gb/, each running 4 sysbench cpu threads for 10 s, started
# spread: each group's threads begin on two CPUs of each LLC (taskset), then may run
# anywhere - so the balancer has to move running tasks (tick moves, swaps), and the
# baseline starts from the same known state. Meanwhile cgroups come and go under gb/,
# and once both groups settled the userspace process is stopped (SIGSTOP) for 2 s: BPF
# keeps scheduling (and moving tasks into their partitions), balancing resumes after.
SCRIPT = r"""
. /mosaic/guest/lib.sh
CG=/sys/fs/cgroup
mkdir -p $CG/gb/a $CG/gb/b
for mode in on off; do
    flags=""; [ $mode = on ] || flags=--no-group-balancer
    start_mosaic --gb-parent gb $flags --stats 0 --stats-file /tmp/$mode.json || exit 1
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
    # have (a stop in between would hold one settled group amid an unsettled one); the
    # monitor's last round says where each is while both run
    n=0
    while [ $mode = on ] && [ $n -lt 4 ]; do
        n=$((n + 1))
        timeout 2 scx_mosaic --monitor 0.5 >/tmp/mon 2>&1
        [ "$(grep -oE '\| (a|b) -> p' /tmp/mon | sort -u | wc -l)" = 2 ] && break
    done
    report settle_polls_$mode $n
    report polled_parts_$mode "$(grep -oE '\| (a|b) -> p[0-9]+' /tmp/mon | tail -n 2 | tr -d '|' | tr '\n' ' ')"
    kill -STOP $MOSAIC_PID; sleep 2; report state_stopped_$mode "$(cat $SCX/state)"
    kill -CONT $MOSAIC_PID
    for i in 1 2 3 4 5; do rmdir $CG/gb/churn$i; sleep 0.2; done
    wait $pids
    for g in a b; do report eps_${mode}_$g "$(sed -n 's/.*events per second: *//p' /tmp/sb.$g)"; done
    stop_mosaic
    report_json $mode /tmp/$mode.json
done
"""


def test_groups_settle_into_distinct_partitions_and_stay_there():
    g = boot("2llc-smt", SCRIPT, timeout=400)
    assert g.rc == 0, g.out
    on, off = g.json["on"], g.json["off"]
    for s in (on, off):
        assert_not_ejected(g, s)
        assert_counters_consistent(s)
    assert g["state_stopped_on"] == "enabled", "scheduling stopped with userspace"
    groups = {x["path"]: x for x in on["group_balancer"]["groups"]}
    # what failed, in full (pytest shortens dicts): per group its partition, settles,
    # resettles, exclusivity and runtime per partition; the balancer's counters
    summary = {
        "groups": {p: {k: x[k] for k in ("partition", "settles", "resettles", "exclusivity",
                                          "runtime_ns_per_partition")}
                   for p, x in groups.items()},
        "counters": {k: on[k] for k in ("group_tick_moves", "group_swaps", "group_moves",
                                         "group_queued", "group_fallback")},
        "settle_polls": g["settle_polls_on"], "polled": g["polled_parts_on"]}
    summary = json.dumps(summary)
    # the churn cgroups were removed again: only a and b are left
    assert sorted(groups) == ["a", "b"], groups
    a, b = groups["a"], groups["b"]
    assert a["settles"] >= 1 and b["settles"] >= 1, summary
    # both settled while they ran (the monitor saw it), into distinct partitions (at the
    # end one may already have moved on: once the other's threads exit, an emptier
    # partition can draw it, as the seed's try_to_settle allows)
    parts = re.findall(r"(a|b) -> p(\d+)", g["polled_parts_on"])
    assert sorted(x for x, _ in parts) == ["a", "b"], g["polled_parts_on"]
    assert parts[0][1] != parts[1][1], f"a and b in one partition: {summary}"
    # both started spread over both partitions; a task outside its partition leaves at a
    # tick (group_tick: to an idle CPU there, or swapping with a task of the other group),
    # so each group runs >= 90 % inside its own from its settle on
    assert min(a["exclusivity"], b["exclusivity"]) >= 0.9, summary
    base = {x["path"]: x for x in off["group_balancer"]["groups"]}
    assert base["a"]["partition"] is None and base["a"]["settles"] == 0
    # without the balancer nothing keeps the groups apart or together: once the threads
    # may run anywhere, load moves mix them, and a group of 4 on two LLCs of 4 CPUs sits
    # 2:2 about half the time, 3:1 (0.75) about half and 4:0 3 % of the time, so one
    # group alone may reach 0.8 by chance (CI saw 0.83 with 0.75 for the other; 0.50-0.79
    # in three runs here). What only the balancer does: both groups at >= 0.9 together.
    mean_off = (base["a"]["exclusivity"] + base["b"]["exclusivity"]) / 2
    assert mean_off < 0.9, base
    print("exclusivity with / without the balancer: "
          f"a {a['exclusivity']:.2f} / {base['a']['exclusivity']:.2f}, "
          f"b {b['exclusivity']:.2f} / {base['b']['exclusivity']:.2f}; moves: requeue "
          f"{on['group_moves']}, tick {on['group_tick_moves']}, swap {on['group_swaps']}, "
          f"queued {on['group_queued']}; sysbench events/s "
          f"on: {g['eps_on_a']} + {g['eps_on_b']}, off: {g['eps_off_a']} + {g['eps_off_b']} "
          "(TCG, noisy, no cache model)")


def test_bad_group_balancer_input_loads_nothing():
    g = boot("2llc-smt", r"""
. /mosaic/guest/lib.sh
mkdir -p /sys/fs/cgroup/gb
n=0
for args in "--gb-parent /nonexistent" "--gb-parent /tmp" "--gb-parent gb --gb-partitions 0-3;3-7" \
            "--gb-parent gb --gb-partitions 0-3;4-9" "--gb-parent gb --gb-partitions 0-3;;4-7" \
            "--gb-partitions llc" "--gb-parent gb --gb-period-ms 0"; do
    n=$((n + 1))
    scx_mosaic $args >/tmp/out 2>&1; report rc_$n $?
    report lines_$n "$(wc -l </tmp/out)"
    report msg_$n "$(cat /tmp/out)"
done
report state "$(cat $SCX/state)"
""", timeout=200)
    assert g.rc == 0, g.out
    for n in range(1, 8):
        assert g[f"rc_{n}"] != "0", g.out
        assert g[f"lines_{n}"] == "1", g[f"msg_{n}"]
    assert "not a cgroup directory" in g["msg_1"]
    assert "not on a cgroup v2" in g["msg_2"] or "not a cgroup directory" in g["msg_2"]
    assert "two partitions" in g["msg_3"]
    assert "not an online CPU" in g["msg_4"]
    assert "is empty" in g["msg_5"]
    assert "need --gb-parent" in g["msg_6"]
    assert g["state"] == "disabled"


def test_steals_under_the_balancer_respect_affinity():
    # six hogs allowed on CPUs 4-5 only wait on LLC 1's shard while CPUs 0-3 idle and
    # steal; the balancer's steal walks that shard itself (to prefer its own groups'
    # tasks) and must skip the hogs, or the kernel ejects the scheduler ("target CPU not
    # allowed"), as it did before this test
    g = boot("2llc-smt", r"""
. /mosaic/guest/lib.sh
mkdir -p /sys/fs/cgroup/gb
start_mosaic --gb-parent gb --stats 0 --stats-file /tmp/s.json || exit 1
pids=""
for i in 1 2 3 4 5 6; do taskset -c 4-5 sh -c 'while :; do :; done' & pids="$pids $!"; done
where=""
for i in 1 2 3 4 5 6 7 8; do
    sleep 0.5
    for p in $pids; do where="$where $(cut -d' ' -f39 /proc/$p/stat)"; done
done
report cpus "$where"
kill $pids
stop_mosaic
report_json s /tmp/s.json
""", timeout=300)
    assert g.rc == 0, g.out
    s = g.json["s"]
    assert_not_ejected(g, s)
    assert s["steal_scans"] > 0, s
    cpus = {int(c) for c in g["cpus"].split()}
    assert cpus <= {4, 5}, f"hogs allowed on 4-5 ran on {sorted(cpus)}"
