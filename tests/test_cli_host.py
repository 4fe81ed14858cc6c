"""Host-side checks of the binary's behaviour where no scheduler loads (no VM, needs
target/release/scx_mosaic): a closed stdout ends printing quietly, and --monitor run by a
user who is not root says it needs root."""

import os
import shutil
import subprocess

import pytest

from vmtest import BIN

pytestmark = pytest.mark.host


@pytest.fixture(autouse=True)
def binary():
    assert BIN.exists(), "no target/release/scx_mosaic: run `make build` first"


def test_a_closed_stdout_ends_printing_quietly():
    # `| head -1`: the reader goes after one line; the writer must not panic (EPIPE)
    p = subprocess.run(f"'{BIN}' --help-stats | head -1; echo rc=${{PIPESTATUS[0]}}",
                       shell=True, executable="/bin/bash", capture_output=True, text=True,
                       timeout=30)
    assert p.stdout.startswith("scx_mosaic's stats"), p.stdout
    assert "rc=0" in p.stdout, p.stdout + p.stderr
    assert "panicked" not in p.stderr, p.stderr
    # the reader surely gone before the first write (the text fits a pipe's buffer)
    p = subprocess.run(f"{{ sleep 0.5; '{BIN}' --help-stats; echo rc=$? >&2; }} | true",
                       shell=True, executable="/bin/bash", capture_output=True, text=True,
                       timeout=30)
    assert p.stderr.strip() == "rc=0", p.stderr


def test_monitor_says_it_needs_root():
    assert os.geteuid() == 0 and shutil.which("setpriv"), \
        "needs root and setpriv (util-linux) to run as another user"
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        str(BIN), "--monitor", "1"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode != 0
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert "needs root" in p.stderr, p.stderr
    assert "no scx_mosaic instance" not in p.stderr, p.stderr
