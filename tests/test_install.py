"""`make install` / `make uninstall` into a staging directory (DESTDIR): no VM, no root.

Needs target/release/scx_mosaic (`make build`). Whether the example config parses is the
Rust test config::tests::example_config_parses; here the installed binary reads it too.
"""

import shutil
import subprocess

import pytest

from vmtest import BIN, REPO

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
    assert exec_start == [
        "ExecStart=/usr/local/bin/scx_mosaic --config /etc/scx_mosaic/config.toml"]
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
    assert "ExecStart=/usr/bin/scx_mosaic " in unit.read_text()
    assert (destdir / "usr/bin/scx_mosaic").is_file()
    if shutil.which("systemd-analyze") is None:
        pytest.skip("no systemd-analyze")
    # the unit's syntax (the binary path does not exist on this host: that complaint is fine)
    p = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                       text=True, timeout=60)
    problems = [line for line in p.stderr.splitlines()
                if "Unknown" in line or "Failed to parse" in line or "Invalid" in line]
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
