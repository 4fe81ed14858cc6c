# Cell "threads": 10,000 threads in one process, each waking every 0.5 s to bump its counter,
# all released at once, next to the canary hogs; every one of them must move. Sourced by run.sh.
g_start || return 1
canaries
spin_bg threads -t 10000 -s "$SECS" -z 500000 -k 32
spin_wait canary
spin_wait threads
g_stop
