"""`make install` / `make uninstall` into a staging directory (DESTDIR): no VM, no root.

Needs target/release/scx_mosaic (`make build`). Whether the example config parses is the
Rust test config::tests::example_config_parses; here the installed binary reads it too.
"""

import re
import shutil
import subprocess

import pytest

from vmtest import BIN, REPO

pytestmark = pytest.mark.host

UNIT = "usr/local/lib/systemd/system/scx_mosaic.service"
CONFIG = "etc/scx_mosaic/config.toml"


def make(*args):
    p = subprocess.run(["make", "-s", "-C", str(REPO), *args], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


@pytest.fixture
def destdir(tmp_path):
    if not BIN.exists():
        pytest.skip("no target/release/scx_mosaic: run `make build` first")
    return tmp_path


def installed(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_install_lays_down_binary_unit_and_config(destdir):
    make("install", f"DESTDIR={destdir}")
    assert installed(destdir) == sorted([CONFIG, UNIT, "usr/local/bin/scx_mosaic"])
    binary = destdir / "usr/local/bin/scx_mosaic"
    assert binary.stat().st_mode & 0o777 == 0o755
    assert binary.read_bytes() == BIN.read_bytes()
    unit = (destdir / UNIT).read_text()
    assert "@" not in unit, "unsubstituted placeholder"
    assert "Type=simple" in unit and "Restart=on-failure" in unit
    exec_start = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    # no --config: the binary reads /etc/scx_mosaic/config.toml itself when it exists, so
    # deleting the config does not break the service
    assert exec_start == ["ExecStart=/usr/local/bin/scx_mosaic"]
    assert (destdir / CONFIG).read_text() == (REPO / "packaging/config.toml").read_text()

    # the installed binary accepts the installed config: it gets past parsing to the
    # preflight (no sched_ext or not root here), with no complaint about the file
    p = subprocess.run([str(binary), "--config", str(destdir / CONFIG)], capture_output=True,
                       text=True, timeout=30)
    assert "config file" not in p.stderr, p.stderr
    assert len(p.stderr.splitlines()) == 1 or p.returncode == 0, p.stderr


def test_prefix_and_unit_verify(destdir):
    make("install", f"DESTDIR={destdir}", "PREFIX=/usr")
    unit = destdir / "usr/lib/systemd/system/scx_mosaic.service"
    assert "ExecStart=/usr/bin/scx_mosaic\n" in unit.read_text()
    assert (destdir / "usr/bin/scx_mosaic").is_file()
    if shutil.which("systemd-analyze") is None:
        pytest.skip("no systemd-analyze")
    # the unit's syntax (the binary path does not exist on this host: that complaint is fine)
    p = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                       text=True, timeout=60)
    problems = [line for line in p.stderr.splitlines()
                if "Unknown" in line or "Failed to parse" in line or "Invalid" in line]
    # the restart back-off's keys are systemd 254's: older versions (bookworm's 252) warn
    # and ignore them, restarting after RestartSec= each time - nothing else may be unknown
    if systemd_version() < 254:
        problems = [line for line in problems
                    if not re.search(r"Unknown key '(RestartSteps|RestartMaxDelaySec)'", line)]
    assert not problems, p.stderr


def test_reinstall_keeps_an_edited_config_and_uninstall_removes_the_rest(destdir):
    make("install", f"DESTDIR={destdir}")
    config = destdir / CONFIG
    config.write_text("shard-size = 2\n")
    out = make("install", f"DESTDIR={destdir}")
    assert "keeping" in out
    assert config.read_text() == "shard-size = 2\n"
    make("uninstall", f"DESTDIR={destdir}")
    assert installed(destdir) == [CONFIG], "only the edited config stays"
    config.unlink()
    make("install", f"DESTDIR={destdir}")
    make("uninstall", f"DESTDIR={destdir}")
    assert installed(destdir) == []


def systemd_version():
    p = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True)
    return int(re.search(r"systemd (\d+)", p.stdout).group(1))


def unit_settings():
    """packaging/scx_mosaic.service's settings, KEY -> value (the last one given)."""
    text = (REPO / "packaging/scx_mosaic.service").read_text()
    return dict(line.split("=", 1) for line in text.splitlines()
                if "=" in line and not line.startswith("#"))


def test_the_start_limit_stops_a_stall_eject_restart_loop():
    u = unit_settings()
    assert u["Restart"] == "on-failure"
    # a watchdog stall takes at least 30 s to eject it; a load takes seconds. The limit's
    # burst of starts must fit in its interval even at the longest restart delay, or a
    # scheduler that stalls every time is restarted for ever.
    stall, load = 30, 10
    longest_delay = int(u.get("RestartMaxDelaySec", u["RestartSec"]))
    cycle = stall + load + longest_delay
    assert int(u["StartLimitBurst"]) * cycle <= int(u["StartLimitIntervalSec"]), u
    # and a bad flag or config (exit 2) is not retried
    assert u["RestartPreventExitStatus"] == "2"


def test_usage_and_config_errors_exit_2(tmp_path):
    if not BIN.exists():
        pytest.skip("no target/release/scx_mosaic: run `make build` first")
    bad = tmp_path / "bad.toml"
    bad.write_text("no-such-key = 1\n")
    for args in (["--no-such-flag"], ["--shard-size", "x"], ["--config", str(bad)],
                 ["--config", str(tmp_path / "missing.toml")]):
        p = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert len(p.stderr.splitlines()) == 1, p.stderr
    # no config at all (the default path absent here) is no error: it gets to the preflight
    p = subprocess.run([str(BIN)], capture_output=True, text=True, timeout=30)
    assert p.returncode != 2 and "config file" not in p.stderr, p.stderr


def test_the_units_hardening():
    u = unit_settings()
    for key, value in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                       ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
                       ("RestrictAddressFamilies", "AF_UNIX"),
                       ("MemoryDenyWriteExecute", "yes"), ("ProtectKernelTunables", "yes"),
                       ("ProtectControlGroups", "yes")]:
        assert u.get(key) == value, (key, u.get(key))
    # what it writes: the stats socket's directory (/var/run/scx is /run/scx) and the
    # directory --stats-file should go to
    assert set(u["RuntimeDirectory"].split()) == {"scx", "scx_mosaic"}
    # tests/test_monitor.py loads it in the VM with exactly these capabilities
    assert u["CapabilityBoundingSet"].split() == [
        "CAP_SYS_ADMIN", "CAP_BPF", "CAP_PERFMON"]


def test_the_units_exposure_score(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("no systemd-analyze")
    unit = tmp_path / "scx_mosaic.service"
    unit.write_text((REPO / "packaging/scx_mosaic.service").read_text()
                    .replace("@BINDIR@", "/usr/local/bin"))
    p = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit)],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for scx_mosaic.service: ([\d.]+)", p.stdout)
    if m is None:
        pytest.skip(f"systemd-analyze security --offline unsupported: {p.stderr}")
    # 9.6 ("UNSAFE") before the hardening; the README quotes the figure
    assert float(m.group(1)) <= 3.5, p.stdout
