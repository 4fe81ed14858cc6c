"""The reliability gauntlet's fast subset (`tests/gauntlet/run.py --quick`): the default
kernel, two topologies, four or five stressor cells each, one boot per topology. The whole matrix
is `make gauntlet`; docs/reliability.md describes the cells and their checks."""

import pytest

from gauntlet import run as gauntlet

pytestmark = pytest.mark.vm

_rows = {}


def row(topo):
    """The judged cells of @topo's boot (booted once, on first use)."""
    if topo not in _rows:
        stressors = dict(gauntlet.QUICK)[topo]
        log_dir = gauntlet.REPO / "target/gauntlet/quick"
        log_dir.mkdir(parents=True, exist_ok=True)
        [r] = gauntlet.run_matrix([(gauntlet.DEFAULT_KERNEL, topo, stressors)], 10, log_dir,
                                  env=gauntlet.QUICK_ENV)
        _rows[topo] = {c["cell"]: c for c in r["cells"]}
    return _rows[topo]


@pytest.mark.parametrize("topo,cell", [(t, c) for t, cells in gauntlet.QUICK for c in cells],
                         ids=lambda x: x)
def test_gauntlet_cell(topo, cell):
    c = row(topo)[cell]
    assert c["status"] == "ok", f"{topo} {cell}: " + "; ".join(c["problems"])
    # the longest runnable wait is bounded per cell (judge() fails the cell above it)
    if cell != "sigkill":
        assert isinstance(c["wait_max_us"], int), c
        assert isinstance(c["wait_bound_us"], int), c
    if cell == "cpumax":
        assert isinstance(c["parked_max_us"], int) and c["parked_max_us"] > 0, c
    print(f"{topo} {cell}: wait_max_us {c['wait_max_us']} (bound {c.get('wait_bound_us')}), "
          f"parked_max_us {c.get('parked_max_us', '-')} (bound {c.get('park_bound_us', '-')}), "
          f"idle_waiting_max_us {c['idle_wait_us']} (TCG, noisy)")
