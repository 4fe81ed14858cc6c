# tests/test_bad_input.py: every case of cases.tsv (bad flags and config files, written to
# /tmp from this directory) run once, then the default config file's happy path.
. /mosaic/guest/lib.sh
mkdir -p /sys/fs/cgroup/gb /etc/scx_mosaic
cp /mosaic/guest/bad-input/*.toml /tmp/
report version "$(scx_mosaic --version)"
n=0
grep -v '^#' /mosaic/guest/bad-input/cases.tsv | cut -f1 >/tmp/cases
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
done </tmp/cases
# the default config file is read; flags on the command line win over it
printf 'shard-size = 4\nno-shared-runq = true\nstats = 0\n' >/etc/scx_mosaic/config.toml
start_mosaic --shard-size 2 --stats-file /tmp/s.json || exit 1
sleep 2
stop_mosaic
report_json stats /tmp/s.json
