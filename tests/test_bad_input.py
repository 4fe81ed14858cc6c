"""VM test of bad input: every malformed flag value or config file is refused with exactly
one line on stderr and a non-zero exit, and nothing is loaded. Also the config file's
happy path in the guest: the default /etc/scx_mosaic/config.toml is read, and flags win.

tests/test_foundation.py covers an invalid --shard-size and an unknown flag, and
tests/test_group.py the group balancer's partition and parent checks on 2llc-smt; this
file covers CPU lists, capacities and the config file, on 1llc (4 CPUs).
"""

import re
import tomllib

import pytest

from vmtest import REPO, assert_not_ejected, run_guest

pytestmark = pytest.mark.vm

# (arguments as the guest shell reads them, a piece of the expected message), from
# tests/guest/bad-input/cases.tsv; the config files they name are in that directory too
CASES = [tuple(line.split("\t")) for line in
         (REPO / "tests/guest/bad-input/cases.tsv").read_text().splitlines()
         if not line.startswith("#")]


@pytest.fixture(scope="module")
def guest():
    return run_guest("1llc", "bad-input/run.sh", timeout=300)


@pytest.mark.parametrize("n,args,why", [(n, a, w) for n, (a, w) in enumerate(CASES, 1)],
                         ids=[a for a, _ in CASES])
def test_bad_input_is_one_line_and_loads_nothing(guest, n, args, why):
    g = guest
    msg = g[f"msg_{n}"]
    assert g[f"rc_{n}"] not in ("0", ""), f"{args}: exit 0: {msg}"
    assert g[f"err_lines_{n}"] == "1", f"{args}: stderr is not one line: {msg}"
    assert g[f"out_bytes_{n}"] == "0", f"{args}: printed on stdout"
    assert msg.startswith("scx_mosaic: "), msg
    assert why in msg, f"{args}: {msg}"
    assert g[f"state_{n}"] == "disabled", f"{args}: a scheduler is loaded"


def test_default_config_is_read_and_flags_win(guest):
    g = guest
    version = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    # the version, the commit it was built from (a git checkout, as here) and the target
    assert re.fullmatch(rf"scx_mosaic {re.escape(version)}-g[0-9a-f]{{7,}} \S+-linux-\S+",
                        g["version"]), g["version"]
    assert g["mosaic_rc"] == "0", g.out
    assert g["state_after"] == "disabled"
    s = g.json["stats"]
    assert_not_ejected(g, s)
    assert s["no_shared_runq"] is True, "no-shared-runq from the default config file"
    assert s["shard_size"] == 2, "--shard-size on the command line wins over the file"
