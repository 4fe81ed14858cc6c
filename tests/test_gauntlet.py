"""The reliability gauntlet's fast subset (`tests/gauntlet/run.py --quick`): the default
kernel on two topologies, four or five stressor cells each, and the cpumax cell on each older
kernel; one boot per (kernel, topology). The whole matrix is `make gauntlet`;
docs/reliability.md describes the cells and their checks."""

import pytest

from gauntlet import run as gauntlet

pytestmark = pytest.mark.vm

_rows = {}


def row(kernel, topo):
    """The judged cells of @kernel's @topo boot (booted once, on first use)."""
    if (kernel, topo) not in _rows:
        [stressors] = [s for k, t, s in gauntlet.QUICK if (k, t) == (kernel, topo)]
        log_dir = gauntlet.REPO / "target/gauntlet/quick"
        log_dir.mkdir(parents=True, exist_ok=True)
        [r] = gauntlet.run_matrix([(kernel, topo, stressors)], 10, log_dir,
                                  env=gauntlet.QUICK_ENV)
        _rows[kernel, topo] = {c["cell"]: c for c in r["cells"]}
    return _rows[kernel, topo]


@pytest.mark.parametrize("kernel,topo,cell",
                         [(k, t, c) for k, t, cells in gauntlet.QUICK for c in cells],
                         ids=lambda x: x.removesuffix("+deb13-cloud-amd64"))
def test_gauntlet_cell(kernel, topo, cell):
    c = row(kernel, topo)[cell]
    assert c["status"] == "ok", f"{topo} {cell}: " + "; ".join(c["problems"])
    # the longest runnable wait is bounded per cell (judge() fails the cell above it)
    if cell != "sigkill":
        assert isinstance(c["wait_max_us"], int), c
        assert isinstance(c["wait_bound_us"], int), c
    if cell == "cpumax":
        assert isinstance(c["parked_max_us"], int) and c["parked_max_us"] > 0, c
        print(f"{kernel} {topo} cpumax: short tasks with a thread that never ran: "
              f"{c.get('short_starved')} (reported, not failed: see cpumax_short_problems)")
    print(f"{kernel} {topo} {cell}: wait_max_us {c['wait_max_us']} "
          f"(bound {c.get('wait_bound_us')}), parked_max_us {c.get('parked_max_us', '-')} (bound {c.get('park_bound_us', '-')}), "
          f"idle_waiting_max_us {c['idle_wait_us']} (TCG, noisy)")
