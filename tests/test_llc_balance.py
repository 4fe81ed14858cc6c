"""VM test of balancing busy LLCs (steal.bpf.c) on `2llc-smt` (8 vCPUs, 2 LLCs): a cgroup
whose tasks were forked in one LLC while every CPU was busy gets its cpu.weight share
across both, not half of it. CPU time is the kernel's per-cgroup account (cpu.stat
usage_usec) over an 8 s window after a 3 s warm-up. Guest script: tests/guest/llc-balance.sh."""

from vmtest import checked_stats, run_guest


def share(g, sched):
    return int(g[f"{sched}_lb"]) / max(1, int(g[f"{sched}_la"]))


def test_busy_llcs_even_out_between_equal_cgroups():
    g = run_guest("2llc-smt", "llc-balance.sh", timeout=400)
    s, off = checked_stats(g, "stats", "nobalance")
    assert s["llc_balance_pulls"] > 0 and s["llc_balance_pulls"] <= s["llc_balance_hints"], s
    assert off["llc_balance_hints"] == 0 and off["llc_balance_pulls"] == 0, off
    # equal weights: equal CPU time within 20 % (the late cgroup's 8 loops all started in
    # LLC 0); without the balance they stay there, on half the CPUs: about 1:2
    assert 0.8 <= share(g, "mosaic") <= 1.25, g.out
    assert share(g, "nobalance") < 0.7, g.out
    print(f"late cgroup : spread cgroup CPU time {share(g, 'mosaic'):.2f} under mosaic, "
          f"{share(g, 'nobalance'):.2f} with --no-llc-balance, {share(g, 'eevdf'):.2f} "
          f"under EEVDF (TCG, 2 LLCs x 4 vCPUs)")
