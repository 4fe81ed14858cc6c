# Cell "sigkill": SIGKILL the scheduler's userspace process under load; the kernel must unload
# the BPF scheduler cleanly (state back to disabled, "unregistered from user space" in the log,
# nothing else) and every task keeps running: the canaries span the kill, and a probe started
# after it must progress too. Sourced by run.sh.
g_start || return 1
canaries
sleep 3
kill -KILL $MOSAIC_PID
t0=$(ms)
if wait_state disabled 30; then
    r disabled_ms $(($(ms) - t0))
else
    r disabled_ms never
fi
wait $MOSAIC_PID
r mosaic_rc $?
r state_after "$(cat $SCX/state)"
spin_bg after -t $((2 * NCPU)) -s 3
spin_wait after
spin_wait canary
