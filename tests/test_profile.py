"""vm/profile: the host-side profile of a guest workload under TCG. The report's attribution
rules on a made-up profile (host), and one real profile of scx_mosaic under hackbench (VM)."""

import json
import subprocess
import sys

import pytest

from vmtest import REPO

REPORT = REPO / "vm/profile-report"

# Guest symbols: two kernel functions, a BPF program and a kfunc (addresses ascending).
KALLSYMS = """\
ffffffff81000000 memset
ffffffff81001000 unix_stream_sendmsg
ffffffff81002000 scx_bpf_now
ffffffff81003000 enqueue_task_scx
ffffffffc0001000 bpf_prog_0123456789abcdef_mosaic_running
ffffffffc0002000 bpf_prog_fedcba9876543210_mosaic_stopping
"""


def write_profile(d, chains, stats, freq=1000, sampled=10, loop=20.0, runs=4):
    """A vm/profile directory in @d: samples (@chains: each a list of perf symbol names,
    innermost first), the guest's BPF statistics (@stats: "TAG NS CALLS" lines)."""
    (d / "sampling").write_text(f"{freq} {sampled}\n")
    guest = ["@@PROFILE-START@@", f"@@PROFILE-END runs={runs} secs={loop}@@",
             "@@KALLSYMS@@", *KALLSYMS.splitlines(), "@@END@@",
             "@@BPFSTATS@@", *stats, "@@END@@"]
    (d / "guest.txt").write_text("\n".join(guest) + "\n")
    lines = []
    for chain in chains:
        lines += [f"\t{0x7f0000000000 + i:x} {s}" for i, s in enumerate(chain)] + [""]
    (d / "samples.txt").write_text("\n".join(lines) + "\n")


def vm_profile(out, workload, *opts):
    """vm/profile with @opts on @workload, its files in @out; its stdout (fails on an error)."""
    p = subprocess.run([str(REPO / "vm/profile"), *opts, "--out", str(out), "--", workload],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr + p.stdout
    return p.stdout


def report(d):
    p = subprocess.run([sys.executable, str(REPORT), "--json", str(d)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.host
def test_the_report_charges_helpers_to_the_guest_code_that_called_them(tmp_path):
    chains = (
        # 3 samples in memset's own block, 2 in a QEMU helper it called
        [["guest-0xffffffff81000010"]] * 3
        + [["helper_lookup_tb_ptr", "guest-0xffffffff81000020"]] * 2
        # the BPF program: 2 in its block, 1 in a softmmu helper under it
        + [["guest-0xffffffffc0001008"]] * 2
        + [["tlb_set_page_full", "helper_ldq_mmu", "guest-0xffffffffc0001010"]]
        # a kfunc and sched_ext's core
        + [["guest-0xffffffff81002004"], ["guest-0xffffffff81003100"]]
        # QEMU alone: translation, the host kernel
        + [["tb_gen_code", "cpu_exec"], ["[unknown]"]]
    )
    write_profile(tmp_path, chains,
                  ["0123456789abcdef 40000000 1000", "fedcba9876543210 5000 500"])
    r = report(tmp_path)
    assert r["samples"] == 12
    assert r["by_class"] == {
        "BPF programs": 3,
        "BPF helpers, kfuncs, trampolines": 1,
        "sched_ext core": 1,
        "rest of the guest": 5,
        "QEMU's own (translation, main loop, host kernel)": 2,
    }
    fns = {f["name"]: f for f in r["functions"]}
    assert fns["memset"]["samples"] == 5 and fns["memset"]["in_block"] == 3
    progs = {p["name"]: p for p in r["bpf_programs"]}
    assert progs["mosaic_running"] == {"name": "mosaic_running", "calls": 1000,
                                       "guest_ns": 40000000, "host_samples": 3}
    assert progs["mosaic_stopping"]["host_samples"] == 0
    assert r["sampled_s"] == 10 and r["loop_s"] == 20.0 and r["runs"] == 4


@pytest.mark.host
def test_the_text_report_scales_calls_to_the_sampled_part_of_the_loop(tmp_path):
    # 3 samples at 1000 Hz = 3 ms of host CPU in mosaic_running; 1000 calls over a 20 s loop
    # of which 10 s were sampled: 500 calls, 6,000 ns a call; the guest's 40 ms / 1000 calls
    # is 40,000 ns a call
    write_profile(tmp_path, [["guest-0xffffffffc0001008"]] * 3,
                  ["0123456789abcdef 40000000 1000"])
    p = subprocess.run([sys.executable, str(REPORT), str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    row = next(line.split() for line in p.stdout.splitlines()
               if line.strip().startswith("mosaic_running"))
    assert row[1] == "500" and row[-2:] == ["6,000", "40,000"], p.stdout


@pytest.mark.host
def test_a_profile_without_the_guest_symbols_is_refused(tmp_path):
    (tmp_path / "sampling").write_text("1000 10\n")
    (tmp_path / "guest.txt").write_text("@@PROFILE-START@@\nKernel panic\n")
    (tmp_path / "samples.txt").write_text("")
    p = subprocess.run([sys.executable, str(REPORT), str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "no guest symbols" in p.stderr


@pytest.mark.vm
def test_a_profile_of_mosaic_names_its_bpf_programs(tmp_path):
    out = tmp_path / "prof"
    stdout = vm_profile(out, "hackbench -g 2 -l 50", "--topo", "1llc", "--secs", "8")
    assert "The scheduler's struct_ops programs" in stdout, stdout
    r = report(out)
    assert r["runs"] >= 1
    assert sum(r["by_class"].values()) == r["samples"] > 1000
    # the guest's code, the scheduler's BPF and sched_ext's core all took host time
    assert r["by_class"]["rest of the guest"] > 0
    assert r["by_class"]["BPF programs"] > 0
    assert r["by_class"]["sched_ext core"] > 0
    progs = {p["name"]: p for p in r["bpf_programs"]}
    for op in ("mosaic_enqueue", "mosaic_dispatch", "mosaic_running", "mosaic_stopping"):
        assert progs[op]["calls"] > 0, progs
    # the struct_ops programs are part of the BPF code; the rest is the scheduler's timer
    # callbacks and global functions, which the programs call
    ops = sum(p["host_samples"] for p in progs.values())
    assert 0 < ops <= r["by_class"]["BPF programs"]


@pytest.mark.host
def test_a_pause_profile_counts_events_not_cpu(tmp_path):
    # --pauses: "0" as the rate, every sample one PAUSE; 4 in spin_lock, 1 in osq_lock, 1 in
    # QEMU alone, over 10 s sampled
    kallsyms = "ffffffff81004000 native_queued_spin_lock_slowpath\nffffffff81005000 osq_lock\n"
    write_profile(tmp_path, [["helper_pause", "guest-0xffffffff81004010"]] * 4
                  + [["helper_pause", "guest-0xffffffff81005010"], ["helper_pause"]], [],
                  freq=0)
    guest = (tmp_path / "guest.txt").read_text().replace("@@KALLSYMS@@\n",
                                                         "@@KALLSYMS@@\n" + kallsyms)
    (tmp_path / "guest.txt").write_text(guest)
    p = subprocess.run([sys.executable, str(REPORT), str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("6 PAUSE instructions that ended a vCPU's turn in 10 s (1 a second)")
    lines = [line.split() for line in p.stdout.splitlines() if "%" in line]
    assert lines[0] == ["66.67", "%", "native_queued_spin_lock_slowpath"], p.stdout


@pytest.mark.vm
def test_a_pause_profile_finds_the_guest_spinning(tmp_path):
    # 20 senders write to each of 20 receivers' sockets: their vCPUs spin on locks that a vCPU
    # off the host thread holds, and each spin's PAUSE ends the spinning vCPU's turn
    out = tmp_path / "prof"
    stdout = vm_profile(out, "perf bench sched messaging -g 2 -l 100", "--pauses",
                        "--topo", "2llc-smt", "--secs", "8")
    r = report(out)
    assert r["freq"] == 0 and r["samples"] > 0, stdout
    # the PAUSEs are the guest kernel's: named, not QEMU's own
    named = [f for f in r["functions"]
             if f["name"] not in ("QEMU's own (translation, main loop, host kernel)",
                                  "[unknown guest address]")]
    assert sum(f["samples"] for f in named) > r["samples"] / 2, r["functions"][:5]


@pytest.mark.vm
def test_turns_are_counted_by_how_they_ended(tmp_path):
    # hackbench on 4 vCPUs: timer kicks end most turns, idle vCPUs halt between runs, and the
    # workers' forks and exits spin on locks (PAUSE)
    out = tmp_path / "turns"
    stdout = vm_profile(out, "hackbench -g 4 -l 50", "--turns", "--topo", "1llc", "--secs", "8")
    assert stdout.startswith("vCPU turns a second over 6 s: "), stdout
    t = json.loads((out / "turns.json").read_text())
    assert t["secs"] == 6
    assert t["turns"] == t["kick"] + t["hlt"] + t["pause"] + t["other"]
    assert t["kick"] > 0 and t["hlt"] > 0 and t["pause"] > 0, t
    # a turn at least every 100 ms (QEMU's kick period) on the busy vCPUs
    assert t["turns"] >= 10 * t["secs"], t
