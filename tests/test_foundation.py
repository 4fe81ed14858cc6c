"""VM tests of the foundation: load, survive load, report, unload; the sharded shared
runqueue (seed 000); ejection and error reporting; CPU hotplug. Guest scripts:
tests/guest/foundation/."""

import subprocess
from pathlib import Path

import pytest

from vmtest import BIN, assert_counters_consistent, assert_not_ejected, checked_stats, run_guest


@pytest.fixture(scope="module")
def lifecycle():
    return run_guest("1llc", "foundation/lifecycle.sh")


@pytest.mark.vm
def test_bad_flags_exit_with_one_line_and_load_nothing(lifecycle):
    assert lifecycle["badflag_rc"] == "2"
    assert lifecycle["badflag_lines"] == "1"
    assert "--shard-size" in lifecycle["badflag_msg"]
    assert lifecycle["unknown_rc"] == "2"
    assert lifecycle["state_after_bad"] == "disabled"


@pytest.mark.vm
def test_loads_survives_load_and_unregisters(lifecycle):
    g = lifecycle
    assert g.rc == 0, g.out
    assert g["ops"].startswith("mosaic"), g["ops"]
    assert g["state_running"] == "enabled"
    assert float(g["hackbench_s"]) > 0
    assert g["stress_rc"] == "0", g.out
    assert g["state_after_stress"] == "enabled", "scheduler left during stress-ng"
    assert g["mosaic_rc"] == "0", g.out
    assert g["state_after"] == "disabled"
    s = g.json["stats"]
    assert_not_ejected(g, s)
    assert s["exit"]["kind_name"] == "unregistered", s["exit"]


@pytest.mark.vm
def test_counters_move_and_agree(lifecycle):
    s = lifecycle.json["stats"]
    # the default on 4 CPUs (--shared-runq auto): per-CPU queues and the newidle balance
    assert s["no_shared_runq"] is True and s["shard_enqueues"] == 0, s
    for key in ("direct_dispatches", "cpu_enqueues", "cpu_pulls", "newidle_pulls"):
        assert s[key] > 0, f"{key} is 0: {s}"
    assert_counters_consistent(s)
    print(f"longest runnable wait under hackbench + stress-ng (1llc): {s['wait_max_us']} us, "
          f"p99 {s['wait_p99_us']} us (TCG, noisy)")


@pytest.mark.vm
def test_bpf_costs_are_measured(lifecycle):
    bpf = lifecycle.json["stats"]["bpf"]
    progs = bpf["programs"]
    for op in ("mosaic_enqueue", "mosaic_dispatch", "mosaic_select_cpu", "mosaic_running"):
        assert progs[op]["run_cnt"] > 0, f"{op} never ran: {progs}"
    assert bpf["calls"] == sum(p["run_cnt"] for p in progs.values())
    assert bpf["ns_per_call"] > 0
    # counted only while --bpf-stats had the kernel count: restored afterwards
    assert lifecycle["bpf_stats_after"] == "0"


@pytest.mark.vm
def test_sibling_shards_are_pulled_on_2llc_smt():
    g = run_guest("2llc-smt", "foundation/hackbench.sh", "--shared-runq=shard --shard-size 2", 100)
    s = checked_stats(g, "stats")
    assert s["exit"]["kind_name"] == "unregistered"
    # 2 LLCs of 4 CPUs, shards of one SMT core each
    assert len(s["llcs"]) == 2 and len(s["shards"]) == 4, s["shards"]
    assert all(len(shard) == 2 for shard in s["shards"])
    assert all(n > 0 for n in s["shard_enqueues_per_shard"]), s["shard_enqueues_per_shard"]
    assert s["shard_pulls_local"] > 0 and s["shard_pulls_sibling"] > 0, s
    assert_counters_consistent(s)
    # in a VM's guest --same-rq-pull's auto is on: some own-shard pulls take a task on the
    # CPU's runqueue ahead of a head on another CPU's, others find none and take the head
    assert s["shard_pulls_same_rq"] > 0 and s["shard_pulls_remote_rq"] > 0, s


@pytest.mark.vm
def test_no_shared_runq_never_touches_shards():
    # --no-shared-runq overrides a shared runqueue asked for before it
    g = run_guest("1llc", "foundation/hackbench.sh", "--shared-runq=seed --no-shared-runq", 50)
    s = checked_stats(g, "stats")
    assert s["shard_enqueues"] == 0 and s["shard_pulls_sibling"] == 0
    assert s["shard_pulls_same_rq"] == 0 and s["shard_pulls_remote_rq"] == 0
    assert s["cpu_enqueues"] > 0 and s["cpu_pulls"] > 0
    # seed 000's baseline is the kernel's newidle balance: CPUs about to idle pull from the
    # busiest CPU queue of the LLC (1llc: never from another LLC)
    assert s["newidle_pulls"] > 0 and s["newidle_pulls_remote"] == 0, s


@pytest.mark.vm
def test_the_seeds_design_pulls_through_its_index_on_2llc_smt():
    g = run_guest("2llc-smt", "foundation/hackbench.sh", "--shared-runq=seed", 100)
    s = checked_stats(g, "stats")
    assert s["exit"]["kind_name"] == "unregistered"
    # tasks wait on their CPU's own queue; the shards only index the CPUs with waiters, and
    # a CPU about to idle pulls a busy CPU's waiter through that index
    assert s["shard_enqueues"] == 0 and s["cpu_enqueues"] > 0, s
    assert s["seed_index_sets"] > 0 and s["seed_pulls_own"] > 0, s
    # the index takes the LLC's pulls: the newidle balance starts above the LLC
    assert s["newidle_pulls"] == 0, s


@pytest.mark.vm
def test_watchdog_ejection_is_detected_and_reported():
    g = run_guest("1llc", "foundation/watchdog.sh")
    assert g["mosaic_rc"] == "1", g.out
    assert g["state_after"] == "disabled"
    assert "watchdog stall" in g.out
    s = g.json["stats"]
    assert s["exit"]["kind"] == 1026, s["exit"]
    assert s["debug_drops"] >= 1


@pytest.mark.host
def test_host_without_sched_ext_gets_one_line():
    if Path("/sys/kernel/sched_ext").exists():
        pytest.skip("this host has sched_ext; covered by the unit test of preflight")
    p = subprocess.run([str(BIN)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "no sched_ext" in p.stderr


@pytest.mark.vm
def test_cpu_hotplug_under_load_restarts_and_rebuilds_shards_and_partitions():
    # 2llc-smt: CPUs 0-3 and 4-7 are the two LLCs (and group partitions); CPU 7 goes
    # offline and online again while 8 CPU-bound threads in two balanced cgroups run,
    # under the shard design (the default's above 72 CPUs), whose shards must rebuild.
    g = run_guest("2llc-smt", "foundation/hotplug.sh", timeout=500)
    s = checked_stats(g, "stats")
    assert g["online_after_offline"] == "0-6"
    assert g["mosaic_rc"] == "0", g.out
    assert s["restarts"] == 2, s
    assert s["exit"]["kind_name"] == "unregistered"
    # the load ran to the end in both cgroups
    assert int(g["events_a"]) > 0 and int(g["events_b"]) > 0, g.out
    # rebuilt from the CPUs online at each load: CPU 7's SMT sibling alone in its
    # shard, partitions without CPU 7; all back after it returns
    assert "8 CPUs" not in g["banner_offline"] and "7 CPUs" in g["banner_offline"]
    assert "[6]" in g["banner_offline"] and "partitions [0-3] [4-6]" in g["banner_offline"]
    assert "[6-7]" in g["banner_online"] and "partitions [0-3] [4-7]" in g["banner_online"]
    assert s["group_balancer"]["partitions"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
