#!/usr/bin/env python3
"""The reliability gauntlet: scx_mosaic under stressors x VM topologies x kernels.

One VM boot per (kernel, topology) runs that row's stressor cells in sequence inside the
guest (tests/guest/gauntlet/run.sh); this script judges every cell from what the guest
reports, prints a table and exits 1 if any cell failed (2 on a usage error).

  tests/gauntlet/run.py                      the whole matrix (`make gauntlet`)
  tests/gauntlet/run.py --quick              the subset that `make test` runs
  tests/gauntlet/run.py --kernels 7.1.13+deb13 --topos 2llc-smt --stressors sigkill,hotplug

Checks of every cell (docs/reliability.md explains them and the bounds):
  loaded     scx_mosaic loaded (else its error is shown)
  ejected    the kernel's exit kind from --stats-file is a request (< 1024), scx_mosaic exited
             0 on SIGINT and sched_ext is disabled after; for sigkill: sched_ext went back to
             disabled within 10 s and the kernel logged "unregistered from user space"
  dmesg      no BUG / WARNING / Oops / Call Trace / sched_ext error or stall / RCU stall line
  progress   every thread of every probe (tests/gauntlet/spin.c) counted forward in the window,
             every thread was created, and stress-ng exited 0 with bogo ops > 0 per stressor
  idle-wait  idle_waiting_max_us (the scheduler's own scan: a CPU idle while a task allowed
             on it waited) <= idle_wait_bound_us(CPUs); "n/a" when the counters are absent
  wait       wait_max_us, the longest runnable wait the scheduler measured in the cell
             (wait.bpf.c) <= wait_bound_us(CPUs, most runnable tasks seen in the cell, most
             tasks waiting on one CPU's own queue: cpu_queue_max); a task parked by cpu.max
             waits from when it goes back to a queue
  manycg     over 5,000 cgroups below --gb-parent and cpu.weight on 20,000: skipped cgroups
             counted and said, the busy one tracked, cpu.weight 300:100 within MANYCG_RATIO
  hotplug    every reload without a CPU of --gb-partitions says so; at the end the full lists
  park       cpumax: bw_parked_max_us, the longest a task stayed parked by its cgroup's
             cpu.max, <= park_bound_us(CPUs)
"""

import argparse
import base64
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from vmtest import (  # noqa: E402
    TCG_KICK_PERIOD_US,
    VM_BOOT_FAILED,
    VM_GUEST_OOPS,
    VM_TIMEOUT,
    Guest,
    guest_binary,
    idle_wait_bound_us,
)

DEFAULT_KERNEL = "7.3.4+deb13-cloud-amd64"
OLD_KERNELS = ["6.19.14+deb13-cloud-amd64", "7.0.13+deb13-cloud-amd64"]
TOPOS = ["1llc", "2llc-smt", "2node", "4llc", "1cpu", "16cpu"]
STRESSORS = ["affinity", "fork", "threads", "nice", "cgroup", "cpumax", "manylimits", "hotplug",
             "sigstop", "sigkill", "pinned", "manycg"]
# The older kernels run a representative subset: the two ways out of a load (hotplug restart,
# SIGKILL), the cgroup path and the stress-ng churn, on a 2-LLC SMT and a 4-LLC machine.
OLD_TOPOS = ["2llc-smt", "4llc"]
OLD_STRESSORS = ["affinity", "cgroup", "cpumax", "hotplug", "sigkill"]
# The fast subset inside `make test`: on the default kernel two topologies, four or five
# stressors each; on each older kernel the cpumax cell, whose programs are the largest the
# verifier checks (an older verifier refused one that the default kernel's accepted).
QUICK = [(DEFAULT_KERNEL, "1llc", ["affinity", "threads", "cpumax", "sigkill", "manylimits"]),
         (DEFAULT_KERNEL, "2llc-smt", ["cgroup", "hotplug", "sigstop", "pinned"])] + \
        [(k, "1llc", ["cpumax"]) for k in OLD_KERNELS]
# The fast subset's guest environment: manylimits at 200 cgroups.
QUICK_ENV = {"GAUNTLET_MANYLIMITS": "200"}

# The manylimits cell's cgroups unless --manylimits says (tests/guest/gauntlet/manylimits.sh).
MANYLIMITS_DEFAULT = 1000

# The wasted-core bound (idle_wait_bound_us) and TCG_KICK_PERIOD_US come from tests/vmtest.py.

# The runnable-wait bound. vtime.bpf.c queues no task further ahead of its LLC's clock than
# the clock covers in WAIT_TARGET_US (tunables::wait_target_ns for the kernel's default 30 s
# watchdog, which the gauntlet keeps); behind that lead a task waits for at most one turn of
# each task runnable with it on its CPUs: the runnable tasks spread over all CPUs, or, for a
# task pinned to one CPU, the tasks waiting on that CPU's own queue (cpu_queue_max, the
# scheduler's count: the workload decides how many pin themselves where, and stress-ng's
# affinity stressor piles ~45 on one vCPU of 16cpu). A turn is a slice (20 ms by default) on
# hardware; under single-threaded TCG a vCPU that took the host thread keeps it up to
# TCG_KICK_PERIOD, so a turn is counted as that. On top, the kicked vCPU's own wait for the
# host thread: (CPUs - 1) kick periods.
WAIT_TARGET_US = 500_000


def intf_constant(name):
    """The value of enum constant @name in the scheduler's BPF interface header."""
    m = re.search(rf"\b{name}\s*=\s*(\d+)", (REPO / "scheduler/src/bpf/intf.h").read_text())
    if not m:
        sys.exit(f"run.py: {name} not found in scheduler/src/bpf/intf.h")
    return int(m.group(1))


# More tasks than this waiting on one CPU's own queue take short turns (shard.bpf.c).
CPU_QUEUE_FULL_SLICES = intf_constant("CPU_QUEUE_FULL_SLICES")


def wait_bound_us(ncpus, runnable, pinned_pile=0):
    """The longest runnable wait a cell may see with at most @runnable runnable tasks and at
    most @pinned_pile waiting on one CPU's own queue."""
    turns = max(-(-max(runnable, ncpus) // ncpus), pinned_pile)
    return WAIT_TARGET_US + (turns + ncpus - 1) * TCG_KICK_PERIOD_US
# The park bound. A throttled cgroup's parked tasks go back to the queues at the refill that
# pays its debt (bandwidth.bpf.c): what a run went past its budget is paid in full from the
# next periods before the cgroup runs again, as the kernel does, and a cgroup still in debt
# after idle_wait_ns (a quarter of the watchdog's timeout: 7.5 s at the default 30 s) lets
# its parked tasks run a moment at the refill that reaches it, so that no park nears the
# watchdog. The cpumax cell's periods are at most
# CPUMAX_PERIOD_MAX_US (tests/guest/gauntlet/cpumax.sh). On top, under TCG, the refill
# timer's vCPU and then the vCPU that dispatches (and moves them back) may each wait for the
# host thread: CPUs kick periods in all.
CPUMAX_PERIOD_MAX_US = 100_000
IDLE_WAIT_US = 7_500_000


def park_bound_us(ncpus):
    """The longest a task may stay parked by cpu.max in the cpumax cell."""
    return CPUMAX_PERIOD_MAX_US + IDLE_WAIT_US + ncpus * TCG_KICK_PERIOD_US


# The manycg cell: the two busy cgroups' CPU time must split as their cpu.weight (300:100)
# within this band (TCG is noisy); it makes 20,000 cgroups, which takes this much longer than a
# cell's window, in a guest with this much memory.
MANYCG_RATIO = (2.25, 4.0)
MANYCG_EXTRA_S = 300
MANYCG_MEM_MB = 3072

DISABLE_BOUND_MS = 10_000
BAD_RE = re.compile(r"BUG|WARNING|Oops|Call Trace|sched_ext:.*(error|stall)|rcu.*stall"
                    r"|blocked for more than")


def spin_binary():
    """tests/gauntlet/spin.c built static (cached until it changes); returns its path."""
    return guest_binary(REPO / "tests/gauntlet/spin.c")


def fetch_kernel(version):
    """vm/fetch-kernel (idempotent); returns the kernel's cache directory."""
    p = subprocess.run([str(REPO / "vm/fetch-kernel"), version], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gauntlet: cannot fetch kernel {version}:\n{p.stderr}")
    return Path(p.stdout.strip().splitlines()[-1])


def boot_row(kernel, topo, stressors, secs, log_dir, mosaic_flags="", env=None):
    """Boots one VM and runs @stressors there, with the guest environment @env added;
    returns (Guest or None, vm/run status, seconds, vm/run's stderr)."""
    kdir = fetch_kernel(kernel)
    cmd = f"sh /mosaic/guest/gauntlet/run.sh {secs} {' '.join(stressors)}"
    env = dict(env or {})
    if mosaic_flags:
        env["GAUNTLET_MOSAIC_FLAGS"] = mosaic_flags
    for k, val in sorted(env.items()):
        cmd = f"{k}={shlex.quote(val)} {cmd}"
    # 10k threads and hotplug reloads are slow under TCG; the 16-CPU guest is slower still;
    # manylimits makes and removes a thousand cgroups and hogs, twice
    per_cell = secs * 4 + 60 + (60 if topo == "16cpu" else 0)
    # (the cell's cgroups are made twice, churned once and removed twice, and its windows last
    # 60 periods: at 1,000 cgroups the churn alone took 349-430 s and the whole cell 727 s;
    # 300 + 1 s per cgroup ran out while it removed its cgroups one by one)
    ml = int(env.get("GAUNTLET_MANYLIMITS", MANYLIMITS_DEFAULT))
    timeout = 180 + per_cell * len(stressors) + (300 + 2 * ml if "manylimits" in stressors else 0)
    mem = []
    if "manycg" in stressors:
        # making and removing 20,000 cgroups (MANYCG_EXTRA_S), and their memory
        timeout += MANYCG_EXTRA_S
        mem = ["--mem", str(MANYCG_MEM_MB)]
    args = [str(REPO / "vm/run"), "--topo", topo, "--kernel", kernel, "--timeout", str(timeout),
            *mem,
            "--add", f"{spin_binary()}:/usr/bin/spin",
            "--keep-log", str(log_dir / f"{kernel}-{topo}.console.log")]
    if (kdir / "image-only").exists():
        # no qemu_fw_cfg module: the command travels on the kernel command line
        b64 = base64.b64encode(cmd.encode()).decode()
        args += ["--append", f"rdinit=/mosaic/guest/gauntlet/init MOSAIC_CMD={b64}"]
    t0 = time.monotonic()
    p = subprocess.run(args + ["--", cmd], capture_output=True, text=True, timeout=timeout + 300)
    took = time.monotonic() - t0
    (log_dir / f"{kernel}-{topo}.out").write_text(p.stdout + "\n--- stderr ---\n" + p.stderr)
    if p.returncode in (VM_TIMEOUT, VM_BOOT_FAILED, VM_GUEST_OOPS) and "@@CELL@@" not in p.stdout:
        return None, p.returncode, took, p.stderr
    return Guest(p.returncode, p.stdout), p.returncode, took, p.stderr


def cpumax_short_problems(v):
    """What is wrong with the short tasks of the cpumax cell: each must run to its end and exit
    inside its limited cgroup (one result line per cgroup made). A thread of one that never ran
    (short_starved) is reported, not failed: a 1-second task shares a 5-30 ms quota with a
    worker's two hogs, and a run charged tens of ms past the quota under TCG throttles the
    cgroup for longer than the task lives, under the kernel's own scheduler too (2 of 11 short
    tasks in one of three boots of this cell on 7.0, 2llc-smt). The park bound is the check that
    no task is held back by the limit for too long."""
    made, runs = v.get("cgroups_made"), v.get("short_runs")
    if made is None or runs != made:
        return [f"{runs} of {made} short tasks ran to their end"]
    return []


def spin_problems(line):
    """What is wrong with a spin probe's result line (empty if it shows full progress)."""
    if not line:
        return ["probe reported nothing"]
    f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    out = []
    if f.get("threads") != f.get("wanted"):
        out.append(f"created {f.get('threads')}/{f.get('wanted')} threads")
    if f.get("zero") != "0":
        out.append(f"{f.get('zero')} of {f.get('threads')} threads starved")
    return out


def cpumax_problems(v, s):
    """What is wrong with the cpumax cell: limits must have bitten, every cgroup made must be
    gone, and with every limit lifted at the end every parked task must have come back."""
    out = []
    if s.get("bw_throttles", 0) == 0:
        out.append("no cgroup was ever throttled: the churn did not exercise cpu.max")
    parked = s.get("bw_parked", 0)
    back = s.get("bw_unparked", 0) + s.get("bw_park_left", 0) + s.get("bw_park_killed", 0)
    if parked != back:
        out.append(f"tasks left on park queues: {parked} parked, {back} came back "
                   f"({s.get('bw_park_left')} of them by a cgroup move or affinity change)")
    if s.get("bw_untracked", 0):
        out.append(f"{s['bw_untracked']} limits not enforced (no slot or park queue)")
    made, removed = int(v.get("cgroups_made", 0)), int(v.get("cgroups_removed", -1))
    if made < 3 or made != removed:
        out.append(f"cgroups made {made}, removed {removed}")
    return out


# How manylimits_problems() names a root-cgroup probe that waited too long.
PROBE_PROBLEM = "the root-cgroup probe waited"


def usage_fields(line):
    """The fields of a manylimits usage line ("n=.. outside=.. min=.. median=.. max=..")."""
    return {k: float(x) for k, x in (kv.split("=", 1) for kv in line.split() if "=" in kv)}


def probe_problems(v):
    """What is wrong with the root-cgroup probe's waits of the manylimits cell: its mean wait
    per run over the two windows under scx_mosaic (mosaic, churn) must be no longer than over
    the two under the kernel's scheduler, one before and one after them (eevdf, eevdf_after)."""
    try:
        mosaic = [int(v[f"{w}_probe_wait_us"]) for w in ("mosaic", "churn")]
        eevdf = [int(v[f"{w}_probe_wait_us"]) for w in ("eevdf", "eevdf_after")]
    except (KeyError, ValueError):
        return [f"probe waits missing: {[v.get(f'{w}_probe_wait_us') for w in PROBE_WINDOWS]}"]
    if sum(mosaic) <= sum(eevdf):
        return []
    return [f"{PROBE_PROBLEM} {sum(mosaic) / 2:.0f} us per run under scx_mosaic "
            f"(mosaic {mosaic[0]}, churn {mosaic[1]}), the kernel's scheduler "
            f"{sum(eevdf) / 2:.0f} us (before {eevdf[0]}, after {eevdf[1]})"]


# The manylimits windows with a probe wait, in the order the cell runs them.
PROBE_WINDOWS = ("eevdf", "mosaic", "churn", "eevdf_after")


def manylimits_problems(v, s):
    """What is wrong with the manylimits cell: under scx_mosaic every limited cgroup's CPU
    time must be within +-25 % of its quota, before and after the churn - or no more of them
    outside it than under the kernel's own scheduler in the same boot; every limit must be
    enforced (none missed); the root-cgroup probe must wait no longer per run than under the
    kernel's scheduler (probe_problems()); killed parked tasks must have left their park at
    once; every parked task must have come back; every cgroup made is gone."""
    out = []
    n = int(v.get("cgroups", 0))
    try:
        eevdf = usage_fields(v["eevdf_usage"])
        windows = {w: usage_fields(v[f"{w}_usage"]) for w in ("mosaic", "churn")}
    except (KeyError, ValueError):
        return [f"usage windows missing: {v.get('eevdf_usage')}, {v.get('mosaic_usage')}, "
                f"{v.get('churn_usage')}"]
    for w, u in windows.items():
        if u["n"] != n:
            out.append(f"{w}: {u['n']:.0f} of {n} cgroups measured")
        if u["outside"] > eevdf["outside"]:
            out.append(f"{w}: {u['outside']:.0f} of {n} cgroups outside +-25 % of their quota "
                       f"(ratios {u['min']}..{u['max']}, median {u['median']}; the kernel's "
                       f"scheduler: {eevdf['outside']:.0f}, {eevdf['min']}..{eevdf['max']})")
    out += probe_problems(v)
    if s.get("bw_untracked", 0) or s.get("bw_limits_missed", 0):
        out.append(f"limits not enforced: {s.get('bw_untracked')} missed, "
                   f"{s.get('bw_limits_missed')} still at exit")
    if s.get("bw_throttles", 0) == 0:
        out.append("no cgroup was ever throttled")
    # the churn kills a tenth of the hogs, nearly all of them parked at that moment
    if s.get("bw_park_killed", 0) == 0:
        out.append("no killed parked task was let out before its refill (bw_park_killed 0)")
    parked = s.get("bw_parked", 0)
    back = s.get("bw_unparked", 0) + s.get("bw_park_left", 0) + s.get("bw_park_killed", 0)
    if parked != back:
        out.append(f"tasks left on park queues: {parked} parked, {back} came back")
    if v.get("cgroups_left") != "0":
        out.append(f"{v.get('cgroups_left')} cgroups left")
    return out


def manycg_problems(v, s):
    """What is wrong with the manycg cell: the tree must have been made (over 5,000 cgroups
    below the balancer's parent, cpu.weight on 20,000), the balancer must have said and counted
    what it skipped and still tracked the busy group, and cpu.weight must have held."""
    out = []
    if int(v.get("cgroups_gb", 0)) <= 5000 or int(v.get("weights_set", 0)) < 20000:
        out.append(f"tree not made: {v.get('cgroups_gb')} cgroups below the parent, "
                   f"cpu.weight set on {v.get('weights_set')}")
    gb = s.get("group_balancer", {})
    if not gb.get("skipped"):
        out.append(f"the balancer reported no skipped cgroups: skipped={gb.get('skipped')}")
    if v.get("skip_warned", "0") == "0":
        out.append("no warning line about the skipped cgroups")
    busy = [x for x in gb.get("groups", []) if x.get("path") == "d9/g549"]
    if not busy or not busy[0].get("runtime_ns"):
        out.append("the busy cgroup d9/g549 was not tracked (or no runtime accounted)")
    ratio = float(v.get("weight_ratio", "0"))
    lo, hi = MANYCG_RATIO
    if not lo <= ratio <= hi:
        out.append(f"cpu.weight 300:100 gave CPU time {ratio}:1 ({v.get('usage_w300_us')} / "
                   f"{v.get('usage_w100_us')} us), outside {lo}-{hi}")
    return out


def hotplug_partition_problems(v, s):
    """What is wrong with the hotplug cell's group balancer partitions: every reload without a
    CPU of --gb-partitions must have said so, and after the last one (every CPU back) the
    partitions must be the full lists again."""
    out = []
    want = v.get("partitions")
    if want is None:
        return out
    if int(v.get("cut", 0)) < int(v.get("cycles", 0)):
        out.append(f"{v.get('cut')} reloads said they left a CPU out of --gb-partitions, "
                   f"{v.get('cycles')} CPUs went offline")
    parts = [[int(c) for c in p] for p in s.get("group_balancer", {}).get("partitions", [])]

    def cpus(text):
        lo, _, hi = text.partition("-")
        return list(range(int(lo), int(hi or lo) + 1))
    full = [cpus(p) for p in want.split(";")]
    if parts != full:
        out.append(f"partitions at the end {parts}, expected the full lists {full}")
    return out


def judge(g, cell):
    """Judges one cell from the guest's report; returns a dict with status and details."""
    v = {k[len(cell) + 1:]: val for k, val in g.values.items() if k.startswith(cell + "_")}
    res = {"cell": cell, "status": "ok", "problems": [], "idle_wait_us": "n/a",
           "wait_max_us": "n/a", "secs": v.get("cell_s", "?"), "controls": v.get("controls")}
    bad = res["problems"]
    ncpus = int(re.search(r"cpus=(\d+)", g.values.get("topo", "cpus=1")).group(1))
    if "cell_rc" not in v:
        res["status"] = "FAIL"
        bad.append("cell did not finish (VM died or timed out during it)")
        return res
    if "skip" in v:
        res["status"] = "skip"
        bad.append(v["skip"])
        return res
    if "error" in v:
        bad.append(v["error"])
    if "load_error" in v:
        bad.append(f"scx_mosaic failed to load: {v['load_error']}")
    if v.get("dmesg_bad", "0") != "0":
        lines = [ln for ln in g.out.splitlines() if ln.startswith(f"[{cell} dmesg]")]
        bad.append(f"{v['dmesg_bad']} bad kernel log lines: {lines[:3]}")
    sched = v.get("sched_log", "")
    if cell == "sigkill":
        if v.get("disabled_ms") == "never" or int(v.get("disabled_ms", "0")) > DISABLE_BOUND_MS:
            bad.append(f"sched_ext not disabled within {DISABLE_BOUND_MS} ms of SIGKILL "
                       f"({v.get('disabled_ms')})")
        if "unregistered from user space" not in sched:
            bad.append(f"kernel did not log a clean unregister: {sched}")
    elif "load_error" not in v:
        s = g.json.get(cell)
        if s is None:
            bad.append("no --stats-file JSON")
        else:
            if s["exit"]["kind"] >= 1024:
                bad.append(f"ejected: {s['exit']}")
            res["wait_max_us"] = s.get("wait_max_us", "n/a")
            if "wait_max_us" in s and "runnable_max" not in v:
                bad.append("the guest reported no runnable count (runnable_max)")
            elif "wait_max_us" in s:
                pile = s.get("cpu_queue_max", 0)
                bound = wait_bound_us(ncpus, int(v["runnable_max"]), pile)
                res["wait_bound_us"], res["cpu_queue_max"] = bound, pile
                res["wait_max_task"] = s.get("wait_max_task", "")
                if s["wait_max_us"] > bound:
                    bad.append(f"a runnable task ({s.get('wait_max_task') or 'unnamed'}) waited "
                               f"{s['wait_max_us']} us (bound {bound} us for "
                               f"{v['runnable_max']} runnable on {ncpus} CPUs, at most {pile} on "
                               f"one CPU's own queue)")
            if "idle_waiting_max_us" in s:
                res["idle_wait_us"] = s["idle_waiting_max_us"]
                res["idle_wait_scans"] = s.get("idle_waiting_scans")
                if s["idle_waiting_max_us"] > idle_wait_bound_us(ncpus):
                    bad.append(f"a CPU idled {s['idle_waiting_max_us']} us while a task allowed "
                               f"on it waited (bound {idle_wait_bound_us(ncpus)}; "
                               f"{s.get('idle_waiting_scans')} scans saw it)")
            if cell == "cpumax":
                bad += cpumax_problems(v, s)
                parked, bound = s.get("bw_parked_max_us"), park_bound_us(ncpus)
                res["parked_max_us"], res["park_bound_us"] = parked, bound
                if parked is None:
                    bad.append("no bw_parked_max_us in the stats")
                elif parked > bound:
                    bad.append(f"a task stayed parked by cpu.max {parked} us (bound {bound} us "
                               f"on {ncpus} CPUs)")
            if cell == "manylimits":
                bad += manylimits_problems(v, s)
                res["manylimits"] = {k: v.get(k) for k in (
                    "cgroups", "quota", "eevdf_setup_ms", "churn_ms")}
                for w in PROBE_WINDOWS:
                    res["manylimits"].update({f"{w}_{k}": v.get(f"{w}_{k}") for k in (
                        "usage", "probe_wait_us", "read_ms")})
            if cell == "hotplug" and s.get("restarts", 0) < 2:
                bad.append(f"expected >= 2 restarts, got {s.get('restarts')}")
        if v.get("mosaic_rc") != "0":
            bad.append(f"scx_mosaic exited {v.get('mosaic_rc')}")
        if v.get("state_after") != "disabled":
            bad.append(f"sched_ext state after stop: {v.get('state_after')}")
    for key, line in v.items():
        if key.startswith("spin_"):
            bad += [f"{key[5:]}: {p}" for p in spin_problems(line)]
    if "stressng_rc" in v:
        if v["stressng_rc"] != "0":
            bad.append(f"stress-ng exited {v['stressng_rc']}")
        ops = dict(kv.split("=") for kv in v.get("bogo", "").split(",") if "=" in kv)
        if not ops or any(int(n) == 0 for n in ops.values()):
            bad.append(f"a stressor made no progress: {v.get('bogo')}")
    # the shard design shortens a crowded CPU queue's turns; per-CPU queues (the default
    # up to 72 CPUs) have no other kind of queue, and a crowd there is one CPU's order
    s = g.json.get(cell) or {}
    if cell == "pinned" and "load_error" not in v and s.get("no_shared_runq") is False:
        if s.get("short_slices", 0) == 0 or s.get("cpu_queue_max", 0) <= CPU_QUEUE_FULL_SLICES:
            bad.append(f"the crowd on CPU {v.get('pinned_to')} was not seen: cpu_queue_max "
                       f"{s.get('cpu_queue_max')}, short_slices {s.get('short_slices')}")
    if cell == "sigstop":
        for k in ("state_stopped", "state_stopped_end"):
            if v.get(k) != "enabled":
                bad.append(f"{k}: {v.get(k)} (scheduling stopped with userspace)")
    if cell == "manycg" and "load_error" not in v:
        bad += manycg_problems(v, g.json.get(cell) or {})
    if cell == "hotplug" and "load_error" not in v:
        bad += hotplug_partition_problems(v, g.json.get(cell) or {})
    if cell == "hotplug" and v.get("reattached") != "1":
        bad.append(f"scx_mosaic did not reattach after a hotplug event ({v.get('cycles')} cycles)")
    if cell == "cgroup" and v.get("short_starved", "0") != "0":
        bad.append(f"{v['short_starved']} short tasks in new cgroups starved")
    if cell == "cpumax" and "load_error" not in v:
        bad += cpumax_short_problems(v)
        res["short_starved"] = v.get("short_starved")
    if bad:
        res["status"] = "FAIL"
    return res


def run_matrix(rows, secs, log_dir, mosaic_flags="", env=None):
    """Runs rows [(kernel, topo, [stressors])] (guest environment @env added); returns a list
    of row results."""
    results = []
    for kernel, topo, stressors in rows:
        print(f"gauntlet: {kernel} {topo}: {' '.join(stressors)} ...", file=sys.stderr, flush=True)
        g, rc, took, err = boot_row(kernel, topo, stressors, secs, log_dir, mosaic_flags, env)
        row = {"kernel": kernel, "topo": topo, "vm_rc": rc, "secs": round(took), "cells": []}
        if g is None:
            why = {VM_TIMEOUT: "VM timeout", VM_BOOT_FAILED: "boot failure",
                   VM_GUEST_OOPS: "guest Oops/panic"}.get(rc, f"vm/run {rc}")
            row["cells"] = [{"cell": c, "status": "FAIL", "problems": [f"{why}: {err.strip()}"],
                             "idle_wait_us": "n/a", "secs": "?"} for c in stressors]
        else:
            row["cells"] = [judge(g, c) for c in stressors]
            if rc == VM_GUEST_OOPS:
                for c in row["cells"]:
                    c["status"] = "FAIL"
                    c["problems"].append(f"guest kernel Oops during the boot: {err.strip()}")
        results.append(row)
        print(f"gauntlet: {kernel} {topo}: {took:.0f} s: "
              + " ".join(f"{c['cell']}={c['status']}" for c in row["cells"]),
              file=sys.stderr, flush=True)
    return results


def table(results):
    """The results as a Markdown table: one row per boot, one column per stressor."""
    cols = [s for s in STRESSORS if any(c["cell"] == s for r in results for c in r["cells"])]
    lines = ["| kernel | topology | boot s | " + " | ".join(cols) + " |",
             "|---|---|---|" + "---|" * len(cols)]
    for r in results:
        by = {c["cell"]: c for c in r["cells"]}
        cells = []
        for s in cols:
            c = by.get(s)
            if c is None:
                cells.append("")
            elif c["status"] == "ok":
                iw, w = c["idle_wait_us"], c.get("wait_max_us", "n/a")
                ms = [f"{x / 1000:.0f} ms" if x != "n/a" else "n/a" for x in (iw, w)]
                park = c.get("parked_max_us")
                ms += [f"park {park / 1000:.0f} ms"] if park is not None else []
                starved = c.get("short_starved")
                ms += [f"{starved} short starved"] if starved not in (None, "0") else []
                cells.append("ok" if iw == w == "n/a" else f"ok ({'; '.join(ms)})")
            else:
                cells.append(c["status"])
        lines.append(f"| {r['kernel'].removesuffix('-cloud-amd64')} | {r['topo']} | {r['secs']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def plan(args):
    """The rows to run: [(kernel, topo, [stressors])]."""
    if args.quick:
        return list(QUICK)
    rows = []
    kernels = args.kernels.split(",") if args.kernels else [DEFAULT_KERNEL] + OLD_KERNELS
    for k in kernels:
        k = k if k.endswith("-cloud-amd64") else k + "-cloud-amd64"
        default = k == DEFAULT_KERNEL
        topos = args.topos.split(",") if args.topos else (TOPOS if default else OLD_TOPOS)
        stressors = (args.stressors.split(",") if args.stressors
                     else (STRESSORS if default else OLD_STRESSORS))
        for s in stressors:
            if s not in STRESSORS:
                print(f"gauntlet: unknown stressor {s} (known: {', '.join(STRESSORS)})",
                      file=sys.stderr)
                sys.exit(2)
        rows += [(k, t, stressors) for t in topos]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the fast subset of `make test`")
    ap.add_argument("--kernels", help="comma-separated kernel versions (default: all three)")
    ap.add_argument("--topos", help="comma-separated topologies (default: per kernel)")
    ap.add_argument("--stressors", help="comma-separated stressors (default: per kernel)")
    ap.add_argument("--secs", type=int, default=12, help="window of each cell (default 12)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    ap.add_argument("--mosaic-flags", default="", help="extra scx_mosaic flags in every cell")
    ap.add_argument("--manylimits", type=int, help="cgroups of the manylimits cell (default "
                    "1000)")
    ap.add_argument("--log-dir", type=Path, default=REPO / "target/gauntlet",
                    help="guest output and console logs (default target/gauntlet)")
    args = ap.parse_args()
    rows = plan(args)
    for kernel in sorted({k for k, _, _ in rows}):
        fetch_kernel(kernel)  # all first (idempotent): a missing kernel fails before any boot
    log_dir = args.log_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    env = dict(QUICK_ENV) if args.quick else {}
    if args.manylimits:
        env["GAUNTLET_MANYLIMITS"] = str(args.manylimits)
    results = run_matrix(rows, args.secs, log_dir, args.mosaic_flags, env)
    took = time.monotonic() - t0
    print(table(results))
    for r in results:
        controls = {c.get("controls") for c in r["cells"]} - {None}
        print(f"{r['kernel']} {r['topo']}: cgroup controls: {' / '.join(sorted(controls))}")
    failed = [(r, c) for r in results for c in r["cells"] if c["status"] == "FAIL"]
    for r, c in failed:
        print(f"FAIL {r['kernel']} {r['topo']} {c['cell']}: " + "; ".join(c["problems"]))
    n = sum(len(r["cells"]) for r in results)
    print(f"gauntlet: {n} cells in {len(results)} boots, {len(failed)} failed, {took:.0f} s "
          f"(logs: {log_dir})")
    if args.json:
        args.json.write_text(json.dumps({"seconds": round(took), "rows": results}, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
