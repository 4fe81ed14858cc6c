"""VM smoke test of the benchmark pipeline (mosaic-bench, not its numbers): one tiny
scenario, one round, EEVDF and scx_mosaic in the VM - the guest script, the output
parsing, the BPF statistics, the exit checks, JSON, Markdown and SVG. About 30 s."""

import json
import subprocess

from vmtest import REPO

BENCH = REPO / "target/release/mosaic-bench"


def test_smoke_pipeline_end_to_end(tmp_path):
    assert BENCH.exists(), "build the workspace first (make build)"
    p = subprocess.run([str(BENCH), "run", "--smoke", "--out", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, timeout=900)
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
    md = (tmp_path / "report.md").read_text()
    assert "| mosaic |" in md and "×EEVDF" in md, md
    svg = (tmp_path / "bench/hackbench-1llc.svg").read_text()
    assert svg.startswith("<svg") and "mosaic" in svg
    assert (tmp_path / "bench/summary-1llc.svg").exists()
