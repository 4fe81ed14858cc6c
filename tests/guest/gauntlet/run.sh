# tests/guest/gauntlet/run.sh - run gauntlet cells in sequence in one guest (busybox sh).
#
# Usage: sh run.sh SECONDS CELL...
# Each CELL is a stressor script $G/CELL.sh, run in a subshell with the cell's window SECS.
# Around each cell: the sched_ext state must be disabled before it starts; the kernel log is
# cleared, and afterwards its sched_ext lines and any line matching BAD_RE are reported.

SECS=$1
shift
. /mosaic/guest/gauntlet/lib.sh
report topo "cpus=$NCPU online=$(cat /sys/devices/system/cpu/online) kernel=$(uname -r)"
sysctl -qw kernel.threads-max=40000 kernel.pid_max=65536 2>/dev/null

for CELL in "$@"; do
    report CELL "$CELL"
    if ! wait_state disabled 30; then
        r error "sched_ext state is $(cat $SCX/state) before the cell"
        continue
    fi
    dmesg -c >/dev/null
    t0=$(now)
    (. $G/$CELL.sh)
    r cell_rc $?
    r cell_s $(($(now) - t0))
    # never leave a scheduler (or the runnable sampler) behind for the next cell
    for p in $(pidof scx_mosaic); do kill -INT "$p"; done
    [ -f /tmp/g.runnable.pid ] && kill "$(cat /tmp/g.runnable.pid)" 2>/dev/null
    rm -f /tmp/g.runnable.pid
    dmesg | sed 's/^\[[ 0-9.]*\] //' >/tmp/g.dmesg
    r sched_log "$(grep 'sched_ext' /tmp/g.dmesg | sort | uniq -c | sed 's/^ *//' | tr '\n' '|')"
    r dmesg_bad "$(grep -cE "$BAD_RE" /tmp/g.dmesg)"
    grep -E "$BAD_RE" /tmp/g.dmesg | head -n 20 | sed "s/^/[$CELL dmesg] /"
done
report done 1
