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

from vmtest import REPO, assert_not_ejected, boot

# config files the guest writes before the runs: name -> content
CONFIGS = {
    "badkey": 'shard-sise = 2\n',
    "badtype": 'shard-size = "two"\n',
    "badbool": 'no-shared-runq = 1\n',
    "table": '[shard-size]\nvalue = 2\n',
    "syntax": 'shard-size =\n',
    "badcap": 'cpu-capacity = "0-3:5000"\n',
    "twice": 'shard-size = 2\nshard_size = 4\n',
}

# (arguments as the guest shell reads them, a piece of the expected message)
CASES = [
    ("--cpu-capacity '0-x:512'", 'bad CPU list "0-x"'),
    ("--cpu-capacity '3-1:512'", "runs backwards"),
    ("--cpu-capacity '0,1:512'", "expected CPUS:CAPACITY"),
    ("--cpu-capacity '0-1:2048'", "capacity must be 1 to 1024"),
    ("--cpu-capacity '0-1:0'", "capacity must be 1 to 1024"),
    ("--cpu-capacity '0-3:1024,2:512'", "CPU 2 is given twice"),
    ("--cpu-capacity '0-7:512'", "CPU 4 is not an online CPU"),
    ("--cpu-capacity '99999999999999999999:5'", "is too large"),
    ("--gb-parent gb --gb-partitions '0-1;2-'", "bad CPU list"),
    ("--gb-parent gb --gb-partitions '0-2;2-3'", "CPU 2 is in two partitions"),
    ("--gb-parent gb --gb-partitions '0-1;2-3;4'", "CPU 4 is not an online CPU"),
    ("--gb-parent no/such/cgroup", "is not a cgroup directory"),
    ("--gb-parent /sys/fs/cgroup/gb/cgroup.procs", "is not a cgroup directory"),
    ("--config /tmp/badkey.toml", 'config file /tmp/badkey.toml: unknown key "shard-sise"'),
    ("--config /tmp/badtype.toml", 'config file /tmp/badtype.toml: key "shard-size": invalid'),
    ("--config /tmp/badbool.toml", 'key "no-shared-runq": expected true or false'),
    ("--config /tmp/table.toml", 'key "shard-size": expected a string or a number'),
    ("--config /tmp/syntax.toml", "config file /tmp/syntax.toml (line 1)"),
    ("--config /tmp/twice.toml", 'key "shard_size" is given twice'),
    ("--config /tmp/badcap.toml", "capacity must be 1 to 1024"),
    ("--config /tmp/no-such.toml", "config file /tmp/no-such.toml: No such file"),
    ("--config /tmp", "config file /tmp: Is a directory"),
    ("--config /tmp/badkey.toml --shard-size 2", 'unknown key "shard-sise"'),
    # no --config: the default file, here with a bad key
    ("DEFAULT", 'config file /etc/scx_mosaic/config.toml: unknown key "shard-sise"'),
]

SCRIPT = r"""
. /mosaic/guest/lib.sh
mkdir -p /sys/fs/cgroup/gb /etc/scx_mosaic
{configs}
report version "$(scx_mosaic --version)"
n=0
while IFS= read -r args; do
    n=$((n + 1))
    if [ "$args" = DEFAULT ]; then
        cp /tmp/badkey.toml /etc/scx_mosaic/config.toml
        args=
    fi
    eval "scx_mosaic $args" </dev/null >/tmp/out 2>/tmp/err
    report rc_$n $?
    rm -f /etc/scx_mosaic/config.toml
    report err_lines_$n "$(wc -l </tmp/err)"
    report out_bytes_$n "$(wc -c </tmp/out)"
    report msg_$n "$(head -c 400 /tmp/err | tr '\n' '|')"
    report state_$n "$(cat $SCX/state)"
done <<'CASES'
{cases}
CASES
# the default config file is read; flags on the command line win over it
printf 'shard-size = 4\nno-shared-runq = true\nstats = 0\n' >/etc/scx_mosaic/config.toml
start_mosaic --shard-size 2 --stats-file /tmp/s.json || exit 1
sleep 2
stop_mosaic
report_json stats /tmp/s.json
"""


@pytest.fixture(scope="module")
def guest():
    configs = "\n".join(f"printf '%s' '{text}' >/tmp/{name}.toml"
                        for name, text in CONFIGS.items())
    cases = "\n".join(args for args, _ in CASES)
    return boot("1llc", SCRIPT.replace("{configs}", configs).replace("{cases}", cases),
                timeout=300)


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
