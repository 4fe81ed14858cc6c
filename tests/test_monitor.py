"""VM test of --monitor: a second scx_mosaic process reads the running instance's stats
over the scx_stats socket (loading nothing), and says so in one line when none runs.
The same boot checks that --bpf-stats leaves the kernel's BPF stats off after a SIGKILL,
and that scx_mosaic loads with exactly the capabilities packaging/scx_mosaic.service keeps,
under no_new_privs, MemoryDenyWriteExecute and AF_UNIX-only sockets, with every feature
(tests/guest/harden-exec.c applies what systemd would: the VM has no systemd).
Guest script: tests/guest/monitor.sh."""

import re

import pytest

from vmtest import GUEST, REPO, assert_not_ejected, run_guest

pytestmark = pytest.mark.vm


def unit_caps():
    """The unit's CapabilityBoundingSet as harden-exec's --keep list: sys_admin,bpf,..."""
    unit = (REPO / "packaging/scx_mosaic.service").read_text()
    (line,) = [l for l in unit.splitlines() if l.startswith("CapabilityBoundingSet=")]
    caps = line.split("=", 1)[1].split()
    return ",".join(c.removeprefix("CAP_").lower() for c in caps)


# "mosaic   12.3s | direct   123/s | shard enq ..." (stats::Metrics::interval_lines)
LINE = re.compile(r"^MON mosaic\s+([\d.]+)s \| (.*)$", re.M)


@pytest.fixture(scope="module")
def guest():
    return run_guest("1llc", "monitor.sh", unit_caps(), timeout=420,
                     binaries=[GUEST / "harden-exec.c", GUEST / "restrict-af.c"])


def test_monitor_without_an_instance_fails_in_one_line(guest):
    assert guest["none_rc"] != "0"
    assert guest["none_lines"] == "1", guest.out
    assert "no scx_mosaic instance is running" in guest["none_msg"]
    assert guest["state_after_none"] == "disabled", "--monitor loaded a scheduler"


def test_monitor_prints_the_running_instances_counters_moving(guest):
    g = guest
    assert g.rc == 0, g.out
    assert g["ops_during"].startswith("mosaic"), "the monitor replaced the scheduler"
    lines = LINE.findall(g.out)
    assert len(lines) >= 2, g.out
    runtimes = [float(t) for t, _ in lines]
    assert runtimes == sorted(runtimes) and runtimes[0] < runtimes[-1], runtimes
    for _, rates in lines:
        per_s = [float(x) for x in re.findall(r"([\d.]+)/s", rates)]
        assert sum(per_s) > 0, f"no counter moved in an interval: {rates}"
    # the instance it watched kept running and left by request
    s = g.json["stats"]
    assert_not_ejected(g, s)
    assert g["mosaic_rc"] == "0", g.out
    assert s["shard_enqueues"] + s["direct_dispatches"] > 0


def test_stats_json_prints_one_snapshot_of_the_running_instance(guest):
    g = guest
    assert g["json_none_rc"] != "0" and g["json_none_lines"] == "1", g.out
    assert g["json_rc"] == "0" and g["json_lines"] == "1", g.out
    now, final = g.json["now"], g.json["stats"]
    assert now["scheduler"] == "mosaic"
    # a snapshot taken under the load: counters already moving, none past the final ones
    assert 0 < now["runtime_s"] < final["runtime_s"]
    assert 0 < now["cpu_enqueues"] + now["direct_dispatches"]
    for k in ("shard_enqueues", "direct_dispatches", "cpu_enqueues", "dispatch_empty", "migrations"):
        assert now[k] <= final[k], k


def test_the_socket_goes_with_the_instance(guest):
    assert guest["after_rc"] != "0"
    assert guest["after_lines"] == "1", guest.out
    assert guest["socket_left"] == "", "the stats socket outlived scx_mosaic"


def test_bpf_stats_end_with_the_process_even_on_sigkill(guest):
    g = guest
    # the sysctl is never written (BPF_ENABLE_STATS instead): 0 throughout
    assert [g["bpf_stats_before"], g["bpf_stats_during"], g["bpf_stats_after_kill"]] \
        == ["0", "0", "0"], g.out
    assert g["state_after_kill"] == "disabled"
    # the kernel counted BPF run time while --bpf-stats ran (the hardened run below),
    # and stopped when the SIGKILLed process's descriptor went: the next load counts none
    assert g.json["hardened"]["bpf"]["calls"] > 0
    assert g.json["after_kill"]["bpf"]["calls"] == 0, "BPF stats stayed on after SIGKILL"


def test_it_runs_with_the_units_capabilities_and_restrictions(guest):
    g = guest
    # harden-exec applied them: the bounding set is the unit's, W+X mappings are refused
    assert g["harden_check"].endswith("mdwe=13"), g["harden_check"]
    assert g["hardened_rc"] == "0", g.out
    assert int(g["hardened_monitor_lines"]) >= 1, g.out
    s = g.json["hardened"]
    assert_not_ejected(g, s)
    assert s["bpf"]["calls"] > 0, "no BPF run-time stats under the restrictions"
    # CAP_SYS_ADMIN alone does all (it implies CAP_BPF's and CAP_PERFMON's checks), and
    # --bpf-stats needs it (BPF_ENABLE_STATS); which of the kept capabilities loading needs
    # on its own is printed (a kept one that turns out unneeded is no failure)
    assert g["caps_sys_admin_alone"] == "loaded", g.out
    assert g["caps_bpf_stats_without_sys_admin"].startswith("failed"), g.out
    for cap in unit_caps().split(","):
        print(f"without {cap}: {g['caps_without_' + cap]}")
