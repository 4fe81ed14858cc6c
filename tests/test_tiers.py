"""The test tiers (pytest.ini, tests/conftest.py): a test marked with neither `host` nor `vm`
stops the collection with one line naming it; a marked one runs in its tier alone."""

import shutil
import subprocess
import sys

import pytest

from vmtest import REPO

pytestmark = pytest.mark.host


def pytest_in(tmp_path, body):
    """Runs pytest with the repository's ini and conftest on one test file of @body."""
    shutil.copy(REPO / "tests/conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_one.py").write_text("import pytest\n\n" + body)
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(REPO / "pytest.ini"),
                           "--rootdir", str(tmp_path), "-q", "-m", "host", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)


def test_an_untiered_test_stops_the_collection(tmp_path):
    p = pytest_in(tmp_path, "def test_untiered():\n    pass\n")
    assert p.returncode == 4, p.stdout + p.stderr
    assert "1 tests without exactly one tier marker" in p.stderr, p.stderr
    assert "test_one.py::test_untiered" in p.stderr, p.stderr


def test_each_tier_runs_alone(tmp_path):
    p = pytest_in(tmp_path, "@pytest.mark.host\ndef test_h():\n    pass\n\n\n"
                            "@pytest.mark.vm\ndef test_v():\n    assert False\n")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 passed, 1 deselected" in p.stdout, p.stdout
