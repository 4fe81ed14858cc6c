"""VM tests of stealing across LLCs and NUMA nodes behind the overload gate
(seed 003), on `2node`: 8 CPUs, 2 NUMA nodes x 2 LLCs of 2 CPUs."""

from vmtest import assert_counters_consistent, assert_not_ejected, boot


def test_gate_skips_most_steal_scans_under_partial_load():
    # three perf pipe pairs: at most one runnable task per CPU (the seed's case)
    pairs = "for i in 1 2 3; do perf bench sched pipe -T -l 5000 & done; wait"
    g = boot("2node", rf"""
. /mosaic/guest/lib.sh
stats_under gate "" "{pairs}" || exit 1
stats_under nooverloadgate --no-overload-gate "{pairs}" || exit 1
""", timeout=300)
    assert g.rc == 0, g.out
    gate, always = g.json["gate"], g.json["nooverloadgate"]
    for s in (gate, always):
        assert_not_ejected(g, s)
        assert_counters_consistent(s)
    assert always["steal_scans_skipped"] == 0 and always["steal_scans"] > 100, always
    skipped = gate["steal_scans_skipped"] / (gate["steal_scans_skipped"] + gate["steal_scans"])
    # the seed: the flag removed 75 % of the balance attempts
    assert skipped >= 0.75, gate
    assert gate["steal_scans"] <= 0.25 * always["steal_scans"], (gate, always)
    print(f"steal scans: {gate['steal_scans']} with the gate ({skipped:.0%} skipped) vs "
          f"{always['steal_scans']} without")


def test_idle_llcs_steal_until_every_cpu_runs():
    # 8 busy loops woken in LLC 0 (CPUs 0-1), then allowed everywhere. Bound:
    # after 1 s (200 slices of 5 ms, each ending in a dispatch that can steal,
    # plus the gate's 10 ms scan that kicks idle CPUs) no CPU may be idle more
    # than 10 % of the next 2 s.
    g = boot("2node", r"""
. /mosaic/guest/lib.sh
start_mosaic --stats 0 --stats-file /tmp/s.json || exit 1
pids=""
for i in 1 2 3 4 5 6 7 8; do
    taskset -c 0-1 sh -c 'while :; do :; done' &
    pids="$pids $!"
done
sleep 0.5
for p in $pids; do taskset -p -c 0-7 $p >/dev/null; done
sleep 1
grep '^cpu[0-9]' /proc/stat >/tmp/stat0
sleep 2
grep '^cpu[0-9]' /proc/stat >/tmp/stat1
report idle "$(paste /tmp/stat0 /tmp/stat1 | awk '{ printf "%s:%d ", $1, $16 - $5 }')"
kill $pids
stop_mosaic
report_json stats /tmp/s.json
""", timeout=300)
    assert g.rc == 0, g.out
    s = g.json["stats"]
    assert_not_ejected(g, s)
    idle = {c.split(":")[0]: int(c.split(":")[1]) for c in g["idle"].split()}
    assert len(idle) == 8, g["idle"]
    # /proc/stat counts USER_HZ (100/s) ticks: 2 s is 200 ticks, 10 % is 20
    assert all(t <= 20 for t in idle.values()), f"idle ticks over 2 s: {idle}"
    assert s["steal_hits"] > 0 and s["steal_pulls_node"] + s["steal_pulls_remote"] > 0, s
    assert_counters_consistent(s)
