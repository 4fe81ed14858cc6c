"""scripts/bpf-interface-check (a step of `make lint`): every *.bpf.c compiles alone against
mosaic.bpf.h, and a use across files that the header does not declare fails the check, naming
what is undeclared. Needs a release build (the check takes the BPF flags from it)."""

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.host

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "scripts" / "bpf-interface-check"
BPF_DIR = ROOT / "scheduler" / "src" / "bpf"


def run_check(bpf_dir):
    """Run the check on @bpf_dir; the finished process."""
    return subprocess.run([str(CHECK), "--bpf-dir", str(bpf_dir)], capture_output=True,
                          text=True, timeout=300)


def test_the_tree_passes():
    p = run_check(BPF_DIR)
    assert p.returncode == 0, p.stderr
    assert "compile alone" in p.stdout


# (a line of mosaic.bpf.h, what clang then reports undeclared, a file that uses it)
DROPPED = [
    ("static __always_inline void weight_flush(void);\n",
     "call to undeclared function 'weight_flush'", "main.bpf.c"),
    ("extern u32 steal_hint[MAX_CPUS];\n",
     "use of undeclared identifier 'steal_hint'", "steal.bpf.c"),
]


@pytest.mark.parametrize("line,error,user", DROPPED, ids=["function", "global"])
def test_an_undeclared_cross_file_use_fails(tmp_path, line, error, user):
    bpf = tmp_path / "bpf"
    shutil.copytree(BPF_DIR, bpf)
    header = bpf / "mosaic.bpf.h"
    text = header.read_text()
    assert text.count(line) == 1, f"mosaic.bpf.h no longer declares {line!r}"
    header.write_text(text.replace(line, ""))
    p = run_check(bpf)
    assert p.returncode == 1, p.stdout + p.stderr
    assert error in p.stderr, p.stderr
    assert f"{user}:" in p.stderr, p.stderr
    # the summary names the files that failed
    assert "do not compile alone" in p.stderr and user in p.stderr.splitlines()[-1]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    p = run_check(tmp_path)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "no mosaic.bpf.h" in p.stderr, p.stderr
