# Cell "fork": a fork storm (stress-ng fork and vfork, up to 16 children at a time each,
# --aggressive) next to the canary hogs. Sourced by run.sh.
g_start || return 1
canaries
stressng --fork "$NCPU" --fork-max 16 --vfork 1 --vfork-max 16 --aggressive
stressng_wait
spin_wait canary
g_stop
