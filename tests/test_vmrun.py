"""VM tests of the harness itself: vm/run boots once more when the guest never reached
/init (a hang of the emulator's early boot is not the test's failure), and never when the
guest command itself hangs."""

import os
import subprocess
from pathlib import Path

import pytest

from vmtest import REPO, VM_BOOT_FAILED, VM_TIMEOUT

RETRY_LINE = "did not start"


def vm_run(args, cmd, boot_timeout=None, limit=600):
    """Runs vm/run with @args and guest command @cmd; returns the CompletedProcess."""
    env = dict(os.environ)
    if boot_timeout is not None:
        env["MOSAIC_BOOT_TIMEOUT"] = str(boot_timeout)
    return subprocess.run([str(REPO / "vm/run"), *args, "--", cmd], env=env,
                          capture_output=True, text=True, timeout=limit)


@pytest.mark.vm
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


@pytest.mark.vm
def test_a_guest_command_that_hangs_is_not_retried():
    p = vm_run(["--topo", "1cpu", "--timeout", "60"], "echo started; sleep 1000")
    assert p.returncode == VM_TIMEOUT, p.stderr
    assert "started" in p.stdout
    assert "retrying" not in p.stderr, p.stderr
    assert "did not finish within 60 s" in p.stderr, p.stderr


@pytest.mark.vm
def test_a_guest_that_boots_is_booted_once():
    p = vm_run(["--topo", "1cpu", "--timeout", "300", "-v"], "echo hello; exit 3")
    assert p.returncode == 3, p.stderr
    assert p.stdout.strip() == "hello"
    assert "retrying" not in p.stderr, p.stderr


def print_accel(tmp_path, accel=None, kvm_dev=True, qemu_rc=0):
    """vm/run --print-accel with MOSAIC_ACCEL @accel, a fake KVM device (present or not) and a
    fake QEMU whose probe exits @qemu_rc; returns the CompletedProcess."""
    qemu = tmp_path / "qemu"
    qemu.write_text(f"#!/bin/sh\ncat >/dev/null\nexit {qemu_rc}\n")
    qemu.chmod(0o755)
    dev = tmp_path / "kvm"
    if kvm_dev:
        dev.write_text("")
    elif dev.exists():
        dev.unlink()
    env = dict(os.environ, MOSAIC_QEMU=str(qemu), MOSAIC_KVM_DEV=str(dev))
    env.pop("MOSAIC_ACCEL", None)
    if accel is not None:
        env["MOSAIC_ACCEL"] = accel
    return subprocess.run([str(REPO / "vm/run"), "--print-accel"], env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.host
def test_kvm_is_chosen_only_when_qemu_starts_a_machine_with_it(tmp_path):
    assert print_accel(tmp_path).stdout == "kvm\n"
    # a device that opens is not enough: QEMU must accept -accel kvm -cpu host
    assert print_accel(tmp_path, qemu_rc=134).stdout == "tcg\n"
    assert print_accel(tmp_path, kvm_dev=False).stdout == "tcg\n"
    assert print_accel(tmp_path, accel="tcg").stdout == "tcg\n"


@pytest.mark.host
def test_asking_for_kvm_where_it_is_unusable_fails_in_one_line(tmp_path):
    for p in (print_accel(tmp_path, accel="kvm", kvm_dev=False),
              print_accel(tmp_path, accel="kvm", qemu_rc=1),
              print_accel(tmp_path, accel="fast")):
        assert p.returncode == 2, p.stderr
        assert p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr
    assert "not usable" in print_accel(tmp_path, accel="kvm", kvm_dev=False).stderr


@pytest.mark.vm
def test_this_host_runs_the_accelerator_vm_run_reports():
    # what the README says about these machines: /dev/kvm may exist, but QEMU refuses the
    # host CPU model or KVM stops the guest (then vm/run falls back to TCG), so every figure
    # here is TCG (`vm/run -v` names it per run)
    p = subprocess.run([str(REPO / "vm/run"), "--print-accel"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout in ("kvm\n", "tcg\n"), p
    v = vm_run(["--topo", "1cpu", "--timeout", "120", "-v"], "true")
    assert v.returncode == 0, v.stderr
    assert f"accelerator {p.stdout.strip()}" in v.stderr, v.stderr


def fake_kvm_qemu(tmp_path, kvm_boot):
    """A fake QEMU whose paused KVM probe passes, whose KVM boot runs shell @kvm_boot, and
    which runs the real QEMU for TCG; returns (env for vm/run, calls file, KVM mark path)."""
    calls = tmp_path / "calls"
    qemu = tmp_path / "qemu"
    qemu.write_text(f"""#!/bin/bash
case " $* " in
  *" -S "*) cat >/dev/null; exit 0 ;;
  *" -accel kvm "*) echo kvm >> {calls}; {kvm_boot} ;;
esac
echo tcg >> {calls}
exec qemu-system-x86_64 "$@"
""")
    qemu.chmod(0o755)
    dev = tmp_path / "kvm"
    dev.write_text("")
    env = dict(os.environ, MOSAIC_QEMU=str(qemu), MOSAIC_KVM_DEV=str(dev))
    env.pop("MOSAIC_ACCEL", None)
    cache = Path(os.environ.get("MOSAIC_CACHE", "/var/cache/mosaic"))
    return env, calls, cache / ("kvm-failed" + str(dev).replace("/", "_"))


@pytest.mark.vm
def test_a_kvm_that_stops_the_guest_falls_back_to_tcg_until_the_host_reboots(tmp_path):
    # A KVM that QEMU accepts (the paused probe passes) but that stops the guest, as nested KVM
    # did here at the kernel's first cmpxchg16b: the fake QEMU prints QEMU's message and hangs.
    env, calls, mark = fake_kvm_qemu(
        tmp_path, 'echo "KVM internal error. Suberror: 1" >&2; echo "emulation failure" >&2; '
                  'exec sleep 600')
    try:
        accel = tmp_path / "accel"
        first = subprocess.run([str(REPO / "vm/run"), "--topo", "1cpu", "--timeout", "300",
                                "--accel-file", str(accel), "--", "echo hello"], env=env,
                               capture_output=True, text=True, timeout=400)
        assert first.returncode == 0 and first.stdout.strip() == "hello", first.stderr
        assert "KVM did not boot the guest (kvm-error" in first.stderr, first.stderr
        assert calls.read_text().split() == ["kvm", "tcg"]
        # what the guest ran under, for callers such as mosaic-bench
        assert accel.read_text() == "tcg\n"
        again = subprocess.run([str(REPO / "vm/run"), "--print-accel"], env=env,
                               capture_output=True, text=True, timeout=60)
        assert again.stdout == "tcg\n", again
        # after a reboot of the host (another boot id) KVM is tried again
        mark.write_text("another-boot\n")
        again = subprocess.run([str(REPO / "vm/run"), "--print-accel"], env=env,
                               capture_output=True, text=True, timeout=60)
        assert again.stdout == "kvm\n", again
        # asked for by name, a KVM that stops the guest fails, in one line of vm/run's own,
        # after one attempt (KVM's error is not the early-boot hang a second boot may pass)
        mark.unlink()
        calls.unlink()
        forced = subprocess.run([str(REPO / "vm/run"), "--topo", "1cpu", "--timeout", "300", "--",
                                 "true"], env=dict(env, MOSAIC_ACCEL="kvm"),
                                capture_output=True, text=True, timeout=400)
        assert forced.returncode == VM_BOOT_FAILED, forced.stderr
        assert "KVM internal error: KVM stopped the guest" in forced.stderr.splitlines()[-1]
        assert calls.read_text().split() == ["kvm"]
    finally:
        mark.unlink(missing_ok=True)


@pytest.mark.vm
def test_qemu_quitting_with_a_kvm_error_falls_back_but_a_silent_kvm_hang_does_not(tmp_path):
    # QEMU refusing the host CPU model at start (seen here before: an MSR KVM cannot set)
    env, calls, mark = fake_kvm_qemu(
        tmp_path, "echo 'kvm: failed to set MSR 0x48f' >&2; exit 1")
    try:
        p = subprocess.run([str(REPO / "vm/run"), "--topo", "1cpu", "--timeout", "300", "--",
                            "echo hello"], env=env, capture_output=True, text=True, timeout=400)
        assert p.returncode == 0 and p.stdout.strip() == "hello", p.stderr
        assert "KVM did not boot the guest (exited" in p.stderr, p.stderr
        assert calls.read_text().split() == ["kvm", "tcg"]
    finally:
        mark.unlink(missing_ok=True)
    # a guest that never reaches /init under KVM with no KVM error is an ordinary boot
    # failure: booted twice under KVM, no fallback, no mark (a working KVM stays in use)
    calls.unlink()
    env, calls, mark = fake_kvm_qemu(tmp_path, "exec sleep 600")
    try:
        p = subprocess.run([str(REPO / "vm/run"), "--topo", "1cpu", "--timeout", "60", "--",
                            "true"], env=dict(env, MOSAIC_BOOT_TIMEOUT="5"),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == VM_BOOT_FAILED, p.stderr
        assert "KVM did not boot" not in p.stderr, p.stderr
        assert calls.read_text().split() == ["kvm", "kvm"]
        assert not mark.exists()
    finally:
        mark.unlink(missing_ok=True)
