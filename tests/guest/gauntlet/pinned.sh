# Cell "pinned": a crowd on one CPU's own queue. 12 hogs and 2 sleepers (1 ms busy, 4 ms
# asleep: they wake there all the time) are all pinned to CPU 1 (0 on a 1-CPU machine), beside
# the canary hogs, which may run anywhere. Every thread must move; a woken sleeper must not
# wait behind the hogs' accumulated lag (vtime.bpf.c, the CPU's pinned clock), and the crowd
# takes short turns (shard.bpf.c). A fixed crowd, not one per CPU: under TCG a vCPU of 16cpu
# runs a sixteenth of the time, and 51 pinned hogs took 6.5 s to each run once. Sourced by
# run.sh.
g_start || return 1
pin=$((NCPU > 1 ? 1 : 0))
canaries
# taskset execs spin: the pid file names spin itself
taskset -c $pin spin -t 12 -s "$SECS" >/tmp/g.spin.pile 2>&1 &
echo $! >/tmp/g.pid.pile
taskset -c $pin spin -t 2 -s "$SECS" -b 1000 -z 4000 >/tmp/g.spin.sleepers 2>&1 &
echo $! >/tmp/g.pid.sleepers
r pinned_to $pin
spin_wait canary
spin_wait pile
spin_wait sleepers
g_stop
