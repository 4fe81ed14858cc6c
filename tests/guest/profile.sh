#!/bin/sh
# tests/guest/profile.sh - the guest side of vm/profile: load a scheduler, run a workload in a
# loop while the host profiles QEMU, then hand the host what it needs to name the samples.
#
# Usage: profile.sh SECONDS 'WORKLOAD' ['SCHEDULER COMMAND']
#   The scheduler (empty: the kernel's default) starts first; "@@PROFILE-START@@" tells the host
#   to start sampling, "@@PROFILE-END runs=N secs=S@@" that the loop (N runs, S seconds) is over. Then, with the scheduler
#   still loaded (its BPF programs' addresses are valid only while they are):
#   @@LAST-RUN@@ ... @@END@@   the last lines the workload's last run printed
#   @@KALLSYMS@@ ... @@END@@   the guest's text symbols, BPF programs (bpf_prog_<tag>_<name>)
#                              included, as "ADDRESS NAME"
#   @@BPFSTATS@@ ... @@END@@   per struct_ops program of the scheduler: "TAG RUN_TIME_NS RUN_CNT"
#                              over the loop (kernel.bpf_stats_enabled=1; the guest's clock)
. "$(dirname "$0")/lib.sh"
secs=$1
workload=$2
sched=$3

# "TAG RUN_TIME_NS RUN_CNT" per program tag of process $1's struct_ops programs (programs of
# one tag share their symbols' names: their figures are summed).
prog_stats() {
    struct_ops_stats "$1" | awk '{ ns[$2] += $3; c[$2] += $4 } END { for (g in ns) print g, ns[g], c[g] }'
}

echo 1 >/proc/sys/net/core/bpf_jit_kallsyms
echo 1 >/proc/sys/kernel/bpf_stats_enabled
pid=''
if [ -n "$sched" ]; then
    $sched >/tmp/profile-sched.log 2>&1 &
    pid=$!
    wait_state enabled 60 $pid || {
        echo "profile.sh: '$sched' did not enable" >&2
        cat /tmp/profile-sched.log >&2
        exit 1
    }
    prog_stats $pid >/tmp/profile-before
fi
t0=$(cut -d' ' -f1 /proc/uptime)
end=$((${t0%.*} + secs))
echo "@@PROFILE-START@@"
runs=0
while [ "$(cut -d. -f1 /proc/uptime)" -lt $end ]; do
    sh -c "$workload" >/tmp/profile-workload.log 2>&1 || {
        echo "profile.sh: the workload failed:" >&2
        tail -5 /tmp/profile-workload.log >&2
        exit 1
    }
    runs=$((runs + 1))
done
t1=$(cut -d' ' -f1 /proc/uptime)
echo "@@PROFILE-END runs=$runs secs=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')@@"
echo "@@LAST-RUN@@"
tail -n 12 /tmp/profile-workload.log
echo "@@END@@"
echo "@@KALLSYMS@@"
awk '$2 == "t" || $2 == "T" { print $1, $3 }' /proc/kallsyms
echo "@@END@@"
if [ -n "$pid" ]; then
    echo "@@BPFSTATS@@"
    prog_stats $pid >/tmp/profile-after
    # the loop's share: after less before, by tag
    awk 'NR == FNR { ns[$1] = $2; c[$1] = $3; next }
         { print $1, $2 - ns[$1], $3 - c[$1] }' /tmp/profile-before /tmp/profile-after
    echo "@@END@@"
    [ "$(cat $SCX/state)" = enabled ] || { echo "profile.sh: the scheduler was ejected" >&2; exit 1; }
    kill -INT $pid
    wait $pid || { echo "profile.sh: the scheduler exited with an error" >&2; exit 1; }
fi
exit 0
