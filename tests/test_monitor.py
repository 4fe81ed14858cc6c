"""VM test of --monitor: a second scx_mosaic process reads the running instance's stats
over the scx_stats socket (loading nothing), and says so in one line when none runs.
Guest script: tests/guest/monitor.sh."""

import re

import pytest

from vmtest import assert_not_ejected, run_guest


# "mosaic   12.3s | direct   123/s | shard enq ..." (stats::Metrics::interval_lines)
LINE = re.compile(r"^MON mosaic\s+([\d.]+)s \| (.*)$", re.M)


@pytest.fixture(scope="module")
def guest():
    return run_guest("1llc", "monitor.sh", timeout=300)


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


def test_the_socket_goes_with_the_instance(guest):
    assert guest["after_rc"] != "0"
    assert guest["after_lines"] == "1", guest.out
    assert guest["socket_left"] == "", "the stats socket outlived scx_mosaic"
