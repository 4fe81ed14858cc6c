"""VM tests of the harness itself: vm/run boots once more when the guest never reached
/init (a hang of the emulator's early boot is not the test's failure), and never when the
guest command itself hangs."""

import os
import subprocess

from vmtest import REPO, VM_BOOT_FAILED, VM_TIMEOUT

RETRY_LINE = "did not start"


def vm_run(args, cmd, boot_timeout=None, limit=600):
    """Runs vm/run with @args and guest command @cmd; returns the CompletedProcess."""
    env = dict(os.environ)
    if boot_timeout is not None:
        env["MOSAIC_BOOT_TIMEOUT"] = str(boot_timeout)
    return subprocess.run([str(REPO / "vm/run"), *args, "--", cmd], env=env,
                          capture_output=True, text=True, timeout=limit)


def test_a_guest_that_never_reaches_init_is_booted_twice_then_fails_125():
    # The kernel runs busybox's sleep as its first process instead of Mosaic's /init (what
    # follows "--" on the command line is init's argv): a guest that boots but never
    # reports, with no Oops.
    p = vm_run(["--topo", "1cpu", "--timeout", "120",
                "--append", "rdinit=/bin/busybox -- sleep 1000"], "true", boot_timeout=25)
    assert p.returncode == VM_BOOT_FAILED, p.stderr
    lines = p.stderr.splitlines()
    retries = [line for line in lines if "retrying once" in line]
    assert len(retries) == 1, p.stderr
    assert RETRY_LINE in retries[0] and "boot-timeout" in retries[0], p.stderr
    assert "boot failure" in lines[-1] and "within 25 s" in lines[-1], p.stderr


def test_a_guest_command_that_hangs_is_not_retried():
    p = vm_run(["--topo", "1cpu", "--timeout", "60"], "echo started; sleep 1000")
    assert p.returncode == VM_TIMEOUT, p.stderr
    assert "started" in p.stdout
    assert "retrying" not in p.stderr, p.stderr
    assert "did not finish within 60 s" in p.stderr, p.stderr


def test_a_guest_that_boots_is_booted_once():
    p = vm_run(["--topo", "1cpu", "--timeout", "300", "-v"], "echo hello; exit 3")
    assert p.returncode == 3, p.stderr
    assert p.stdout.strip() == "hello"
    assert "retrying" not in p.stderr, p.stderr
