# Cell "sigstop": SIGSTOP the scheduler's userspace process for a few seconds under load; the
# BPF scheduler keeps scheduling (a fresh probe started while it is stopped must make progress),
# then SIGCONT, and it must still exit cleanly on request. Sourced by run.sh.
g_start || return 1
canaries
sleep 2
kill -STOP $MOSAIC_PID
r state_stopped "$(cat $SCX/state)"
spin_bg stopped -t $((2 * NCPU)) -s 4
spin_wait stopped
r state_stopped_end "$(cat $SCX/state)"
kill -CONT $MOSAIC_PID
spin_wait canary
g_stop
