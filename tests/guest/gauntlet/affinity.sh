# Cell "affinity": stress-ng --aggressive with its affinity stressor (random CPU hopping),
# CPU hogs and context switches, while a loop keeps changing the CPU affinity of the canary
# threads with taskset (single CPUs included). Sourced by run.sh.
g_start || return 1
canaries
stressng --affinity "$NCPU" --affinity-rand --cpu "$NCPU" --switch 1 --aggressive
boost
wait_threads canary $((2 * NCPU))
tids=$(tids_of canary)
end=$(($(now) + SECS - 1)) n=0
while [ "$(now)" -lt $end ]; do
    for t in $tids; do
        # a random CPU range lo-hi (often a single CPU), no fork but taskset's
        lo=$((RANDOM % NCPU))
        hi=$((lo + RANDOM % (NCPU - lo)))
        taskset -c -p "$lo-$hi" "$t" >/dev/null 2>&1 && n=$((n + 1))
    done
done
r affinity_changes $n
stressng_wait
spin_wait canary
g_stop
