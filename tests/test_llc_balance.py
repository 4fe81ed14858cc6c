"""VM test of balancing busy LLCs by weight (steal.bpf.c) on `2llc-smt` (8 vCPUs, 2 LLCs):
a cgroup whose tasks were forked in one LLC while every CPU was busy gets its cpu.weight
share across both LLCs, not what its LLC leaves it. CPU time is the kernel's per-cgroup account (cpu.stat
usage_usec) over a 16 s window after a 3 s warm-up; scx_mosaic's split is the median of
three runs in one boot. Guest script: tests/guest/llc-balance.sh."""

import pytest

from vmtest import checked_stats, run_guest

pytestmark = pytest.mark.vm


def share(g, sched):
    return int(g[f"{sched}_lb"]) / max(1, int(g[f"{sched}_la"]))


def test_busy_llcs_even_out_by_weight():
    g = run_guest("2llc-smt", "llc-balance.sh", timeout=400)
    *runs, off = checked_stats(g, "stats", "mosaic2", "mosaic3", "nobalance")
    for s in runs:
        assert 0 < s["llc_balance_pulls"] <= s["llc_balance_hints"], s
    assert off["llc_balance_hints"] == 0 and off["llc_balance_pulls"] == 0, off
    # cpu.weight 300 against 100: 3:1 within 20 % (the late cgroup's 8 loops all started
    # in LLC 0); without the balance they stay there and share its 4 CPUs with 4 loops of
    # the other cgroup, which also keeps LLC 1 to itself: about 0.75:1
    shares = sorted(share(g, m) for m in ("mosaic", "mosaic2", "mosaic3"))
    assert 2.4 <= shares[1] <= 3.6, (shares, g.out)
    assert share(g, "nobalance") < 1.5, g.out
    print(f"late cgroup : spread cgroup CPU time {shares[1]:.2f} (runs {shares}) under mosaic, "
          f"{share(g, 'nobalance'):.2f} with --no-llc-balance, {share(g, 'eevdf'):.2f} "
          f"under EEVDF (TCG, 2 LLCs x 4 vCPUs)")
