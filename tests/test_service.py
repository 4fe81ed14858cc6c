"""VM test of the sched_ext ecosystem's conventions: scx_mosaic run as scx's own
scx.service runs a scheduler (/etc/default/scx: SCX_SCHEDULER, SCX_FLAGS), under
scx_loader's hardening (cgroup filesystem read-only, RestrictAddressFamilies=AF_UNIX as a
seccomp filter: tests/guest/restrict-af.c), prints nothing periodic unless asked, and its
group balancer still settles. Guest script: tests/guest/service.sh."""


import pytest

from vmtest import GUEST, checked_stats, run_guest

pytestmark = pytest.mark.vm


def test_runs_from_etc_default_scx_with_a_read_only_cgroupfs_and_unix_sockets_only():
    restrict_af = GUEST / "restrict-af.c"
    g = run_guest("2llc-smt", "service.sh", timeout=300, binaries=[restrict_af])
    s = checked_stats(g, "s")
    assert g["cgroupfs_mkdir_rc"] != "0", "the cgroup filesystem was not read-only"
    # the filter the scheduler ran under refuses AF_INET (EAFNOSUPPORT), allows AF_UNIX
    assert g["restricted_sockets"] == "inet=97 unix=0", g["restricted_sockets"]
    assert g["mosaic_rc"] == "0", g.out
    # the banner and the "attached" line; no live stats without --stats
    assert int(g["log_lines"]) <= 4, g.out
    groups = {x["path"]: x for x in s["group_balancer"]["groups"]}
    assert sorted(groups) == ["a", "b"], groups
    assert groups["a"]["settles"] >= 1 and groups["b"]["settles"] >= 1, (groups, g.out)
    print(f"groups running before the load settled after {g['settle_polls']} monitor polls "
          "(TCG, noisy)")
