"""VM smoke test of the benchmark pipeline (mosaic-bench, not its numbers): one tiny
scenario, one round, EEVDF and scx_mosaic in the VM - the guest script, the output
parsing, the BPF statistics, the exit checks, JSON, Markdown and SVG. About 30 s."""

import json
import re
import subprocess

import pytest

from vmtest import REPO

pytestmark = pytest.mark.vm

BENCH = REPO / "target/release/mosaic-bench"


def test_smoke_pipeline_end_to_end(tmp_path):
    assert BENCH.exists(), "build the workspace first (make build)"
    doc = tmp_path / "doc/benchmarks.md"
    argv = [str(BENCH), "run", "--smoke", "--out", str(tmp_path), "--doc", str(doc)]
    p = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"mosaic-bench run --smoke failed:\n{p.stdout}\n{p.stderr}"
    run = json.loads((tmp_path / "hackbench-1llc.json").read_text())
    samples = run["samples"]
    assert len(samples) == 2, run
    for s in samples:
        assert s["fail"] is None, s
        assert s["metrics"]["time"] > 0, s
    mosaic = next(s for s in samples if s["sched"] == "mosaic")
    assert mosaic["bpf_ns_per_call"] > 0, mosaic
    assert mosaic["exit"] == "unregistered from user space", mosaic
    # scx_mosaic's own runnable-wait statistics (its --stats-file); EEVDF has none
    assert mosaic["wait_max_us"] > 0, mosaic
    assert mosaic["wait_p99_us"] > 0, mosaic
    eevdf = next(s for s in samples if s["sched"] == "eevdf")
    assert eevdf["wait_max_us"] is None and eevdf["wait_p99_us"] is None, eevdf
    # the shared measure (mosaic-bench waits) traced both, the same way
    for s in samples:
        assert s["shared_wait_count"] > 0 and s["shared_wait_p99_us"] > 0, s
        assert s["shared_wait_max_us"] >= s["shared_wait_p99_us"] >= s["shared_wait_p50_us"], s
    # for Mosaic its own p99 and the tracer's fall in the same log2 bucket or next to it
    own, shared = mosaic["wait_p99_us"], mosaic["shared_wait_p99_us"]
    assert own / 2 <= shared <= own * 2, mosaic
    # and the tracer, inside Mosaic's window, sees no longer wait than Mosaic's own counter
    # (1 ms for the two clocks' reads): a tracer that stamped wakeups before it traced
    # sched_switch turned per-CPU kthreads' sleeps into waits of up to 3.9 s
    assert mosaic["shared_wait_max_us"] <= mosaic["wait_max_us"] + 1000, mosaic
    # versions: the guest kernel's release for EEVDF, scx_mosaic's --version
    info = {i["label"]: i for i in run["sched_info"]}
    assert info["eevdf"]["version"] == run["kernel"] != "", info
    assert re.fullmatch(r"0\.1\.0-g[0-9a-f]{7,40}", info["mosaic"]["version"]), info
    assert info["mosaic"]["command"].startswith("scx_mosaic"), info
    md = (tmp_path / "report.md").read_text()
    assert "| mosaic |" in md and "×EEVDF" in md, md
    assert "| scheduler | command | version |" in md, md
    assert f"| mosaic | `{info['mosaic']['command']}` | {info['mosaic']['version']} |" in md, md
    assert "own wait max µs" in md, md
    assert "shared wait p99" in md, md
    svg = (tmp_path / "bench/hackbench-1llc.svg").read_text()
    assert svg.startswith("<svg") and "mosaic" in svg
    assert (tmp_path / "bench/summary-1llc.svg").exists()
    # --doc: the merged results and the page; the same run again resumes: the cell, already
    # measured by this binary and these schedulers, is kept and no VM boots
    merged = json.loads((tmp_path / "doc/bench/results.json").read_text())
    assert [(r["scenario"], r["topo"], r["boots"]) for r in merged["runs"]] == [
        ("hackbench", "1llc", 1)], merged["runs"]
    assert "| mosaic |" in doc.read_text()
    again = subprocess.run(argv[:4] + [str(tmp_path / "again")] + argv[5:], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "== hackbench on 1llc: kept (1 boot(s)" in again.stderr, again.stderr
    assert "round 1/1" not in again.stderr, again.stderr
    assert json.loads((tmp_path / "doc/bench/results.json").read_text()) == merged
