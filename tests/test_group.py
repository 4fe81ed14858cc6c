"""VM tests of the group balancer (seed 004) on `2llc-smt`: 8 CPUs, two LLCs
(the default partitions: 0-3 and 4-7), two cgroups of 4 CPU-bound threads. Guest scripts: tests/guest/group/."""

import json
import re

import pytest

from vmtest import checked_stats, run_guest

pytestmark = pytest.mark.vm


def test_groups_settle_into_distinct_partitions_and_stay_there():
    g = run_guest("2llc-smt", "group/settle.sh", timeout=400)
    on, off = checked_stats(g, "on", "off")
    assert g["state_stopped_on"] == "enabled", "scheduling stopped with userspace"
    groups = {x["path"]: x for x in on["group_balancer"]["groups"]}
    # what failed, in full (pytest shortens dicts): per group its partition, settles,
    # resettles, exclusivity, runtime per partition and its last move with the loads it
    # was decided on; the balancer's counters
    summary = {
        "groups": {p: {k: x[k] for k in ("partition", "settles", "resettles", "exclusivity",
                                          "runtime_ns_per_partition", "last_move")}
                   for p, x in groups.items()},
        "counters": {k: on[k] for k in ("group_tick_moves", "group_swaps", "group_moves",
                                         "group_queued", "group_fallback")},
        "settle_polls": g["settle_polls_on"], "polled": g["polled_parts_on"],
        "moves": g["moves_on"]}
    summary = json.dumps(summary)
    # the churn cgroups were removed again: only a and b are left
    assert sorted(groups) == ["a", "b"], groups
    a, b = groups["a"], groups["b"]
    assert a["settles"] >= 1 and b["settles"] >= 1, summary
    # both settled while they ran (its live stats saw it), into distinct partitions (at the
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
          "(TCG, noisy, no cache model); last moves: "
          f"a {a['last_move']}, b {b['last_move']}")


def test_bad_group_balancer_input_loads_nothing():
    g = run_guest("2llc-smt", "group/bad-input.sh", timeout=200)
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
    # allowed"), as it did before this test; the default's per-CPU queues (8 CPUs) pull
    # with the newidle balance, which must skip them too
    g = run_guest("2llc-smt", "group/pinned-steals.sh", timeout=400)
    shard, default = checked_stats(g, "shard", "auto")
    assert shard["steal_scans"] > 0, shard
    assert default["no_shared_runq"] is True, default
    for design in ("shard", "auto"):
        cpus = {int(c) for c in g[f"cpus_{design}"].split()}
        assert cpus <= {4, 5}, f"{design}: hogs allowed on 4-5 ran on {sorted(cpus)}"


def test_a_group_settles_only_where_its_cpuset_reaches():
    # the seed settles a group only in partitions that share a CPU with its effective cpuset;
    # alone on the machine, both partitions are equally idle (ties go to the first), so
    # without that rule the group would settle in partition 0, where its tasks may not run
    g = run_guest("2llc-smt", "group/cpuset.sh", timeout=400)
    s = checked_stats(g, "s")
    assert g["part_llc1"] == "p1", g.out
    # its cpuset moved to the other LLC while it ran: it follows
    assert g["part_llc0"] == "p0", g.out
    a = next(x for x in s["group_balancer"]["groups"] if x["path"] == "a")
    assert a["settles"] == 1 and a["resettles"] >= 1, a
