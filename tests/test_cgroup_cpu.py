"""VM tests of the cgroup v2 CPU controller beyond cpu.weight: cpu.max (bandwidth.bpf.c) and
cpu.idle (weight.bpf.c), on `1llc` (4 CPUs) and `2llc-smt` (8 CPUs, two LLCs). CPU time per
cgroup comes from the kernel's cpu.stat usage_usec, measured in the guest over windows of
3-9 s (guest script: tests/guest/cgroup-cpu.sh); cpu.idle's share under contention from the
work its loops did (iterations counted by each loop), which TCG does not inflate. The
scheduler runs with a 5 s watchdog, so a throttled task left waiting past it ejects the
scheduler and fails the test; a second load with the kernel's default watchdog measures
cpu.idle as a user gets it."""

import pytest

from vmtest import checked_stats, idle_wait_bound_us, run_guest

pytestmark = pytest.mark.vm

TOPOS = {"1llc": 4, "2llc-smt": 8}


def share(g, name, cgroup):
    """CPU time of @cgroup in window @name, in CPUs (usage / window length)."""
    return int(g[f"{name}_{cgroup}"]) / int(g[f"{name}_window_us"])


@pytest.mark.parametrize("topo", TOPOS)
def test_cpu_max_and_cpu_idle(topo):
    ncpus = TOPOS[topo]
    g = run_guest(topo, "cgroup-cpu.sh", "--timeout-ms", "5000", timeout=600)
    s, s_default = checked_stats(g, "stats", "stats_default")
    got = {
        "limited": share(g, "limited", "lim"),
        "lifted": share(g, "lifted", "lim"),
        "preset": share(g, "preset", "pre"),
        "nested": share(g, "nested", "nest_inner"),
        "nested_parent": share(g, "nested_parent", "nest_inner"),
    }
    print(f"{topo}: CPUs used {got}; burst {g['burst_used_us']} us vs "
          f"{g['noburst_used_us']} us without; idle cgroup {g['idle_contended_idle']} us vs "
          f"busy {g['idle_contended_busy']} us ({g['idle_default_idle']} us vs "
          f"{g['idle_default_busy']} us with the default watchdog); work idle/busy "
          f"{g['idle_contended_work_idle']}/{g['idle_contended_work_busy']} "
          f"({g['idle_default_work_idle']}/{g['idle_default_work_busy']}), alone "
          f"{share(g, 'idle_alone', 'idle'):.2f} CPUs; wait_max {s['wait_max_us']} us")
    # cpu.max "20000 100000" with 4 busy loops: 0.20 CPU, +-10 %
    assert 0.18 <= got["limited"] <= 0.22, got
    # "max" at run time lifts the limit: the 4 loops take most of 4 CPUs
    assert got["lifted"] > 2.5, got
    # a limit set before the load (ops.cgroup_init): 0.30 CPU
    assert 0.27 <= got["preset"] <= 0.33, got
    # nested limits: the tighter one holds, child (0.10) or parent (0.15)
    assert 0.09 <= got["nested"] <= 0.11, got
    assert 0.135 <= got["nested_parent"] <= 0.165, got
    # burst: 400 ms per 1 s banked up to 400 ms more, spent within one period (800 ms
    # against 400 ms); within one period an overdraft is not yet paid back: a run is charged
    # at its CPU's next tick, which TCG delays by the other vCPUs' turns of the host thread.
    burst, noburst = int(g["burst_used_us"]), int(g["noburst_used_us"])
    assert burst > 1.3 * noburst, (burst, noburst)
    # The limit holds within one quota of overdraft per window: the window's own quotas (one
    # per period it touched: TCG stretches its 0.5 s past refills, to 0.9-1.7 s) plus one.
    # (Windows that crossed a refill unnoticed once read as overdrafts of 414-473 ms.) The
    # scheduler's own largest overdraft is the charge point's lateness: a run ends at its
    # CPU's run timer or next tick, which TCG may hold back for the other vCPUs' turns.
    refills = int(g["burst_refills"])
    print(f"{topo}: burst window {g['burst_window_us']} us, {refills} refills in it; "
          f"overdraft max {s['bw_overdraft_max_us']} us")
    assert noburst < (2 + refills) * 400_000, (noburst, refills)
    assert s["bw_overdraft_max_us"] < idle_wait_bound_us(ncpus), s["bw_overdraft_max_us"]
    # cpu.idle: the idle cgroup's loops do little of the work the busy cgroup's do while the
    # busy one has work for every CPU - with the kernel's default watchdog (idle tasks overdue
    # after 7.5 s) and with a 5 s one (overdue after 1.25 s). An overdue task runs a tick (4 ms)
    # on a busy CPU: 0.32 % of a CPU per idle task. Under TCG a vCPU runs its tick alone on the
    # host thread, so the share of work is the vCPU count times that: 1.3 % on 4 vCPUs, 2.6 % on
    # 8. Idle tasks sometimes get more turns than the overdue ones (as if a CPU found no busy
    # loop for a moment; cause not pinned down), which a 4 s window let weigh up to 4.3 % on 8
    # vCPUs; the 8 s window averages such moments (seen: 2.0-2.6 %). Work, not cpu.stat time: a
    # turn that spans the other vCPUs' turns of the host thread is billed all of them (up to
    # (vCPUs - 1) x 100 ms), which put the idle cgroup's CPU time at 2.4-9.5 % of the busy one's
    # on 8 vCPUs (tests/guest/cgroup-cpu.sh, idle_next_to_busy).
    for phase, bound in (("idle_default", 0.02), ("idle_contended", 0.02 * ncpus / 4)):
        idle, busy = int(g[f"{phase}_work_idle"]), int(g[f"{phase}_work_busy"])
        assert busy > 0 and idle < bound * busy, (phase, idle, busy)
    # ... and no task waits much past a quarter of the watchdog: an overdue idle task runs
    # at the next dispatch of a CPU of its LLC, which TCG may hold back for the other
    # vCPUs' turns (idle_wait_bound_us). Seen: 1.27-1.29 s and 7.50-7.52 s; 2.5-4 s and
    # 15-22 s when a task requeued after its turn could hide the overdue one behind it.
    for stats, watchdog_us in ((s, 5_000_000), (s_default, 30_000_000)):
        bound = watchdog_us // 4 + idle_wait_bound_us(ncpus)
        assert stats["wait_max_us"] < bound, (stats["wait_max_us"], stats["wait_max_task"])
    # ... and every CPU when alone
    assert share(g, "idle_alone", "idle") > 0.75 * ncpus, g.out
    # the counters say what happened
    assert s["bw_throttles"] > 0 and s["bw_refills"] > 0, s
    # every parked task came back: at a refill, another way (a cgroup move), or at once when
    # killed (the script kills throttled loops, bw_park_killed)
    back = s["bw_unparked"] + s["bw_park_left"] + s["bw_park_killed"]
    assert s["bw_parked"] > 0 and back == s["bw_parked"], s
    # parks are timed apart from waits for a CPU (wait.bpf.c)
    assert s["bw_parked_max_us"] > 0, s
    assert s["idle_cgroup_queued"] > 0, s
    # the limited cgroups at exit, each with its own throttling ("lim" was lifted)
    limits = {c["path"]: c for c in s["cgroup_bandwidth"]}
    assert "lim" not in limits, limits
    assert (limits["pre"]["quota_us"], limits["pre"]["period_us"]) == (30000, 100000), limits
    assert limits["pre"]["throttles"] > 0 and limits["pre"]["throttled_ns"] > 0, limits
    assert limits["burst"]["burst_us"] == 400000 and limits["noburst"]["burst_us"] == 0, limits
    assert limits["nest/inner"]["throttles"] > 0, limits
